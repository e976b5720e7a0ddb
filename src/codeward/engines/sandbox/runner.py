"""Start a prepared command and collect it: limits applied in the child, stdin fed, output
capped, a wall-clock deadline that kills the whole process group and cgroup.

Backends turn a :class:`~codeward.engines.sandbox.model.SandboxRequest` into a
:class:`Launch` (the host command plus what the child must do before exec); this module
owns the part every backend shares.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from codeward.engines.sandbox.cgroups import CgroupEvents, CgroupLayout, RunCgroup
from codeward.engines.sandbox.limits import LimitPlan, plan_limits

if TYPE_CHECKING:
    from codeward.engines.sandbox.model import SandboxRequest, SandboxResult
    from codeward.engines.sandbox.network import IsolatedNetwork

OUTPUT_KILL_FACTOR = 16
"""A run printing this many times ``max_output_bytes`` is killed: nobody reads that much."""
DRAIN_GRACE_S = 1.0
CHUNK = 65536


@dataclass
class Launch:
    """A host command ready to start, and the per-run resources to release afterwards."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    pass_fds: tuple[int, ...] = ()
    rlimits: tuple[tuple[int, int], ...] = ()
    cgroup: RunCgroup | None = None
    run_as: tuple[int, int] | None = None
    """(uid, gid) to switch to before exec (dropping root), or ``None`` to stay."""
    status_fd: int | None = None
    """Read end of bwrap's ``--json-status-fd`` pipe, when the backend asked for one."""
    parent_fds: list[int] = field(default_factory=list)
    """Descriptors the parent closes once the child has them."""
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    limits: LimitPlan = field(default_factory=LimitPlan)
    """What :func:`limit_launch` chose, reported with the result."""
    enter_namespaces: Callable[[], None] | None = None
    """Run in the child after its limits, before exec (the overlay mounts, a network namespace)."""
    network: IsolatedNetwork | None = None
    """The run's own network, attached once the child exists."""

    def release(self) -> None:
        self.close_parent_fds()
        if self.status_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.status_fd)
            self.status_fd = None
        if self.cgroup is not None:
            self.cgroup.remove()
        for cleanup in reversed(self.cleanups):
            with contextlib.suppress(OSError):
                cleanup()
        self.cleanups.clear()

    def close_parent_fds(self) -> None:
        """Close the parent's ends of the run's pipes (the rest waits for :meth:`release`)."""
        for fd in self.parent_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.parent_fds.clear()

    def release_soon(self) -> None:
        """:meth:`release` in a background thread: for runs whose processes are already ended
        (a pid namespace), so removing the cgroup and temp dirs does not delay the result."""
        self.close_parent_fds()
        threading.Thread(target=self.release, name="codeward-release", daemon=True).start()


class RunObserver(Protocol):
    """Watches a run while it goes (the monitor): told the process, then called every tick."""

    tick_s: float

    def started(self, proc: subprocess.Popen[bytes], cgroup: RunCgroup | None) -> None: ...

    def tick(self) -> None: ...


@runtime_checkable
class StartableSandbox(Protocol):
    """A backend that can start a run and finish it later (warm pool, sessions, monitoring)."""

    name: str
    isolated: bool

    def start(self, request: SandboxRequest) -> tuple[subprocess.Popen[bytes], Launch]: ...

    def finish(
        self, proc: subprocess.Popen[bytes], launch: Launch, request: SandboxRequest, stdin: bytes,
        started: float | None = None, observer: RunObserver | None = None, *, keep_launch: bool = False,
    ) -> SandboxResult:
        """Feed, collect and interpret a started run, then release ``launch`` — unless ``keep_launch``:
        the caller then calls ``launch.release()`` itself (later, off the caller's time)."""
        ...


@dataclass
class Collected:
    """Raw outcome of one process: bytes kept, what was cut, how it ended."""

    returncode: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    output_flooded: bool
    duration_s: float
    leftovers_killed: int = 0


def rlimits_for(
    cpu_seconds: int | None, file_size_mb: int | None, open_files: int | None, address_space_mb: int | None
) -> tuple[tuple[int, int], ...]:
    limits: list[tuple[int, int]] = [(resource.RLIMIT_CORE, 0)]
    if cpu_seconds is not None:
        limits.append((resource.RLIMIT_CPU, max(1, cpu_seconds)))
    if file_size_mb is not None:
        limits.append((resource.RLIMIT_FSIZE, file_size_mb * 1024 * 1024))
    if open_files is not None:
        limits.append((resource.RLIMIT_NOFILE, open_files))
    if address_space_mb is not None:
        limits.append((resource.RLIMIT_AS, address_space_mb * 1024 * 1024))
    return tuple(limits)


