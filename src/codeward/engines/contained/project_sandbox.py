"""The one way codeward starts a program on project content: contained, through here.

``run_shell``, ``run_tests``, registry tools, every review analyzer (ruff, mypy, bandit,
vulture, radon, lizard, shellcheck, cppcheck, Biome, and any added later) and the language
servers open a :class:`ProjectSandbox` and run their programs in it::

    box = ProjectSandbox.open(ctx, Executor.REVIEW, ProjectAccess.READ)   # Result: refusal or box
    outcome = box.data.run(Program(argv=[ruff, "check", ...], timeout_s=120))
    outcome.result          # the SandboxResult: status, output, backend, isolated, limit_hit
    outcome.notes           # what was hidden, what was not applied and why

What holds in the box, whichever executor opened it:

- the backend is the server's :class:`~codeward.engines.sandbox.choice.BackendChoice`: bubblewrap,
  or a refusal naming what to install; plain processes only when the operator set
  ``[sandbox] backend = "process"`` — and then every result says the run was not isolated;
- the roots are visible at their own paths, read-only (:attr:`ProjectAccess.READ`) or through
  overlays (:attr:`ProjectAccess.WRITE`) whose writes come back through the workspace's write
  checks afterwards (:mod:`codeward.engines.contained.write_back`), recorded in the call's checkpoint;
- the secrets the file tools refuse (``Workspace.secret_paths``: ``.env``, keys, credentials;
  codeward's own data folder always) are covered by empty stand-ins; a program's configuration
  is read in here, where ``/etc``, home folders and those secrets are absent;
- no network unless the caller passes the operator's permission; memory, processes, time,
  output and disk limits — the overlay's upper layer and ``/tmp`` share one size-limited tmpfs
  (``[sandbox] disk_mb``): a run that fills it is stopped and nothing it wrote is applied;
- a cancelled call kills the run and everything it started.

A language server outlives the call that starts it: :meth:`ProjectSandbox.start` starts it in a
read-only box with the same backend, binds, secrets and limits, and hands back its pipes
(:class:`Started`); its owner ends it.

Code execution sees no project (only the code it is given) and takes its backend from the same
choice (:meth:`BackendChoice.for_code`), with the same refusal.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from codeward.config.coding import CodingSettings
from codeward.config.sandbox import SandboxSettings
from codeward.engines.contained.confine import confine, hide_secret_history, under_a_root
from codeward.engines.contained.warm_box import BOX_RUN_EVENT, BoxShape, Prepared, WarmBoxes, waiter_argv
from codeward.engines.contained.write_back import Marks, bring_back
from codeward.engines.git.history import KnownVerdicts
from codeward.engines.sandbox import Sandbox, SandboxRequest, SandboxResult, Status
from codeward.engines.sandbox.choice import BackendChoice, Executor, SandboxRefused
from codeward.engines.sandbox.installation import installation_of
from codeward.engines.sandbox.model import DEFAULT_PATH, Limit
from codeward.engines.sandbox.outcome import NO_SPACE_MARKERS, OUT_OF_MEMORY_MARKERS
from codeward.engines.sandbox.overlay import Overlays, overlay_failure
from codeward.engines.sandbox.runner import Launch, StartableSandbox, kill_tree, terminate
from codeward.engines.sandbox.stdin_wait import tree_of, waits_for_input
from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:
    from codeward.engines.contained.confine import Confinement
    from codeward.engines.contained.secret_index import SecretIndex
    from codeward.engines.sandbox.cgroups import RunCgroup
    from codeward.engines.sandbox.model import BindSpec
    from codeward.engines.sandbox.runner import Launch
    from codeward.engines.sandbox.shared_net import SharedNetwork
    from codeward.kernel.context import Services, ToolContext
    from codeward.kernel.workspace import Workspace

NOT_ISOLATED = "the workspace's secrets were not hidden from it (the process backend cannot hide files)"
NOT_CHECKED = "its writes went straight to the project, without codeward's write checks"
DISK_UNENFORCED = "disk {mb} MiB for what the run writes: {why}"
PROGRESS_EVERY_S = 1


class ProjectAccess(StrEnum):
    """How a run sees the workspace's roots."""

    READ = "read"
    """Read-only (analyzers)."""
    WRITE = "write"
    """Through overlays; the writes come back through the write checks (shell, tests, registry tools)."""


