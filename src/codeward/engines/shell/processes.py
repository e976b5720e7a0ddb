"""Long-running processes in the project's sandbox: a dev server, a REPL, a watcher.

``process_start`` opens the same box as ``run_shell``
(:class:`~codeward.engines.contained.project_sandbox.ProjectSandbox` with write access: the overlaid
roots, secrets hidden, the ``[shell]`` memory and process limits,
the disk cap) and leaves the program running. Its stdout and stderr go, interleaved as they come,
into one buffer of ``[shell] process_output_kb``: a reader asks for what came after an offset, so
nothing is read twice and a chatty server costs no more than the buffer (the oldest output is
dropped, and a read says how much). Its stdin is a pipe the caller writes to.

What it writes stays in its private layer until ``process_apply`` (it keeps running) or
``process_stop`` (it is killed, its whole tree) brings the writes back through the gate, as a
script's — recorded in that call's checkpoint, host-run paths asked of a person. Each version of a
file is applied once: a file applied, then edited on the host, is not overwritten by the stop with
the same old write.

A process's state is ``running``, ``waiting_for_input`` (blocked reading its stdin, everything
written to it read: :mod:`codeward.engines.sandbox.stdin_wait`) or ``exited``; when a limit ended it
(its memory, its disk cap, its lifetime, idling) ``ended_by`` says which. A process that ends on
its own, hits its lifetime (``[shell] process_lifetime_s``) or idles past ``process_idle_s`` (no
read, write or output) is killed but keeps its layer and its output until it is stopped; the server's end drops them.

Processes belong to the client that started them (``ctx.call.client``, as Python sessions do):
another client cannot see, read, write to or stop them. Each client may have
``[shell] max_processes_running`` at once.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codeward.config.network import NetworkSettings
from codeward.config.shell import ShellSettings
from codeward.engines.sandbox.outcome import normalize_exit
from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:
    from codeward.engines.contained.project_sandbox import Running
    from codeward.engines.sandbox.egress_proxy import EgressGrant
    from codeward.engines.sandbox.shared_net import SharedNetwork
    from codeward.kernel.context import Services, ToolContext

PROCESS_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
REAPER_INTERVAL_S = 1.0
MAX_READ_WAIT_S = 30.0


@dataclass(frozen=True)
class ProcessLimits:
    """The bounds of a server's process table (``[shell]`` keys)."""

    per_client: int = 4
    output_bytes: int = 256 * 1024
    lifetime_s: float = 3600.0
    idle_s: float = 900.0


@dataclass
class OutputBuffer:
    """The last ``limit`` bytes a process printed, addressed by offsets counted from its start."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    start: int = 0
    """Offset of ``data[0]`` (bytes before it were dropped)."""
    changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    def append(self, chunk: bytes) -> None:
        with self.changed:
            self.data += chunk
            extra = len(self.data) - self.limit
            if extra > 0:
                del self.data[:extra]
                self.start += extra
            self.changed.notify_all()

    def since(self, offset: int, max_bytes: int) -> tuple[bytes, int, int]:
        """(bytes from ``offset``, at most ``max_bytes``; the offset after them; bytes dropped before them)."""
        with self.changed:
            begin = max(offset, self.start)
            dropped = begin - offset if offset < self.start else 0
            piece = bytes(self.data[begin - self.start:begin - self.start + max_bytes])
            return piece, begin + len(piece), dropped


@dataclass
class BoxProcess:
    """One program running in a sandbox, with its output buffer."""

    name: str
    command: str
    started: Running
    output: OutputBuffer
    began: float = field(default_factory=time.monotonic)
    touched: float = field(default_factory=time.monotonic)
    ended_by: str = ""
    """Why codeward killed it (its lifetime, idling, its disk), empty when it did not."""
    egress: EgressGrant | None = None
    """Its admission to the egress proxy (``[network]``): the decisions on its own connections."""

    def network_notes(self) -> list[str]:
        """The egress proxy's refusals (and a count of what it allowed) of its connections since the last call."""
        return self.egress.notes() if self.egress is not None else []
    readers: list[threading.Thread] = field(default_factory=list)

    @property
    def exit_code(self) -> int | None:
        """Its exit status once it exited; a death by signal N (bwrap's 128+N) as -N."""
        code = self.started.proc.poll()
        return None if code is None else normalize_exit(code, shell_style=True)

    @property
    def state(self) -> str:
        """``exited``; ``waiting_for_input`` (blocked reading its stdin: process_write it); ``running``."""
        if self.exit_code is not None:
            return "exited"
        return "waiting_for_input" if self.started.waits_for_input() else "running"

    def settle(self) -> None:
        """Once it exited, say why when a limit ended it (read while its cgroup is still there)."""
        if self.exit_code is not None and not self.ended_by:
            tail, _, _ = self.output.since(max(0, self.output.end - 4000), 4000)
            self.ended_by = self.started.limit_reason(tail.decode("utf-8", "replace"))

    def quiet_s(self) -> float:
        return time.monotonic() - self.touched


