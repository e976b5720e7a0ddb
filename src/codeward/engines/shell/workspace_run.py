"""Run a program in the workspace sandbox: the one way codeward runs what the agent wrote.

``run_shell`` scripts and registry tools both come here. The program sees the project through
overlays (:mod:`codeward.engines.shell.confine`), secrets covered by empty stand-ins; it runs in the
bwrap sandbox as the project's owner (never as root), with the caller's limits and no network
unless the operator's configuration gives it; when it ends, its writes come back through the
workspace's write checks (:mod:`codeward.engines.shell.changes`) — ``.git`` metadata, codeward's
configuration and ``.codeward/`` are refused and reported, never applied. A cancelled call
kills the run and everything it started.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.engines.sandbox import Sandbox, SandboxRequest, SandboxResult, Status
from codeward.engines.sandbox.model import BindSpec
from codeward.engines.sandbox.overlay import Overlays
from codeward.engines.sandbox.runner import kill_tree
from codeward.engines.shell.changes import apply_overlays
from codeward.engines.shell.confine import Confinement, confine, under_a_root
from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:
    from codeward.engines.sandbox.cgroups import RunCgroup
    from codeward.kernel.context import ToolContext

FILE_SIZE_MB = 4096
OPEN_FILES = 4096
SCRATCH_MB = 1024


@dataclass(frozen=True)
class WorkspaceRun:
    """One program to run over the workspace, and its limits."""

    argv: Sequence[str]
    env: Mapping[str, str]
    """Added to the sandbox's minimal environment (PATH, HOME=/tmp, LANG); nothing else is inherited."""
    timeout_s: float
    memory_mb: int
    max_processes: int
    stdin: bytes = b""
    network: bool = False
    network_hosts: Mapping[str, tuple[str, ...]] | None = None
    """With ``network``: only these hosts (name → addresses) are reachable (``None``: the internet)."""
    ro_binds: Sequence[BindSpec] = ()
    hide_secrets: bool = True
    max_output_bytes: int = 1_000_000
    file_size_mb: int = FILE_SIZE_MB
    open_files: int = OPEN_FILES
    scratch_mb: int = SCRATCH_MB


@dataclass
class WorkspaceOutcome:
    """How the run ended, what came back to the workspace (notes), and whether it was cancelled."""

    result: SandboxResult
    notes: list[str] = field(default_factory=list)
    cancelled: bool = False


class RunWatch:
    """Ends a run when the call is cancelled, and reports progress once a second."""

    tick_s = 0.1

    def __init__(self, ctx: ToolContext, timeout_s: float) -> None:
        self.ctx = ctx
        self.timeout_s = timeout_s
        self.cancelled = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._cgroup: RunCgroup | None = None
        self._started = time.monotonic()
        self._reported = 0

    def started(self, proc: subprocess.Popen[bytes], cgroup: RunCgroup | None) -> None:
        self._proc, self._cgroup = proc, cgroup
        self._started = time.monotonic()

    def tick(self) -> None:
        if self.ctx.cancelled.is_set() and not self.cancelled and self._proc is not None:
            self.cancelled = True
            kill_tree(self._proc, self._cgroup)
        elapsed = int(time.monotonic() - self._started)
        if elapsed > self._reported:
            self._reported = elapsed
            self.ctx.progress(elapsed, self.timeout_s, f"running for {elapsed} s")


def run_in_workspace(ctx: ToolContext, sandbox: Sandbox, run: WorkspaceRun) -> Result[WorkspaceOutcome | None]:
    """Run ``run`` over ``ctx``'s workspace in ``sandbox``; its writes pass the write checks."""
    primary = ctx.workspace.primary
    if not under_a_root(ctx.workspace, primary):
        return Result.fail(ErrorKind.PERMISSION, f"the working directory {primary} is not inside a workspace root "
                           "(this session allows only tracked files), so the sandbox cannot show it",
                           "Serve the project directory as a root to run programs in it.", data=None)
    plan = confine(ctx.workspace, run.hide_secrets)
    prepared = workspace_overlays(plan, primary)
    if not prepared.ok:
        return prepared.cast(None)
    overlays, owner = prepared.data
    request = SandboxRequest(
        argv=list(run.argv), stdin=run.stdin, env=dict(run.env), workdir=str(primary), ro_binds=list(run.ro_binds),
        hidden=plan.hidden, overlays=overlays, run_as=owner, network=run.network, network_hosts=run.network_hosts,
        timeout_s=run.timeout_s, memory_mb=run.memory_mb, max_processes=run.max_processes,
        file_size_mb=run.file_size_mb, open_files=run.open_files, scratch_mb=run.scratch_mb,
        max_output_bytes=run.max_output_bytes)
    watch = RunWatch(ctx, run.timeout_s)
    notes = list(plan.notes)
    try:
        result = run_in(sandbox, request, watch)
        if result.status is not Status.SETUP_ERROR:
            notes += apply_overlays(ctx.workspace, overlays).notes()
    finally:
        overlays.close()
    return Result.success(WorkspaceOutcome(result, notes, watch.cancelled))


def run_in(sandbox: Sandbox, request: SandboxRequest, watch: RunWatch) -> SandboxResult:
    """Run with the watch attached when the backend can be started and finished separately."""
    start = getattr(sandbox, "start", None)
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


def workspace_overlays(plan: Confinement, primary: Path) -> Result[tuple[Overlays, tuple[int, int] | None]]:
    """The overlays a run writes through (its changes come back through the gate afterwards) and
    whom it runs as (:func:`project_owner`); an error naming the fix when they cannot be made."""
    owner = project_owner(primary)
    try:
        return Result.success((Overlays.create(plan.directories, plan.files, owner), owner))
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"could not prepare the workspace overlay: {exc.strerror or exc}",
                           "Check that the temporary directory is writable and has space.")


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