@dataclass(frozen=True)
class Program:
    """One program to run in a box, and its limits."""

    argv: Sequence[str]
    timeout_s: float
    memory_mb: int | None = 512
    max_processes: int | None = 64
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to the sandbox's minimal environment (PATH, HOME=/tmp, LANG); nothing else is inherited."""
    stdin: bytes = b""
    workdir: str | None = None
    """Where it starts (a path inside); ``None``: the primary root."""
    ro_binds: Sequence[BindSpec] = ()
    """More host paths to show read-only (a tool's staged files, an analyzer's interpreter)."""
    network: bool = False
    network_hosts: Mapping[str, tuple[str, ...]] | None = None
    shared_network: SharedNetwork | None = None
    """A loopback-only namespace shared by one client's runs (see :mod:`codeward.engines.sandbox.shared_net`)."""
    file_size_mb: int | None = 64
    open_files: int | None = 256
    cpu_seconds: int | None = None
    """CPU time over the program's life (default: the backend's, from ``timeout_s``)."""
    scratch_mb: int = 256
    """The private ``/tmp`` (at most half of ``[sandbox] disk_mb``)."""
    max_output_bytes: int = 1_000_000
    report_progress: bool = True
    """Tell the client once a second how long it has been running."""
    warm: bool = False
    """Run in a box prepared ahead when one of this shape waits, and prepare the next one after the
    run (``run_shell``: :mod:`codeward.engines.contained.warm_box`)."""


@dataclass
class Contained:
    """How a run ended, what came back to the workspace (notes), and whether it was cancelled."""

    result: SandboxResult
    notes: list[str] = field(default_factory=list)
    cancelled: bool = False


@dataclass
class Started:
    """A program started in a box to outlive the call (a language server): its pipes, and its end."""

    proc: subprocess.Popen[bytes]
    launch: Launch
    backend: str
    isolated: bool

    def stop(self) -> None:
        """Kill its whole process tree and release its sandbox."""
        terminate(self.proc, self.launch)


def backends_of(services: Services) -> BackendChoice:
    """The server's backend choice, made on first use from ``[sandbox]`` (and ``[coding] backend``)."""

    def make() -> BackendChoice:
        sandbox = services.get(SandboxSettings)
        return BackendChoice(sandbox.backend, services.get(CodingSettings).backend, sandbox.disk_mb)

    return services.runtimes.get(BackendChoice, make)


def warm_boxes_of(services: Services) -> WarmBoxes:
    """The server's box prepared ahead for the next ``run_shell`` (made on first use)."""
    return services.runtimes.get(WarmBoxes, WarmBoxes)


@functools.cache
def _waiter_bash() -> str | None:
    """The bash a prepared box waits in (under ``/usr``, which every box shows), ``None`` without one."""
    found = shutil.which("bash", path=DEFAULT_PATH)
    real = os.path.realpath(found) if found else None
    return real if real is not None and real.startswith("/usr/") else None


def _startable(sandbox: Sandbox) -> StartableSandbox | None:
    """The backend as one that starts runs and finishes them separately (prepared boxes), or ``None``.
    Asked of its class once: a runtime protocol check costs about 30 us, and this is asked several times
    per shell run."""
    return cast("StartableSandbox", sandbox) if _starts_and_finishes(type(sandbox)) else None


@functools.cache
def _starts_and_finishes(kind: type[Sandbox]) -> bool:
    return all(callable(getattr(kind, name, None)) for name in ("start", "finish"))


def secret_index_of(services: Services, workspace: Workspace) -> SecretIndex:
    """The server's secret list of ``workspace``, kept current by file events (made on first use)."""
    from codeward.engines.contained.secret_index import SecretIndexes

    return services.runtimes.get(SecretIndexes, SecretIndexes).of(workspace)


