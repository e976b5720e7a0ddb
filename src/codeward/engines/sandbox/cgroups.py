"""Per-run control groups: a memory and process-count ceiling the whole process tree shares.

rlimits are per process; a cgroup bounds everything a run starts, catches a fork bomb at
``pids.max`` and an allocation at the memory limit (OOM kill) without the address-space
limit that breaks JVMs, node and Go. Both layouts are handled:

- **v1** (hybrid hosts): one directory per controller (``memory``, ``pids``, ``cpu``, ``freezer``),
  under the group this process is in, each with ``codeward/p<pid>/run-<id>`` children.
- **v2** (unified): one directory with ``memory.max``, ``memory.swap.max``, ``pids.max``.
  Because a v2 group holding processes cannot delegate controllers, when this process
  sits in such a group it first moves itself into a ``codeward-server`` leaf beside the
  runs.

Nothing is global: :func:`detect_layout` returns a value the backend keeps.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

V1_CONTROLLERS = ("memory", "pids", "cpu", "freezer")
REQUIRED = ("memory", "pids")
GROUP_DIR = "codeward"
CPU_PERIOD_US = 100_000
FREEZE_WAIT_S = 0.5
"""How long a kill waits for a v1 group to freeze (a task in uninterruptible sleep delays it) before
signalling anyway."""
DEFAULT_SHARES = 1024
"""A v1 cpu group's default weight: as much as one process beside it."""


@dataclass(frozen=True)
class CgroupLayout:
    """Where run groups are created: per controller (v1) or one unified parent (v2)."""

    version: int
    parents: tuple[tuple[str, Path], ...]
    """(controller, parent directory) pairs; v2 has the single pair ("unified", dir)."""

    def describe(self) -> str:
        names = [c for c, _ in self.parents] if self.version == 1 else ["memory", "pids"]
        return f"cgroup v{self.version} ({'+'.join(names)})"


@dataclass(frozen=True)
class CgroupEvents:
    """What the kernel recorded for a run's group."""

    oom_killed: bool = False
    pids_limited: bool = False
    peak_memory_mb: float | None = None


def _mounts() -> list[tuple[str, str, str, str]]:
    """(mount root, mount point, fs type, super options) of every cgroup mount."""
    found: list[tuple[str, str, str, str]] = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[3], fields[4], tail[0], tail[2]))
    return found


def _own_groups() -> dict[str, str]:
    """controller (or "" for v2) → this process's group path, from /proc/self/cgroup."""
    groups: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for controller in parts[1].split(","):
                    groups[controller] = parts[2]
    return groups


def _join(mount_root: str, mount_point: str, group: str) -> Path:
    relative = os.path.relpath(group, mount_root) if group.startswith(mount_root) else group
    relative = "" if relative == "." else relative.lstrip("/")
    return Path(mount_point) / relative


def _writable_parent(directory: Path) -> Path | None:
    """``<group>/codeward/p<pid>``: one parent per codeward process, so processes never
    touch each other's runs; parents of processes that are gone are swept away."""
    shared = directory / GROUP_DIR
    parent = shared / f"p{os.getpid()}"
    try:
        shared.mkdir(exist_ok=True)
        _sweep_dead(shared)
        parent.mkdir(exist_ok=True)
    except OSError:
        return None
    return parent


def _weigh_as_processes(parent: Path) -> None:
    """Give codeward's cpu groups the weight of one process per CPU (v1 ``cpu.shares``): by
    default a group weighs as one process, so every sandboxed run of every codeward process
    together would get one process's share of a busy machine (the review's analyzers ran at a
    third of their speed beside other work). Each run stays limited to one CPU by its quota."""
    shares = str(DEFAULT_SHARES * max(1, os.cpu_count() or 1))
    for group in (parent.parent, parent):
        _write_optional(group / "cpu.shares", shares)


def _sweep_dead(shared: Path) -> None:
    with contextlib.suppress(OSError):
        for entry in shared.iterdir():
            name = entry.name
            if entry.is_dir() and name.startswith("p") and name[1:].isdigit() and not _alive(int(name[1:])):
                for child in entry.iterdir():
                    if child.is_dir():
                        with contextlib.suppress(OSError):
                            child.rmdir()
                with contextlib.suppress(OSError):
                    entry.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def detect_layout() -> CgroupLayout | None:
    """The writable cgroup layout here, or ``None`` when no memory+pids groups can be made."""
    mounts = _mounts()
    own = _own_groups()
    v1: list[tuple[str, Path]] = []
    for controller in V1_CONTROLLERS:
        for root, point, fstype, options in mounts:
            if fstype == "cgroup" and controller in options.split(",") and controller in own:
                parent = _writable_parent(_join(root, point, own[controller]))
                if parent is not None:
                    v1.append((controller, parent))
                    if controller == "cpu":
                        _weigh_as_processes(parent)
                break
    if all(any(c == need for c, _ in v1) for need in REQUIRED):
        return CgroupLayout(1, tuple(v1))
    for root, point, fstype, _options in mounts:
        if fstype == "cgroup2" and "" in own:
            parent = _prepare_v2(_join(root, point, own[""]))
            if parent is not None:
                return CgroupLayout(2, (("unified", parent),))
    return None


