"""The fallback backend when namespaces are unavailable: a plain child process, contained
only by rlimits, a new session, a private temp dir, a scrubbed environment and — when this
host lets us make them — a per-run cgroup. Results say ``isolated=False``: the program can
see the host's files and network with the rights of the user it runs as.

Paths cannot be remapped without a mount namespace, so bind destinations are honoured by
rewriting: argv words, the workdir and env values that start with a bind's ``dest`` are
given its ``source``; ``/work`` and ``/tmp`` become directories of a private temp dir.
As root, runs with no read-write binds are started as ``nobody``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from functools import partial

from codeward.engines.sandbox.bwrap import NOBODY, PRIVATE_WORKDIR
from codeward.engines.sandbox.cgroups import CgroupLayout
from codeward.engines.sandbox.model import DEFAULT_PATH, Bind, SandboxRequest, SandboxResult
from codeward.engines.sandbox.outcome import to_result
from codeward.engines.sandbox.runner import (
    Launch,
    RunObserver,
    can_switch_user,
    collect_observed,
    limit_launch,
    minimal_env,
    spawn_or_release,
    world_reachable,
)

NOT_ISOLATED_NOTE = ("NOT isolated: the operator chose the process backend ([sandbox] backend = \"process\"), so this "
                     "ran as a plain host process — host files and the network were visible")
HOST_NETWORK_WARNING = ("WARNING: this run had the host's own network: services on the host's 127.0.0.1, "
                        "private ranges and the host's neighbours WERE reachable")


class ProcessSandbox:
    """Runs requests as ordinary child processes (see the module docstring)."""

    name = "process"
    isolated = False

    def __init__(self, cgroups: CgroupLayout | None, drop_to: tuple[int, int] | None = NOBODY) -> None:
        self.cgroups = cgroups
        self.switches_user = can_switch_user()
        """Root with the capabilities to become another user (a root without them stays root)."""
        self.drop_to = drop_to if self.switches_user else None

    def describe(self) -> str:
        limits = self.cgroups.describe() if self.cgroups else "rlimits only"
        return f"process (NOT isolated: host files and network are visible), {limits}"

    def prepare(self, request: SandboxRequest) -> Launch:
        private = tempfile.mkdtemp(prefix="codeward-run-")
        launch = Launch(argv=[], env={}, cleanups=[partial(shutil.rmtree, private, True)])
        try:
            work, tmp = os.path.join(private, "work"), os.path.join(private, "tmp")
            os.mkdir(work)
            os.mkdir(tmp)
            rw = [Bind.of(b) for b in request.rw_binds]
            mapping = [(b.target, b.source) for b in (*(Bind.of(x) for x in request.ro_binds), *rw)]
            mapping += [(PRIVATE_WORKDIR, work), ("/tmp", tmp)]
            rewrite = partial(_rewrite, mapping)
            env = minimal_env({k: rewrite(v) for k, v in request.env.items()}, tmp, DEFAULT_PATH)
            env["TMPDIR"] = tmp
            launch.argv = [rewrite(word) for word in request.argv]
            launch.env = env
            launch.cwd = rewrite(request.workdir) if request.workdir else work
            launch.pass_fds = tuple(request.inherit_fds)
            if request.run_as is not None and self.switches_user:
                launch.run_as = request.run_as  # the project's owner, not root
            elif self.drop_to is not None and not rw and all(
                    world_reachable(b.source) for b in (*(Bind.of(x) for x in request.ro_binds), *rw)):
                launch.run_as = self.drop_to  # it needs nothing only root may read: run it as nobody
            if launch.run_as is not None:
                for directory in (private, work, tmp):
                    os.chown(directory, *launch.run_as)
            limit_launch(launch, request, self.cgroups)
        except BaseException:
            launch.release()
            raise
        return launch

    def start(self, request: SandboxRequest) -> tuple[subprocess.Popen[bytes], Launch]:
        """Prepare and start ``request`` without waiting (for the warm pool and sessions)."""
        launch = self.prepare(request)
        return spawn_or_release(launch), launch

    def finish(
        self, proc: subprocess.Popen[bytes], launch: Launch, request: SandboxRequest, stdin: bytes,
        started: float | None = None, observer: RunObserver | None = None, *, keep_launch: bool = False,
    ) -> SandboxResult:
        """Feed, collect and interpret a started run, then release its resources (unless ``keep_launch``)."""
        try:
            collected, events = collect_observed(proc, launch, request, stdin, started, observer)
        finally:
            if keep_launch:
                launch.close_parent_fds()
            else:
                launch.release()
        result = to_result(collected, events, request, self.name, False, limits=launch.limits)
        result.notes.append(NOT_ISOLATED_NOTE)
        if request.network:
            result.notes.append(HOST_NETWORK_WARNING)
        return result

    def run(self, request: SandboxRequest) -> SandboxResult:
        try:
            proc, launch = self.start(request)
        except OSError as exc:
            return SandboxResult.setup_error(
                f"could not start {request.argv[0]!r}: {exc.strerror or exc}. Check that the program exists "
                "and that temp dirs and cgroups can be created.", self.name, False)
        return self.finish(proc, launch, request, request.stdin_bytes())


def _rewrite(mapping: list[tuple[str, str]], value: str) -> str:
    for dest, source in mapping:
        if value == dest or value.startswith(dest.rstrip("/") + "/"):
            return source + value[len(dest):]
    return value