class ProjectSandbox:
    """A contained view of one call's workspace (see the module docstring). Open it once and run
    several programs in it: the secret scan and the backend choice are done once."""

    def __init__(self, ctx: ToolContext, executor: Executor, access: ProjectAccess, sandbox: Sandbox,
                 plan: Confinement, settings: SandboxSettings) -> None:
        self.ctx = ctx
        self.executor = executor
        self.access = access
        self.sandbox = sandbox
        self.plan = plan
        self.settings = settings
        self.notes: list[str] = list(plan.notes)
        if not sandbox.isolated:
            self.notes.append(NOT_ISOLATED + ("; " + NOT_CHECKED if access is ProjectAccess.WRITE else ""))

    @classmethod
    def open(cls, ctx: ToolContext, executor: Executor, access: ProjectAccess, *, hide_secrets: bool = True,
             hide_history: bool = False) -> Result[ProjectSandbox | None]:
        """The box for ``executor``, or the refusal that says what to install (nothing runs then).

        ``hide_history``: also hide the object store of a repository whose history holds a secret
        (for programs that can run git: a shell, tests, tools)."""
        try:
            sandbox = backends_of(ctx.services).for_project(executor)
        except SandboxRefused as refused:
            return Result.fail(ErrorKind.UNAVAILABLE, str(refused), refused.hint, data=None)
        primary = ctx.workspace.primary
        if not under_a_root(ctx.workspace, primary):
            return Result.fail(ErrorKind.PERMISSION, f"the working directory {primary} is not inside a workspace "
                               "root (this session allows only tracked files), so the sandbox cannot show it",
                               "Serve the project directory as a root to run programs in it.", data=None)
        plan = confine(ctx.workspace, hide_secrets and sandbox.isolated, secret_index_of(ctx.services, ctx.workspace))
        if hide_secrets and hide_history and sandbox.isolated:
            hide_secret_history(ctx.workspace, plan, ctx.services.runtimes.get(KnownVerdicts, KnownVerdicts))
        return Result.success(cls(ctx, executor, access, sandbox, plan, ctx.services.get(SandboxSettings)))

    @property
    def isolated(self) -> bool:
        return self.sandbox.isolated

    def run(self, program: Program, cancelled: threading.Event | None = None) -> Result[Contained | None]:
        """Run ``program``; with write access, bring its writes back through the gate. ``cancelled``
        (default: the call's) ends the run when set. A setup problem (the overlay or the disk
        cannot be made) is an error naming the fix."""
        if self.access is ProjectAccess.WRITE and self.sandbox.isolated:
            return self._run_overlaid(program, cancelled)
        run_as = project_owner(self.ctx.workspace.primary) if self.access is ProjectAccess.WRITE else None
        request = self._request(program, overlays=None, run_as=run_as)
        watch = RunWatch(self.ctx, program, cancelled)
        result = run_in(self.sandbox, request, watch)
        self._note_unenforced_disk(result, None)
        return Result.success(Contained(result, list(self.notes), watch.cancelled))

    def start(self, program: Program) -> Started:
        """Start ``program`` to be driven over its stdin and stdout after the call returns (a
        language server): a read-only box only, as :meth:`run` would show it, with no wall-clock
        limit (``program.cpu_seconds`` bounds it). Call it from a thread that lives as long as the
        program: the sandbox dies with the thread that started it. Raises :class:`SandboxRefused`
        when the backend cannot keep a program running, ``OSError`` when it cannot start it."""
        if self.access is not ProjectAccess.READ:
            raise ValueError("only a read-only box starts programs that outlive the call")
        start: Callable[[SandboxRequest], tuple[subprocess.Popen[bytes], Launch]] | None = \
            getattr(self.sandbox, "start", None)
        if start is None:
            raise SandboxRefused(f"the {self.sandbox.name} backend cannot keep a program running",
                                 "Install bubblewrap (`apt-get install bubblewrap`); `codeward doctor` shows why "
                                 "it is not used.")
        proc, launch = start(self._request(program, overlays=None))
        return Started(proc, launch, self.sandbox.name, self.sandbox.isolated)

    def start_writing(self, program: Program) -> Result[Running | None]:
        """Start ``program`` and return at once (a dev server, a REPL, a watcher): the same box as
        :meth:`run` — overlays with the disk cap, secrets hidden, limits — whose writes come back
        through the gate when `Running.stop` ends it. Only where the box isolates (bubblewrap)."""
        start = getattr(self.sandbox, "start", None)
        if self.access is not ProjectAccess.WRITE or not self.sandbox.isolated or start is None:
            return Result.fail(ErrorKind.UNAVAILABLE, f"long-running processes need an isolating sandbox; this server "
                               f"runs programs with the {self.sandbox.name} backend",
                               "Use run_shell, or run codeward where bubblewrap works (`codeward doctor`).", data=None)
        choice = backends_of(self.ctx.services)
        owner = project_owner(self.ctx.workspace.primary)
        made = self._overlays(choice, owner)
        if not made.ok or made.data is None:
            return made.cast(None)
        overlays = made.data
        request = self._request(program, overlays, run_as=owner)
        try:
            proc, launch = start(request)
        except OSError as exc:
            overlays.close()
            return Result.fail(ErrorKind.UNAVAILABLE, f"could not start the process in the sandbox: {exc}",
                               "`codeward doctor` checks the sandbox.", data=None)
        notes = list(self.notes)
        self._note_unenforced_disk_text(notes, choice.disk_cap_problem)
        return Result.success(Running(self, program, proc, launch, overlays, notes))

    # -- the parts -----------------------------------------------------------------------

    def _note_unenforced_disk_text(self, notes: list[str], problem: str | None) -> None:
        if problem is not None:
            why = f"no size-limited tmpfs here ({problem})"
            notes.append(DISK_UNENFORCED.format(mb=self.settings.disk_mb, why=why))

    def _overlays(self, choice: BackendChoice, owner: tuple[int, int] | None) -> Result[Overlays | None]:
        """A run's layers, on its disk unless this machine cannot mount one (an error naming the fix)."""
        disk_mb = self.settings.disk_mb if choice.disk_cap_problem is None else None
        try:
            return Result.success(Overlays.create(self.plan.directories, self.plan.files, owner, disk_mb=disk_mb))
        except OSError as exc:
            return Result.fail(ErrorKind.UNAVAILABLE, f"could not prepare the workspace overlay: {exc.strerror or exc}",
                               "Check that the temporary directory is writable and has space.", data=None)

    def _run_overlaid(self, program: Program, cancelled: threading.Event | None) -> Result[Contained | None]:
        if not program.warm:
            return self._run_fresh(program, cancelled)
        shape = self._shape(program)
        disk_cap_problem = backends_of(self.ctx.services).disk_cap_problem
        try:
            warm = self._run_warm(program, shape, cancelled) if shape is not None else None
            return Result.success(warm) if warm is not None else self._run_fresh(program, cancelled)
        finally:  # the next box, once the call's answer is out (not competing with its end for the machine)
            after = shape if backends_of(self.ctx.services).disk_cap_problem == disk_cap_problem else \
                self._shape(program)  # a fresh run found the disk cap cannot be mounted: boxes go without it
            if after is not None:
                boxes = warm_boxes_of(self.ctx.services)
                self.ctx.call.later(lambda: boxes.prepare(after, lambda: self._prepare(program, after)))

    def _run_fresh(self, program: Program, cancelled: threading.Event | None) -> Result[Contained | None]:
        """Run ``program`` in a box built for it now."""
        choice = backends_of(self.ctx.services)
        owner = project_owner(self.ctx.workspace.primary)
        made = self._overlays(choice, owner)
        if not made.ok or made.data is None:
            return made.cast(None)
        overlays = made.data
        try:
            request = self._request(program, overlays, run_as=owner)
            watch = RunWatch(self.ctx, program, cancelled, overlays)
            result = run_in(self.sandbox, request, watch)
            if overlays.disk is not None and _disk_setup_failed(result):
                choice.disk_cap_problem = overlay_failure(result.stderr) or "the tmpfs could not be mounted"
                overlays.close()
                return self._run_fresh(program, cancelled)  # once more, its layers on the host's disk
            contained = self._settle(result, overlays, watch)
        finally:
            overlays.close()
        return Result.success(contained)

    def _settle(self, result: SandboxResult, overlays: Overlays, watch: RunWatch) -> Contained:
        """A finished overlaid run: stopped at its disk cap (nothing applied), or its writes brought back."""
        notes = list(self.notes)
        self._note_unenforced_disk(result, backends_of(self.ctx.services).disk_cap_problem)
        if _filled(result, overlays, watch):
            _stopped_at_disk_cap(result, self.settings.disk_mb)
            notes.append(f"nothing this run wrote was applied to the workspace: it filled its "
                         f"{self.settings.disk_mb} MiB disk cap")
        elif result.status is not Status.SETUP_ERROR:
            notes += self._bring_back(overlays)
        return Contained(result, notes, watch.cancelled)

    # -- boxes prepared ahead (run_shell) -------------------------------------------------

    def _shape(self, program: Program) -> BoxShape | None:
        """What a box prepared for ``program`` is made of, ``None`` when it cannot be prepared ahead:
        a backend that cannot start and finish separately, private copies of single files (taken
        when the box is made), a command line a pipe cannot carry, no bash to wait in."""
        if (_startable(self.sandbox) is None or self.plan.files or _waiter_bash() is None
                or any("\0" in arg for arg in program.argv)):
            return None
        choice = backends_of(self.ctx.services)
        return BoxShape(program=replace(program, argv=()), directories=tuple(map(str, self.plan.directories)),
                        hidden=tuple(self.plan.hidden), owner=project_owner(self.ctx.workspace.primary),
                        disk_mb=self.settings.disk_mb if choice.disk_cap_problem is None else None,
                        backend=id(self.sandbox))

    def _prepare(self, program: Program, shape: BoxShape) -> Prepared:
        """Start the box ``program`` would run in, a waiter in place of its command (raises ``OSError``)."""
        sandbox = _startable(self.sandbox)
        bash = _waiter_bash()
        if bash is None or sandbox is None:
            raise OSError("no bash to wait in")
        overlays = Overlays.create(self.plan.directories, (), shape.owner, disk_mb=shape.disk_mb)
        read, feed = os.pipe()
        try:
            waiter = replace(program, argv=waiter_argv(bash, read))
            request = replace(self._request(waiter, overlays, run_as=shape.owner), inherit_fds=(read,))
            proc, launch = sandbox.start(request)
        except BaseException:
            os.close(feed)
            overlays.close()
            raise
        finally:
            os.close(read)
        return Prepared(shape, proc, launch, overlays, feed)

    def _run_warm(self, program: Program, shape: BoxShape, cancelled: threading.Event | None) -> Contained | None:
        """Run ``program`` in the box prepared for its shape; ``None`` (nothing ran) when there is none."""
        boxes = warm_boxes_of(self.ctx.services)
        sandbox = _startable(self.sandbox)
        prepared = boxes.take(shape) if sandbox is not None else None
        if prepared is None or sandbox is None:
            return None
        overlays = prepared.overlays
        request = self._request(program, overlays, run_as=shape.owner)
        # The box was spawned ahead with a waiter; the program starts now, in it. Said as an audit event
        # (PEP 578) as a subprocess start would be, so the logs that watch spawns see the program run.
        sys.audit(BOX_RUN_EVENT, list(program.argv), request.workdir)
        if not prepared.send(program.argv):
            boxes.dispose(prepared.discard)
            return None
        watch = RunWatch(self.ctx, program, cancelled, overlays)
        try:
            result = sandbox.finish(prepared.proc, prepared.launch, request, request.stdin_bytes(), None, watch,
                                         keep_launch=True)
            contained = self._settle(result, overlays, watch)
        finally:  # the run's cgroup and layers go on the pool's thread once the answer is out
            self.ctx.call.later(lambda: boxes.dispose(lambda: _release_all(prepared.launch, overlays)))
        return contained

    def _bring_back(self, overlays: Overlays, ctx: ToolContext | None = None, marks: Marks | None = None
                    ) -> list[str]:
        """The run's writes applied through the gate under the write lock every codeward process on
        the root shares (the paths are known as it walks); what the host runs later asked of a person.
        ``ctx``: the call that applies them (recorded in its checkpoint), by default the one that opened the box.
        ``marks``: a running program's earlier applies (see
        :func:`~codeward.engines.contained.write_back.apply_overlays`)."""
        ctx = ctx or self.ctx
        return bring_back(ctx.workspace, overlays, journal=ctx.call.journal, ask=ctx.call.ask_person, marks=marks,
                          hold=lambda: ctx.call.hold_writes([], any_name=True, workspace=ctx.workspace)).notes()

    def _request(self, program: Program, overlays: Overlays | None, run_as: tuple[int, int] | None = None
                 ) -> SandboxRequest:
        roots: list[BindSpec] = [str(path) for path in (*self.plan.directories, *self.plan.files)]
        shown_roots = [] if overlays is not None else roots  # with overlays, they are the merged views
        writable = self.access is ProjectAccess.WRITE
        ro_binds = [*([] if writable else shown_roots), *program.ro_binds]
        rw_binds = shown_roots if writable else []
        return SandboxRequest(
            argv=list(program.argv), stdin=program.stdin, env=dict(program.env),
            workdir=program.workdir or str(self.ctx.workspace.primary), ro_binds=ro_binds, rw_binds=rw_binds,
            hidden=self.plan.hidden, overlays=overlays, run_as=run_as, network=program.network,
            network_hosts=program.network_hosts, shared_network=program.shared_network,
            timeout_s=program.timeout_s, memory_mb=program.memory_mb,
            max_processes=program.max_processes, file_size_mb=program.file_size_mb, open_files=program.open_files,
            cpu_seconds=program.cpu_seconds, scratch_mb=program.scratch_mb, max_output_bytes=program.max_output_bytes)

    def _note_unenforced_disk(self, result: SandboxResult, problem: str | None) -> None:
        if self.access is not ProjectAccess.WRITE:
            return
        if not self.sandbox.isolated:
            why = "the process backend writes straight to the host's disk"
        elif problem is not None:
            why = f"no size-limited tmpfs here ({problem}); only the per-file size limit applies"
        else:
            return
        result.unenforced_limits.append(DISK_UNENFORCED.format(mb=self.settings.disk_mb, why=why))


