"""Sample CPU, memory and I/O of a sandboxed run into a timeline (psutil).

The sampler is a :class:`~codeward.engines.sandbox.runner.RunObserver`: the runner hands it
the started process and its cgroup, then calls :meth:`Sampler.tick` every interval while it
collects output. Each tick reads every process of the run — the cgroup's members when there
is a cgroup (so children and grandchildren count), else the process and its descendants.

I/O is counted in bytes passed through read/write calls (``rchar``/``wchar``): files in the
sandbox live in memory (tmpfs), so block-device counters would say nothing.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from codeward.engines.sandbox.cgroups import RunCgroup


@dataclass
class Sample:
    timestamp_ms: float
    memory_mb: float
    cpu_percent: float
    io_read_bytes: int
    io_write_bytes: int
    processes: int
    vms_mb: float | None = None


@dataclass
class ProcessPeak:
    pid: int
    name: str
    peak_rss_mb: float


@dataclass
class Sampler:
    """Collects :class:`Sample` s; ``detailed`` adds virtual size and per-process peaks."""

    tick_s: float = 0.1
    detailed: bool = False
    samples: list[Sample] = field(default_factory=list)
    peaks: dict[int, ProcessPeak] = field(default_factory=dict)
    error: str | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _cgroup: RunCgroup | None = None
    _handles: dict[int, Any] = field(default_factory=dict)
    _cpu_seen: dict[int, float] = field(default_factory=dict)
    _io_seen: dict[int, tuple[int, int]] = field(default_factory=dict)
    _start: float = 0.0
    _last: tuple[float, float] | None = None

    def started(self, proc: subprocess.Popen[bytes], cgroup: RunCgroup | None) -> None:
        self._proc, self._cgroup = proc, cgroup
        self._start = time.monotonic()
        self.tick()

    def _pids(self) -> set[int]:
        if self._cgroup is not None:
            return self._cgroup.pids()
        import psutil

        if self._proc is None:
            return set()
        try:
            root = psutil.Process(self._proc.pid)
            return {root.pid, *(child.pid for child in root.children(recursive=True))}
        except psutil.Error:
            return set()

    def tick(self) -> None:
        try:
            import psutil
        except ImportError:
            self.error = "psutil is not installed (pip install psutil)"
            return
        now = time.monotonic()
        rss = vms = 0
        for pid in self._pids():
            handle = self._handles.get(pid)
            try:
                if handle is None:
                    handle = self._handles[pid] = psutil.Process(pid)
                with handle.oneshot():
                    memory = handle.memory_info()
                    times = handle.cpu_times()
                    self._cpu_seen[pid] = times.user + times.system
                    with contextlib.suppress(psutil.AccessDenied, AttributeError):
                        io = handle.io_counters()
                        self._io_seen[pid] = (io.read_chars, io.write_chars)
                    rss += memory.rss
                    vms += memory.vms
                    if self.detailed:
                        peak = self.peaks.get(pid)
                        mb = memory.rss / 1048576
                        if peak is None or mb > peak.peak_rss_mb:
                            self.peaks[pid] = ProcessPeak(pid, handle.name(), round(mb, 2))
            except psutil.Error:
                continue  # exited between listing and reading: its last reading stays counted
        cpu_total = sum(self._cpu_seen.values())
        percent = 0.0
        if self._last is not None and now > self._last[0]:
            percent = max(0.0, (cpu_total - self._last[1]) / (now - self._last[0]) * 100)
        self._last = (now, cpu_total)
        self.samples.append(Sample(
            timestamp_ms=round((now - self._start) * 1000, 1), memory_mb=round(rss / 1048576, 2),
            cpu_percent=round(percent, 1), io_read_bytes=sum(r for r, _ in self._io_seen.values()),
            io_write_bytes=sum(w for _, w in self._io_seen.values()), processes=len(self._handles),
            vms_mb=round(vms / 1048576, 2) if self.detailed else None,
        ))

    # -- summary -------------------------------------------------------------------------

    def peak_memory_mb(self) -> float:
        return max((s.memory_mb for s in self.samples), default=0.0)

    def average_cpu_percent(self) -> float:
        measured = [s.cpu_percent for s in self.samples[1:]]
        return round(sum(measured) / len(measured), 1) if measured else 0.0

    def io_totals(self) -> tuple[int, int]:
        return (sum(r for r, _ in self._io_seen.values()), sum(w for _, w in self._io_seen.values()))