def limit_launch(
    launch: Launch, request: SandboxRequest, cgroups: CgroupLayout | None, *, own_user_namespace: bool = False,
) -> LimitPlan:
    """Give ``launch`` its own cgroup where cgroups exist, and the rlimits that are the floor
    under it (see :mod:`codeward.engines.sandbox.limits`). Decide ``run_as`` before calling."""
    if cgroups is not None:
        launch.cgroup = RunCgroup.create(cgroups, request.memory_mb, request.max_processes)
    host_uid = launch.run_as[0] if launch.run_as is not None else os.geteuid()
    launch.limits = plan_limits(request, launch.cgroup, own_user_namespace=own_user_namespace, host_uid=host_uid)
    launch.rlimits = launch.limits.rlimits
    return launch.limits


def _child_setup(
    procs_files: Sequence[str], rlimits: Sequence[tuple[int, int]], run_as: tuple[int, int] | None,
    enter_namespaces: Callable[[], None] | None = None,
) -> Callable[[], None]:
    """The function the child runs between fork and exec (only async-signal-safe-ish calls)."""

    def setup() -> None:
        RunCgroup.enter(list(procs_files))
        for which, value in rlimits:
            soft_hard = (value, value)
            if which == resource.RLIMIT_CPU:
                soft_hard = (value, value + 1)  # SIGXCPU first, SIGKILL a second later
            resource.setrlimit(which, soft_hard)
        if run_as is not None:
            os.setgroups([])
            os.setgid(run_as[1])
            os.setuid(run_as[0])
        if enter_namespaces is not None:
            enter_namespaces()

    return setup


CAP_SETGID = 6
CAP_SETUID = 7


def can_switch_user() -> bool:
    """Whether this process may become another user (root with ``CAP_SETUID`` and ``CAP_SETGID``;
    a root started without capabilities may not)."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            line = next((entry for entry in handle if entry.startswith("CapEff:")), "")
    except OSError:
        return True  # no /proc: assume a plain root
    try:
        effective = int(line.split()[1], 16)
    except (IndexError, ValueError):
        return True
    return bool(effective & (1 << CAP_SETUID)) and bool(effective & (1 << CAP_SETGID))


def world_reachable(path: str) -> bool:
    """Whether an unprivileged uid could open ``path``: every ancestor searchable by others."""
    current = Path(path)
    try:
        if not current.stat().st_mode & stat.S_IROTH:
            return False
        for parent in current.parents:
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
    except OSError:
        return False
    return True


def spawn(launch: Launch) -> subprocess.Popen[bytes]:
    """Start the command in a new session with its limits; raises ``OSError`` if it cannot
    (also when the child failed before exec: a limit or a namespace it could not set up)."""
    procs = launch.cgroup.procs_files if launch.cgroup is not None else []
    if launch.run_as is not None and launch.run_as != (os.geteuid(), os.getegid()) and not can_switch_user():
        launch.run_as = None  # a root without capabilities stays who it is (it has no privilege to drop)
    try:
        return subprocess.Popen(
            launch.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=launch.env,
            cwd=launch.cwd,
            pass_fds=launch.pass_fds,
            start_new_session=True,
            preexec_fn=_child_setup(procs, launch.rlimits, launch.run_as, launch.enter_namespaces),
        )
    except subprocess.SubprocessError as exc:  # the child's set-up raised before exec
        raise OSError(f"the run could not be set up: {exc}") from exc
    finally:
        for fd in launch.parent_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        launch.parent_fds.clear()


def spawn_or_release(launch: Launch) -> subprocess.Popen[bytes]:
    """:func:`spawn`, releasing the launch's resources if it cannot start."""
    try:
        return spawn(launch)
    except BaseException:
        launch.release()
        raise


def collect_observed(
    proc: subprocess.Popen[bytes], launch: Launch, request: SandboxRequest, stdin: bytes,
    started: float | None, observer: RunObserver | None, *, namespace_reaps: bool = False,
) -> tuple[Collected, CgroupEvents]:
    """:func:`collect` a started run within the request's limits while ``observer`` watches;
    with what its cgroup recorded (OOM kills, pids limit hits)."""
    tick = None
    if observer is not None:
        observer.started(proc, launch.cgroup)
        tick = observer.tick
    collected = collect(proc, stdin, request.timeout_s, request.max_output_bytes, launch.cgroup, started,
                        tick, observer.tick_s if observer is not None else 0.1, namespace_reaps=namespace_reaps)
    events = launch.cgroup.events() if launch.cgroup is not None else CgroupEvents()
    return collected, events