class Running:
    """A program started in a writable :class:`ProjectSandbox` that runs until stopped (a dev server,
    a REPL): its pipes; :meth:`apply`, which brings what it wrote so far back through the gate while
    it runs; :meth:`stop`, which kills its whole tree and brings the rest back."""

    def __init__(self, box: ProjectSandbox, program: Program, proc: subprocess.Popen[bytes], launch: Launch,
                 overlays: Overlays, notes: list[str]) -> None:
        self.box = box
        self.program = program
        self.proc = proc
        self.launch = launch
        self.overlays = overlays
        self.notes = notes
        self._stopped: list[str] | None = None
        self._marks: Marks = {}
        """What earlier applies handled (see :func:`~codeward.engines.contained.write_back.apply_overlays`)."""
        self._lock = threading.Lock()

    def disk_full(self) -> bool:
        disk = self.overlays.disk
        return disk is not None and disk.fd is not None and disk.full()

    def kill(self) -> None:
        """End the program and everything it started (its writes stay in its layer until :meth:`stop`)."""
        kill_tree(self.proc, self.launch.cgroup)

    def waits_for_input(self) -> bool:
        """Whether it is running and blocked reading its stdin, all that was written to it read."""
        stdin = self.proc.stdin
        if self.proc.poll() is not None or stdin is None or stdin.closed or self._stopped is not None:
            return False
        cgroup = self.launch.cgroup
        pids = cgroup.pids() if cgroup is not None else set()
        return waits_for_input(stdin.fileno(), pids or tree_of(self.proc.pid))

    def limit_reason(self, output: str) -> str:
        """Why it ended, when a limit ended it: its memory (the cgroup's OOM kill, or the program's own
        words under a per-process limit), its disk; "" otherwise. Read before :meth:`stop`."""
        code = self.proc.poll()
        if code is None:
            return ""
        memory = (f"killed: out of memory — it may use {self.program.memory_mb} MiB, all its processes together "
                  "([shell] memory_mb in codeward.toml)")
        cgroup = self.launch.cgroup
        if cgroup is not None and cgroup.events().oom_killed:
            return memory
        if code != 0 and any(marker in output.lower() for marker in (*OUT_OF_MEMORY_MARKERS, "memoryerror")):
            return memory.replace("killed: out of memory", "it ran out of memory")
        if self.disk_full() or (code != 0 and any(marker in output for marker in NO_SPACE_MARKERS)):
            return self.disk_cap_reason()
        return ""

    def disk_cap_reason(self) -> str:
        return (f"it filled its disk cap of {self.box.settings.disk_mb} MiB (what it writes to the project and /tmp "
                "together; [sandbox] disk_mb in codeward.toml): nothing it wrote can be applied")

    def apply(self, ctx: ToolContext) -> list[str]:
        """Bring what it wrote so far back through the gate, as part of the call ``ctx`` (its checkpoint),
        while it keeps running; what came back or did not, as notes. Each version of a file is applied
        once: one applied here and changed on the host afterwards is not overwritten by the stop."""
        with self._lock:
            if self._stopped is not None:
                return []
            if self.disk_full():
                return [f"nothing was applied: it filled its {self.box.settings.disk_mb} MiB disk cap"]
            return self.box._bring_back(self.overlays, ctx, self._marks)

    def stop(self, ctx: ToolContext | None) -> list[str]:
        """Kill it (if it still runs), apply its writes through the gate as part of the call ``ctx``
        (none: they are dropped — the server is ending), release everything; what came back or did
        not, as notes. Idempotent."""
        with self._lock:
            if self._stopped is not None:
                return self._stopped
            self.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            notes: list[str] = []
            try:
                if self.disk_full():
                    notes.append(f"nothing this process wrote was applied to the workspace: it filled its "
                                 f"{self.box.settings.disk_mb} MiB disk cap")
                elif ctx is not None:
                    notes += self.box._bring_back(self.overlays, ctx, self._marks)
            finally:
                self.launch.release()
                self.overlays.close()
            self._stopped = notes
            return notes


