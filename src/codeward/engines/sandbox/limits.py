"""Which resource limits a run gets, by which mechanism, and which could not be enforced.

A cgroup bounds a run's processes together; it is used wherever one can be made. rlimits
are the floor that always applies, root or not, cgroup or not:

- ``RLIMIT_CPU``, ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``, ``RLIMIT_CORE`` — always;
- without a memory cgroup, ``RLIMIT_DATA`` = the memory limit (private writable memory per
  process: the heap and anonymous mappings, but not the address space runtimes reserve, so
  node, Go and the JVM still start) and ``RLIMIT_AS`` where the request gives one;
- without a pids cgroup, ``RLIMIT_NPROC``. It is counted per user *per user namespace*, so a
  sandbox with a user namespace of its own sets it inside (through ``prlimit``), where only
  the run's own processes count; it does not apply to processes whose user is the host's
  root, which is said plainly.

Every result carries the plan's statements: what was enforced, and what was not.
"""

from __future__ import annotations

import os
import resource
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeward.engines.sandbox.cgroups import RunCgroup
    from codeward.engines.sandbox.model import SandboxRequest

PRLIMIT = "/usr/bin/prlimit"
MB = 1024 * 1024


@dataclass(frozen=True)
class LimitPlan:
    """The rlimits to set, and what they (and the cgroup) promise."""

    rlimits: tuple[tuple[int, int], ...] = ()
    """Set in the child before exec (on bwrap itself for the bwrap backend; inherited inside)."""
    inner_nproc: int | None = None
    """``RLIMIT_NPROC`` to set inside the sandbox's user namespace (a ``prlimit`` wrapper)."""
    enforced: tuple[str, ...] = ()
    unenforced: tuple[str, ...] = ()

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` behind the ``prlimit`` wrapper that sets the inner process limit."""
        if self.inner_nproc is None:
            return argv
        return [PRLIMIT, f"--nproc={self.inner_nproc}", "--", *argv]


@dataclass
class _Builder:
    rlimits: list[tuple[int, int]] = field(default_factory=list)
    enforced: list[str] = field(default_factory=list)
    unenforced: list[str] = field(default_factory=list)


def plan_limits(
    request: SandboxRequest, cgroup: RunCgroup | None, *, own_user_namespace: bool, host_uid: int,
) -> LimitPlan:
    """The limits of one run.

    ``own_user_namespace``: the program runs in a user namespace of its own (bwrap), where
    ``RLIMIT_NPROC`` counts only its processes. ``host_uid``: the host user the program's
    processes belong to (the kernel ignores ``RLIMIT_NPROC`` for root).
    """
    plan = _Builder()
    controllers = _controllers(cgroup)
    cpu = request.cpu_seconds if request.cpu_seconds is not None else int(request.timeout_s) + 1
    plan.rlimits.append((resource.RLIMIT_CORE, 0))
    plan.rlimits.append((resource.RLIMIT_CPU, max(1, cpu)))
    plan.enforced.append(f"CPU time {max(1, cpu)} s per process (RLIMIT_CPU)"
                         + (", at most one CPU (cgroup)" if "cpu" in controllers else ""))
    if request.file_size_mb is not None:
        plan.rlimits.append((resource.RLIMIT_FSIZE, request.file_size_mb * MB))
        plan.enforced.append(f"file size {request.file_size_mb} MB (RLIMIT_FSIZE)")
    if request.open_files is not None:
        plan.rlimits.append((resource.RLIMIT_NOFILE, request.open_files))
        plan.enforced.append(f"open files {request.open_files} per process (RLIMIT_NOFILE)")
    _memory(plan, request, controllers, cgroup)
    inner = _processes(plan, request, controllers, cgroup, own_user_namespace, host_uid)
    return LimitPlan(tuple(plan.rlimits), inner, tuple(plan.enforced), tuple(plan.unenforced))


def _controllers(cgroup: RunCgroup | None) -> set[str]:
    if cgroup is None:
        return set()
    if cgroup.layout.version == 2:
        return {"memory", "pids", "cpu"}
    return set(cgroup.dirs)


def _memory(plan: _Builder, request: SandboxRequest, controllers: set[str], cgroup: RunCgroup | None) -> None:
    if request.memory_mb is None:
        return
    if "memory" in controllers and cgroup is not None:
        plan.enforced.append(f"memory {request.memory_mb} MB for all processes together "
                             f"(cgroup v{cgroup.layout.version})")
        return
    plan.rlimits.append((resource.RLIMIT_DATA, request.memory_mb * MB))
    plan.enforced.append(f"memory {request.memory_mb} MB per process (RLIMIT_DATA: heap and private mappings)")
    if request.address_space_mb is not None:
        plan.rlimits.append((resource.RLIMIT_AS, request.address_space_mb * MB))
        plan.enforced.append(f"address space {request.address_space_mb} MB per process (RLIMIT_AS)")
    plan.unenforced.append(f"memory of all processes together ({request.memory_mb} MB): no writable memory "
                           "cgroup here, so each process is limited on its own")


def _processes(plan: _Builder, request: SandboxRequest, controllers: set[str], cgroup: RunCgroup | None,
               own_user_namespace: bool, host_uid: int) -> int | None:
    wanted = request.max_processes
    if wanted is None:
        return None
    if "pids" in controllers and cgroup is not None:
        plan.enforced.append(f"processes and threads {wanted} (cgroup v{cgroup.layout.version} pids.max)")
        return None
    if host_uid == 0:
        plan.unenforced.append(f"processes and threads ({wanted}): no writable pids cgroup, and RLIMIT_NPROC "
                               "does not apply to the host's root")
        return None
    if own_user_namespace:
        if not os.access(PRLIMIT, os.X_OK) and shutil.which("prlimit") is None:
            plan.unenforced.append(f"processes and threads ({wanted}): no pids cgroup and no prlimit "
                                   "(util-linux) to set RLIMIT_NPROC inside the sandbox")
            return None
        plan.enforced.append(f"processes and threads {wanted} (RLIMIT_NPROC in the sandbox's user namespace)")
        return wanted
    already = _processes_of(host_uid)
    plan.rlimits.append((resource.RLIMIT_NPROC, already + wanted))
    plan.enforced.append(f"processes and threads {wanted} more than the {already} this user already runs "
                         "(RLIMIT_NPROC counts every process of the user)")
    return None


def _processes_of(uid: int) -> int:
    """Tasks (processes and threads) of ``uid`` now, as RLIMIT_NPROC counts them."""
    count = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            info = os.stat(f"/proc/{name}")
            if info.st_uid == uid:
                count += len(os.listdir(f"/proc/{name}/task"))
        except OSError:
            continue
    return count