def kill_tree(proc: subprocess.Popen[bytes], cgroup: RunCgroup | None) -> int:
    """SIGKILL the process group and everything in the run's cgroup; returns processes seen."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return cgroup.kill() if cgroup is not None else 0


def collect(
    proc: subprocess.Popen[bytes],
    stdin: bytes,
    timeout_s: float,
    max_output_bytes: int,
    cgroup: RunCgroup | None,
    started: float | None = None,
    on_tick: Callable[[], None] | None = None,
    tick_s: float = 0.1,
    namespace_reaps: bool = False,
) -> Collected:
    """Feed stdin, read both streams (keeping ``max_output_bytes`` of each), enforce the deadline.

    When the main process ends, anything it left running in its group or cgroup is killed,
    so a background process cannot outlive its run or hold the pipes open. Backends whose
    pid namespace already ends every process with the main one pass ``namespace_reaps=True``:
    the kernel does that part (what is left in the cgroup is merely still exiting, and is
    swept when the run's resources are released).
    """
    started = time.monotonic() if started is None else started
    deadline = started + timeout_s
    kept = {"stdout": bytearray(), "stderr": bytearray()}
    truncated = {"stdout": False, "stderr": False}
    total = 0
    timed_out = flooded = False
    leftovers = 0
    selector = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
    selector.register(proc.stdout, selectors.EVENT_READ, "stdout")
    selector.register(proc.stderr, selectors.EVENT_READ, "stderr")
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)
        selector.register(proc.stdin, selectors.EVENT_WRITE, "stdin")
    else:
        proc.stdin.close()
    main_exited_at: float | None = None
    next_tick = time.monotonic()
    try:
        while selector.get_map():
            now = time.monotonic()
            if on_tick is not None and now >= next_tick:
                on_tick()
                next_tick = now + tick_s
            if now >= deadline and not timed_out and main_exited_at is None:
                timed_out = True
                kill_tree(proc, cgroup)
                main_exited_at = now
            if main_exited_at is not None and now - main_exited_at > DRAIN_GRACE_S:
                break
            if main_exited_at is None and proc.poll() is not None:
                main_exited_at = now
                if not namespace_reaps:
                    leftovers = _reap_leftovers(proc, cgroup)
            wait = min(0.05, max(0.0, deadline - now)) if main_exited_at is None else 0.05
            if on_tick is not None:
                wait = min(wait, max(0.0, next_tick - now))
            for key, _events in selector.select(wait):
                name = key.data
                if name == "stdin":
                    try:
                        written = os.write(key.fd, pending[:CHUNK])
                        pending = pending[written:]
                    except (BrokenPipeError, OSError):
                        pending = memoryview(b"")
                    if not pending:
                        selector.unregister(key.fileobj)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                total += len(chunk)
                room = max_output_bytes - len(kept[name])
                if room > 0:
                    kept[name] += chunk[:room]
                if len(chunk) > room:
                    truncated[name] = True
                if total > max_output_bytes * OUTPUT_KILL_FACTOR and not flooded:
                    flooded = True
                    kill_tree(proc, cgroup)
                    main_exited_at = time.monotonic()
    finally:
        selector.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
    try:
        returncode = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_tree(proc, cgroup)
        returncode = proc.wait()
    if not timed_out and not flooded and not namespace_reaps:
        leftovers += _reap_leftovers(proc, cgroup)
    return Collected(
        returncode=returncode,
        stdout=bytes(kept["stdout"]),
        stderr=bytes(kept["stderr"]),
        stdout_truncated=truncated["stdout"],
        stderr_truncated=truncated["stderr"],
        timed_out=timed_out,
        output_flooded=flooded,
        duration_s=time.monotonic() - started,
        leftovers_killed=leftovers,
    )


def terminate(proc: subprocess.Popen[bytes], launch: Launch) -> None:
    """End a run started with ``start`` that nobody collects (a session, a pool entry, a language server):
    its whole tree killed, waited for, its pipes closed, its resources released."""
    kill_tree(proc, launch.cgroup)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    launch.release()


def _reap_leftovers(proc: subprocess.Popen[bytes], cgroup: RunCgroup | None) -> int:
    """Kill what the finished main process left behind in its group or cgroup."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return cgroup.kill() if cgroup is not None else 0


def minimal_env(extra: Mapping[str, str], home: str, path: str) -> dict[str, str]:
    """The environment a sandboxed program sees: nothing of the host's but what is listed."""
    env = {"PATH": path, "HOME": home, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env.update(extra)
    return env