STDERR_TAIL_CHARS = 600
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
"""A report on a large project is long (mypy's JSON, ruff's): kept whole up to this."""


@dataclass(frozen=True, slots=True)
class Completed:
    """A command that ran to its end: its status and what it printed."""

    returncode: int
    stdout: str
    stderr: str

    def stderr_tail(self) -> str:
        text = self.stderr.strip()
        return text if len(text) <= STDERR_TAIL_CHARS else "..." + text[-STDERR_TAIL_CHARS:]


class Launcher(Protocol):
    """Runs one command to completion, bounded; an error result when it could not."""

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float,
            cancelled: threading.Event | None = None) -> Result[Completed]: ...


@dataclass(frozen=True)
class BoxLauncher:
    """Runs one command at a time in a :class:`ProjectSandbox` and hands back its output as text
    (the review's analyzers, the Beads CLI): the program's own installation is shown read-only
    (:func:`~codeward.engines.sandbox.installation.installation_of`), with ``ro_binds``."""

    box: ProjectSandbox
    ro_binds: tuple[str, ...] = ()
    memory_mb: int = 2048
    max_processes: int = 256
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_hint: str = ""

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float,
            cancelled: threading.Event | None = None) -> Result[Completed]:
        name = Path(argv[0]).name
        if cancelled is not None and cancelled.is_set():
            return Result.fail(ErrorKind.TIMEOUT, f"{name} was cancelled", data=None)
        shown = [*self.ro_binds, *installation_of(argv[0], self.box.ctx.workspace.roots)]
        program = Program(argv=list(argv), timeout_s=timeout, memory_mb=self.memory_mb,
                          max_processes=self.max_processes, env=self.env, workdir=str(cwd), ro_binds=shown,
                          file_size_mb=64, open_files=1024, max_output_bytes=MAX_OUTPUT_BYTES, report_progress=False)
        ran = self.box.run(program, cancelled)
        if not ran.ok or ran.data is None:
            refused = ran.errors[0]
            return Result.fail(refused.kind, refused.message, refused.hint, data=None)
        result = ran.data.result
        if ran.data.cancelled:
            return Result.fail(ErrorKind.TIMEOUT, f"{name} was cancelled", data=None)
        if result.status is Status.TIMEOUT:
            return Result.fail(ErrorKind.TIMEOUT, f"{name} took longer than {timeout:g} s and was stopped",
                               self.timeout_hint, data=None)
        if result.status is Status.SETUP_ERROR:
            return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start {name} in the sandbox: {result.error_message}",
                               "Check that it is installed and executable; `codeward doctor` checks the sandbox.",
                               data=None)
        if result.stdout_truncated or result.limit_hit is not None:
            problem = result.error_message or f"its output passed {MAX_OUTPUT_BYTES:,} bytes"
            return Result.fail(ErrorKind.TOO_LARGE, f"{name} was stopped: {problem}",
                               "Give it less to do at once (fewer files, a subdirectory).", data=None)
        code = result.exit_code if result.exit_code is not None else -1
        return Result.success(Completed(code, result.stdout, result.stderr))


