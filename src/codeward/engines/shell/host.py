"""Running a script unsandboxed, as the server's user — still with a hard end.

The script gets the host's environment (the seed's behaviour), and every process it starts
is tracked three ways so that a timeout or the script's end leaves nothing running: its
process group, a cgroup of its own when this host lets us make one (which holds ``setsid``
and double-forked daemons too), and a marker variable in its environment that every
descendant inherits — after the run, any process still carrying the marker is found in
``/proc`` and killed through a pidfd, then the sweep is repeated until none is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass

from codeward.engines.sandbox import SandboxRequest, SandboxResult
from codeward.engines.sandbox.cgroups import CgroupEvents, CgroupLayout, RunCgroup
from codeward.engines.sandbox.outcome import to_result
from codeward.engines.sandbox.runner import Launch, RunObserver, collect, rlimits_for, spawn

HOST_BACKEND = "host"
MARKER_VARIABLE = "CODEWARD_SHELL_RUN"
SWEEP_ROUNDS = 50
SWEEP_PAUSE_S = 0.02


@dataclass(frozen=True)
class Sweep:
    """What the marker sweep found after a run."""

    killed: int = 0
    survivors: tuple[int, ...] = ()


def run_on_host(
    request: SandboxRequest, cgroups: CgroupLayout | None, observer: RunObserver | None = None
) -> SandboxResult:
    """Run ``request.argv`` in ``request.workdir`` with exactly ``request.env``; never raises."""
    marker = uuid.uuid4().hex
    launch = Launch(argv=list(request.argv), env={**request.env, MARKER_VARIABLE: marker}, cwd=request.workdir,
                    rlimits=rlimits_for(None, None, None, None))
    notes: list[str] = []
    if cgroups is not None:
        try:
            launch.cgroup = RunCgroup.create(cgroups, None, None, cpus=None)
        except OSError as exc:
            notes.append(f"no cgroup for this run ({exc.strerror or exc}); processes are tracked by a marker")
    try:
        proc = spawn(launch)
    except OSError as exc:
        launch.release()
        return SandboxResult.setup_error(
            f"could not start {request.argv[0]!r}: {exc.strerror or exc}", HOST_BACKEND, False)
    watch = _SweepAfterExit(proc, launch.cgroup, marker, observer)
    try:
        collected = collect(proc, b"", request.timeout_s, request.max_output_bytes, launch.cgroup,
                            on_tick=watch.tick, tick_s=watch.tick_s)
        events = launch.cgroup.events() if launch.cgroup is not None else CgroupEvents()
    finally:
        launch.release()
    sweep = sweep_marked(marker)
    killed = watch.killed + sweep.killed
    result = to_result(collected, events, request, HOST_BACKEND, False)
    result.notes.extend(notes)
    if killed:
        result.notes.append(f"killed {killed} process(es) the script left running outside its process group")
    if sweep.survivors:
        result.notes.append(f"WARNING: could not kill processes {list(sweep.survivors)} the script started")
    return result


class _SweepAfterExit:
    """Once the script's main process is gone, sweep its marked leftovers at every tick: they
    may hold its output pipes open, and the run is over only when those close."""

    def __init__(self, proc: subprocess.Popen[bytes], cgroup: RunCgroup | None, marker: str,
                 observer: RunObserver | None) -> None:
        self.proc = proc
        self.marker = marker
        self.observer = observer
        self.tick_s = min(observer.tick_s, 0.05) if observer is not None else 0.05
        self.killed = 0
        if observer is not None:
            observer.started(proc, cgroup)

    def tick(self) -> None:
        if self.observer is not None:
            self.observer.tick()
        if self.proc.poll() is not None:
            self.killed += sweep_marked(self.marker).killed


def sweep_marked(marker: str) -> Sweep:
    """Kill every process whose environment carries this run's marker, until none is left."""
    token = f"{MARKER_VARIABLE}={marker}".encode()
    killed: set[int] = set()
    found: list[int] = []
    for _round in range(SWEEP_ROUNDS):
        found = [pid for pid in _other_pids() if _carries(pid, token)]
        if not found:
            return Sweep(len(killed))
        for pid in found:
            if _kill_if_marked(pid, token):
                killed.add(pid)
        time.sleep(SWEEP_PAUSE_S)
    return Sweep(len(killed), tuple(found))


def _other_pids() -> list[int]:
    own = os.getpid()
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != own]
    except OSError:
        return []


def _carries(pid: int, token: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return token in handle.read().split(b"\0")
    except OSError:
        return False


def _kill_if_marked(pid: int, token: bytes) -> bool:
    """SIGKILL through a pidfd, checked after opening it, so a recycled pid is never hit."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if not _carries(pid, token):
            return False
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            return True
        return False
    finally:
        os.close(pidfd)