def _prepare_v2(own_dir: Path) -> Path | None:
    """A v2 directory whose children get memory and pids controllers, or ``None``."""
    try:
        available = (own_dir / "cgroup.controllers").read_text().split()
    except OSError:
        return None
    if not all(c in available for c in REQUIRED):
        return None
    wanted = " ".join(f"+{c}" for c in REQUIRED)
    try:
        (own_dir / "cgroup.subtree_control").write_text(wanted)
    except OSError:
        # Our group holds processes: move this process into a leaf, then delegate.
        try:
            leaf = own_dir / "codeward-server"
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(os.getpid()))
            (own_dir / "cgroup.subtree_control").write_text(wanted)
        except OSError:
            return None
    shared = own_dir / GROUP_DIR
    parent = shared / f"p{os.getpid()}"
    try:
        shared.mkdir(exist_ok=True)
        (shared / "cgroup.subtree_control").write_text(wanted)
        _sweep_dead(shared)
        parent.mkdir(exist_ok=True)
        (parent / "cgroup.subtree_control").write_text(wanted)
    except OSError:
        return None
    return parent


class RunCgroup:
    """The group of one run: created with limits, entered by the child, read, killed, removed."""

    def __init__(self, layout: CgroupLayout, dirs: dict[str, Path]) -> None:
        self.layout = layout
        self.dirs = dirs
        self._counters: dict[Path, int] = {}
        """The counter files :meth:`events` reads, opened when the group is made (a box prepared ahead
        makes its group before the call): after the run they are read again at offset 0, without the
        opens (≈ 0.1 ms each on cgroup v1), on the caller's time. Closed by :meth:`remove`."""
        self._counters_lock = threading.Lock()

    @classmethod
    def create(
        cls, layout: CgroupLayout, memory_mb: int | None, max_processes: int | None, cpus: float | None = 1.0
    ) -> RunCgroup:
        """Make the group and write its limits; raises ``OSError`` when the kernel refuses."""
        name = f"run-{uuid.uuid4().hex[:12]}"
        dirs: dict[str, Path] = {}
        group = cls(layout, dirs)
        try:
            for controller, parent in layout.parents:
                directory = parent / name
                directory.mkdir()
                dirs[controller] = directory
            group.set_limits(memory_mb, max_processes, cpus)
        except OSError:
            group.remove()
            raise
        group._open_counters()
        return group

    def _counter_files(self) -> list[Path]:
        if self.layout.version == 2:
            unified = self.dirs["unified"]
            return [unified / "memory.events", unified / "pids.events", unified / "memory.peak"]
        files = []
        if (memory := self.dirs.get("memory")) is not None:
            files += [memory / "memory.oom_control", memory / "memory.max_usage_in_bytes"]
        if (pids := self.dirs.get("pids")) is not None:
            files.append(pids / "pids.events")
        return files

    def _open_counters(self) -> None:
        with self._counters_lock:
            for path in self._counter_files():
                with contextlib.suppress(OSError):
                    self._counters[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def _close_counters(self) -> None:
        with self._counters_lock:
            counters, self._counters = self._counters, {}
        for fd in counters.values():
            with contextlib.suppress(OSError):
                os.close(fd)

    def _read(self, path: Path) -> bytes:
        """A counter file's current content (from its descriptor opened ahead, else opened now)."""
        with self._counters_lock:
            fd = self._counters.get(path)
            if fd is not None:
                return os.pread(fd, 65536, 0)
        return _read(path)

    def set_limits(self, memory_mb: int | None, max_processes: int | None, cpus: float | None = 1.0) -> None:
        if self.layout.version == 2:
            unified = self.dirs["unified"]
            if memory_mb is not None:
                _write(unified / "memory.max", str(memory_mb * 1024 * 1024))
                _write_optional(unified / "memory.swap.max", "0")
            if max_processes is not None:
                _write(unified / "pids.max", str(max_processes))
            if cpus is not None:
                _write_optional(unified / "cpu.max", f"{int(cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
            return
        memory = self.dirs.get("memory")
        if memory is not None and memory_mb is not None:
            limit = str(memory_mb * 1024 * 1024)
            _write(memory / "memory.limit_in_bytes", limit)
            _write_optional(memory / "memory.memsw.limit_in_bytes", limit)
        pids = self.dirs.get("pids")
        if pids is not None and max_processes is not None:
            _write(pids / "pids.max", str(max_processes))
        cpu = self.dirs.get("cpu")
        if cpu is not None and cpus is not None:
            _write_optional(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write_optional(cpu / "cpu.cfs_quota_us", str(int(cpus * CPU_PERIOD_US)))

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a child writes its pid into (see :meth:`enter`)."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    @staticmethod
    def enter(procs_files: list[str]) -> None:
        """Move the calling process into the group; called in the child before exec."""
        pid = str(os.getpid()).encode()
        for path in procs_files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in self.dirs.values():
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
        return found

    def kill(self) -> int:
        """SIGKILL every process in the group at once, then until it is empty; returns how many were seen.

        At once matters: killed one by one, a script whose child died first runs on for a moment
        (``sleep 30; echo never`` printed ``never`` when ``sleep`` happened to be signalled before its
        shell). v2 has ``cgroup.kill``; on v1 the group is frozen first (nothing in it runs, forks
        or sees a death), every process signalled, then thawed, so all die together."""
        if self.layout.version == 2:
            _write_optional(self.dirs["unified"] / "cgroup.kill", "1")
        frozen = self._freeze()
        seen: set[int] = set()
        try:
            for attempt in range(200):
                remaining = self.pids()
                if not remaining:
                    break
                seen |= remaining
                for pid in remaining:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                if frozen:  # a frozen process dies once thawed
                    frozen = not self._set_freezer("THAWED")
                time.sleep(0.001 if attempt < 20 else 0.01)  # dying processes leave within a few ms
        finally:
            if frozen:
                self._set_freezer("THAWED")
        return len(seen)

    def _freeze(self) -> bool:
        """Stop every process of a v1 group where it is (``freezer.state``); whether it was asked."""
        if not self._set_freezer("FROZEN"):
            return False
        state = self.dirs["freezer"] / "freezer.state"
        deadline = time.monotonic() + FREEZE_WAIT_S
        while time.monotonic() < deadline:  # FREEZING while a task finishes a system call
            with contextlib.suppress(OSError):
                if state.read_text().strip() == "FROZEN":
                    break
            time.sleep(0.0005)
        return True

    def _set_freezer(self, state: str) -> bool:
        """Write a v1 group's ``freezer.state``; whether it was written (no freezer group: ``False``)."""
        freezer = self.dirs.get("freezer")
        if freezer is None:
            return False
        try:
            _write(freezer / "freezer.state", state)
        except OSError:
            return False
        return True

    def events(self) -> CgroupEvents:
        read = self._read
        if self.layout.version == 2:
            unified = self.dirs["unified"]
            memory = _keyed(unified / "memory.events", read)
            pids = _keyed(unified / "pids.events", read)
            return CgroupEvents(memory.get("oom_kill", 0) > 0, pids.get("max", 0) > 0,
                                _mb(_number(unified / "memory.peak", read)))
        oom = False
        peak: int | None = None
        memory_dir = self.dirs.get("memory")
        if memory_dir is not None:
            control = _keyed(memory_dir / "memory.oom_control", read)
            oom = control.get("oom_kill", 0) > 0
            peak = _number(memory_dir / "memory.max_usage_in_bytes", read)
        pids_dir = self.dirs.get("pids")
        limited = pids_dir is not None and _keyed(pids_dir / "pids.events", read).get("max", 0) > 0
        return CgroupEvents(oom, limited, _mb(peak))

    def remove(self) -> None:
        """Delete the group's directories (after killing what is left in them)."""
        self._close_counters()
        if self.pids():
            self.kill()
        for directory in list(self.dirs.values()):
            for _attempt in range(20):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs.clear()


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _write_optional(path: Path, value: str) -> None:
    with contextlib.suppress(OSError):
        _write(path, value)


def _read(path: Path) -> bytes:
    """A control file's bytes, read with plain ``os`` calls (a run's counters are read after every run,
    on the caller's time: no text layer)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _keyed(path: Path, read: Callable[[Path], bytes] = _read) -> dict[str, int]:
    values: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in read(path).splitlines():
            key, _, number = line.partition(b" ")
            with contextlib.suppress(ValueError):
                values[key.decode("ascii", "replace")] = int(number)
    return values


def _number(path: Path, read: Callable[[Path], bytes] = _read) -> int | None:
    try:
        return int(read(path).strip())
    except (OSError, ValueError):
        return None




def _mb(value: int | None) -> float | None:
    return None if value is None else round(value / (1024 * 1024), 1)