class RunWatch:
    """Ends a run when the call is cancelled or its disk is full, and reports progress once a second."""

    tick_s = 0.1

    def __init__(self, ctx: ToolContext, program: Program, cancelled: threading.Event | None = None,
                 overlays: Overlays | None = None) -> None:
        self.ctx = ctx
        self.timeout_s = program.timeout_s
        self.report = program.report_progress
        self.event = cancelled or ctx.cancelled
        self.disk = overlays.disk if overlays is not None else None
        self.cancelled = False
        self.disk_full = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._cgroup: RunCgroup | None = None
        self._started = time.monotonic()
        self._reported = 0

    def started(self, proc: subprocess.Popen[bytes], cgroup: RunCgroup | None) -> None:
        self._proc, self._cgroup = proc, cgroup
        self._started = time.monotonic()

    def tick(self) -> None:
        if self._proc is not None and not (self.cancelled or self.disk_full):
            if self.event.is_set():
                self.cancelled = True
                kill_tree(self._proc, self._cgroup)
            elif self.disk is not None and self.disk.full():
                self.disk_full = True
                kill_tree(self._proc, self._cgroup)
        elapsed = int(time.monotonic() - self._started)
        if self.report and elapsed >= self._reported + PROGRESS_EVERY_S:
            self._reported = elapsed
            self.ctx.progress(elapsed, self.timeout_s, f"running for {elapsed} s")