class ProcessTable:
    """A server's long-running processes, keyed by (client, name); a reaper thread enforces the limits."""

    def __init__(self, limits: ProcessLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._processes: dict[tuple[str, str], BoxProcess] = {}
        self._starting: set[tuple[str, str]] = set()
        """Names taken while their process starts (two calls cannot start the same name)."""
        self._closed = threading.Event()
        self._reaper: threading.Thread | None = None
        self._networks: dict[str, SharedNetwork] = {}
        """Each client's loopback-only namespace, made with its first process, kept until the server ends (and,
        apart, the one its code runs share when code execution has domains allowed)."""

    # -- the operations the tools call -------------------------------------------------

    def start(self, ctx: ToolContext, name: str, command: str,
              started_by: Callable[[], Result[Running | None]]) -> Result[BoxProcess | None]:
        owner = _owner(ctx)
        if owner is None:
            return _no_client()
        if not PROCESS_NAME.match(name):
            return Result.fail(ErrorKind.INVALID_INPUT, f"invalid process name {name!r}",
                               "Use 1-40 letters, digits, '.', '_' or '-', e.g. \"dev-server\".", data=None)
        with self._lock:
            if (owner, name) in self._processes or (owner, name) in self._starting:
                return Result.fail(ErrorKind.CONFLICT, f"a process named {name!r} already exists",
                                   "Stop it first (process_stop) or choose another name.", data=None)
            mine = sum(1 for key in [*self._processes, *self._starting] if key[0] == owner)
            if mine >= self.limits.per_client:
                return Result.fail(ErrorKind.TOO_LARGE, f"{mine} processes are already running for this client, "
                                   "the most allowed", "Stop one with process_stop ([shell] max_processes_running in "
                                   "codeward.toml sets the limit).", data=None)
            self._starting.add((owner, name))
        try:
            made = started_by()
        finally:
            with self._lock:
                self._starting.discard((owner, name))
        if not made.ok or made.data is None:
            return made.cast(None)
        process = BoxProcess(name, command, made.data, OutputBuffer(self.limits.output_bytes))
        for stream in (made.data.proc.stdout, made.data.proc.stderr):
            reader = threading.Thread(target=_pump, args=(stream, process), daemon=True,
                                      name=f"codeward-process-{name}")
            reader.start()
            process.readers.append(reader)
        with self._lock:
            self._processes[(owner, name)] = process
        self._start_reaper()
        return Result(data=process, notes=list(made.notes))

    def find(self, ctx: ToolContext, name: str) -> Result[BoxProcess | None]:
        owner = _owner(ctx)
        if owner is None:
            return _no_client()
        with self._lock:
            found = self._processes.get((owner, name))
        if found is None:
            return Result.fail(ErrorKind.NOT_FOUND, f"no process named {name!r} (for this client)",
                               "process_list shows the running ones; process_start starts one.", data=None)
        found.touched = time.monotonic()
        return Result.success(found)

    def listed(self, ctx: ToolContext) -> list[BoxProcess]:
        owner = _owner(ctx)
        with self._lock:
            return [process for key, process in sorted(self._processes.items()) if key[0] == owner]

    def stop(self, ctx: ToolContext, process: BoxProcess) -> list[str]:
        """Kill it, apply its writes as part of this call, forget it."""
        process.settle()
        notes = process.started.stop(ctx)
        if process.egress is not None:
            process.egress.close()
        key = (_owner(ctx) or "", process.name)
        with self._lock:
            if self._processes.get(key) is process:
                del self._processes[key]
        for reader in process.readers:
            reader.join(timeout=2)
        return notes

    def close(self) -> None:
        """The server is ending: kill every process and drop what they wrote."""
        self._closed.set()
        with self._lock:
            processes, self._processes = list(self._processes.values()), {}
        for process in processes:
            process.started.stop(None)
        with self._lock:
            networks, self._networks = list(self._networks.values()), {}
        for network in networks:
            network.close()

    def network(self, ctx: ToolContext, make: bool, code: bool = False) -> Result[SharedNetwork | None]:
        """The client's shared loopback network (made when ``make`` and there is none yet); with ``code``, the
        client's namespace for code execution instead: apart from the other one (code does not reach the
        client's dev servers), for the unprivileged user codeward runs code as when it is root."""
        owner = _owner(ctx)
        key = f"{owner}\0code" if code and owner is not None else owner
        with self._lock:
            found = self._networks.get(key) if key is not None else None
            if found is not None or not make or owner is None or key is None:
                return Result.success(found)
            from codeward.engines.contained.project_sandbox import project_owner
            from codeward.engines.sandbox.bwrap import NOBODY
            from codeward.engines.sandbox.runner import can_switch_user
            from codeward.engines.sandbox.shared_net import SharedNetwork

            try:
                made = SharedNetwork.create((NOBODY if can_switch_user() else None) if code else
                                            project_owner(ctx.workspace.primary))
                if ctx.services.get(NetworkSettings).active:  # some executor has domains allowed
                    _serve_egress(ctx, made, owner)
                self._networks[key] = made
            except OSError as exc:
                return Result.fail(ErrorKind.UNAVAILABLE, f"could not make the processes' shared network: {exc}",
                                   "`codeward doctor` checks the sandbox (user and network namespaces).", data=None)
            return Result.success(made)

    # -- the limits -----------------------------------------------------------------------

    def _start_reaper(self) -> None:
        with self._lock:
            if self._reaper is not None and self._reaper.is_alive():
                return
            self._reaper = threading.Thread(target=self._reap, daemon=True, name="codeward-process-reaper")
            self._reaper.start()

    def _reap(self) -> None:
        while not self._closed.wait(REAPER_INTERVAL_S):
            with self._lock:
                processes = list(self._processes.values())
            if not processes:
                return
            now = time.monotonic()
            for process in processes:
                if process.exit_code is not None:
                    process.settle()
                    continue
                why = (f"it ran for its lifetime of {self.limits.lifetime_s:g} s ([shell] process_lifetime_s)"
                       if now - process.began > self.limits.lifetime_s else
                       f"nothing read, wrote or printed for {self.limits.idle_s:g} s ([shell] process_idle_s)"
                       if now - process.touched > self.limits.idle_s else
                       process.started.disk_cap_reason() if process.started.disk_full() else "")
                if why:
                    process.ended_by = why
                    process.started.kill()


def _no_client() -> Result[BoxProcess | None]:
    return Result.fail(ErrorKind.UNAVAILABLE, "this connection names no client (a stateless HTTP request), so a "
                       "process started now could not be told apart from another client's",
                       "Use a stdio connection or a handshake-era HTTP session for long-running processes.",
                       data=None)


def _pump(stream: object, process: BoxProcess) -> None:
    """Copy one of the process's streams into its buffer until it closes."""
    fd = stream.fileno()  # type: ignore[attr-defined]
    with contextlib.suppress(OSError, ValueError):
        while chunk := os.read(fd, 65536):
            process.output.append(chunk)
            process.touched = time.monotonic()
    with contextlib.suppress(OSError):
        stream.close()  # type: ignore[attr-defined]


def _serve_egress(ctx: ToolContext, network: SharedNetwork, owner: str) -> None:
    """Give the namespace its way out: the egress proxy on ``127.0.0.1:3128`` inside (``[network]``)."""
    from codeward.engines.sandbox.egress_proxy import PROXY_PORT, EgressEvent, egress_proxy_of
    from codeward.engines.shell.log import append_network_event

    workspace = ctx.workspace

    def audit(event: EgressEvent) -> None:
        append_network_event(workspace, owner, event)

    try:
        network.egress = egress_proxy_of(ctx.services).serve(network.listen(PROXY_PORT), owner, audit)
    except BaseException:
        network.close()
        raise


def _owner(ctx: ToolContext) -> str | None:
    return ctx.call.client


def process_table_of(services: Services) -> ProcessTable:
    """The server's process table, made on first use with the ``[shell]`` limits."""

    settings = services.get(ShellSettings)
    limits = ProcessLimits(settings.max_processes_running, settings.process_output_kb * 1024,
                           settings.process_lifetime_s, settings.process_idle_s)
    return services.runtimes.get(ProcessTable, lambda: ProcessTable(limits))