def run_in(sandbox: Sandbox, request: SandboxRequest, watch: RunWatch) -> SandboxResult:
    """Run with the watch attached when the backend can be started and finished separately."""
    start: Callable[..., tuple[subprocess.Popen[bytes], object]] | None = getattr(sandbox, "start", None)
    finish = getattr(sandbox, "finish", None)
    if start is None or finish is None:
        return sandbox.run(request)
    try:
        proc, launch = start(request)
    except OSError as exc:
        return SandboxResult.setup_error(f"could not start the sandbox: {exc.strerror or exc}", sandbox.name,
                                         sandbox.isolated)
    result: SandboxResult = finish(proc, launch, request, request.stdin_bytes(), None, watch)
    return result


def project_owner(primary: Path) -> tuple[int, int] | None:
    """Who a program runs as when codeward is root: the project's owner (not root) — it then
    has that user's rights, and can change the files that user owns through the overlay,
    whose namespace maps one user. ``None`` (stay as is) when not root or root owns it."""
    if os.geteuid() != 0:
        return None
    try:
        info = primary.stat()
    except OSError:
        return None
    return (info.st_uid, info.st_gid) if info.st_uid != 0 else None


def _release_all(launch: Launch, overlays: Overlays) -> None:
    """A finished run's cgroup, temporary files and layers, removed."""
    try:
        launch.release()
    finally:
        overlays.close()


def _disk_setup_failed(result: SandboxResult) -> bool:
    failure = overlay_failure(result.stderr) or overlay_failure(result.error_message or "")
    return failure is not None and "disk" in failure


def _filled(result: SandboxResult, overlays: Overlays, watch: RunWatch) -> bool:
    """Whether the run filled its disk: seen full while it ran or after; or it said "no space left"
    with its disk more than half used (a write refused for want of room: its disk is the only space
    it can fill). A program that merely prints the words, its disk nearly empty, is not taken at them."""
    disk = overlays.disk
    if disk is None or disk.fd is None:
        return False
    if watch.disk_full or disk.full():
        return True
    usage = disk.usage()
    said = any(marker in text for marker in NO_SPACE_MARKERS for text in (result.stderr, result.stdout))
    return said and usage is not None and usage[0] * 2 >= usage[1]


def _stopped_at_disk_cap(result: SandboxResult, disk_mb: int) -> None:
    result.status = Status.ERROR
    result.limit_hit = Limit.DISK
    result.error_message = (f"stopped: the run filled its disk cap of {disk_mb} MiB (what it writes to the project, "
                            "/tmp and /work together; [sandbox] disk_mb in codeward.toml); nothing it wrote was "
                            "applied. Write less (clean up build output, write big data elsewhere), or ask the "
                            "operator to raise the cap.")
