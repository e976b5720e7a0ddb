"""Runtime tools: the server's own figures — uptime, calls per tool, latency, errors, memory, CPU.

``get_server_metrics`` also answers to ``get_ui_performance``, the seed's name (there it reported
a GUI's frame rate), so clients written against it still work; the alias is not listed, so a
model is not shown the same tool twice.
"""

from __future__ import annotations

import os
import time

from pydantic import BaseModel

from codeward.audit.metrics import CallMetrics
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import Result

CPU_SAMPLE_SECONDS = 0.1


class ToolFigures(BaseModel):
    name: str
    calls: int
    errors: int
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float


class ProcessFigures(BaseModel):
    pid: int
    rss_bytes: int
    """Resident memory of the server process."""
    memory_percent: float
    cpu_percent: float
    """CPU use over a short sample just now (100 = one core busy)."""
    cpu_seconds: float
    """User + system CPU time since the process started."""
    threads: int
    open_files: int | None
    system_cpu_count: int
    system_memory_percent: float
    load_average: list[float] | None


class ServerMetrics(BaseModel):
    uptime_seconds: float
    recording: bool
    """Whether tool calls are being counted (the server and CLI record them)."""
    total_calls: int
    total_errors: int
    tools: list[ToolFigures]
    process: ProcessFigures

    def render(self) -> str:
        p = self.process
        lines = [
            f"Uptime: {_duration(self.uptime_seconds)}",
            f"Process {p.pid}: memory {p.rss_bytes / 1_048_576:.1f} MiB ({p.memory_percent:.1f}% of RAM), "
            f"CPU {p.cpu_percent:.1f}% now, {p.cpu_seconds:.2f} s total, {p.threads} threads"
            + (f", {p.open_files} open files" if p.open_files is not None else ""),
            f"System: {p.system_cpu_count} CPUs, memory {p.system_memory_percent:.1f}% used"
            + (f", load {' '.join(f'{x:.2f}' for x in p.load_average)}" if p.load_average else ""),
        ]
        if not self.recording:
            lines.append("Call metrics are not being recorded in this context (no metrics recorder attached).")
            return "\n".join(lines)
        lines.append(f"Calls: {self.total_calls} total, {self.total_errors} errors")
        if self.tools:
            lines.append("")
            lines.append(f"{'tool':<28} {'calls':>6} {'errors':>6} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} "
                         f"{'max ms':>9}")
            lines.extend(
                f"{t.name:<28} {t.calls:>6} {t.errors:>6} {t.p50_ms:>9.1f} {t.p90_ms:>9.1f} {t.p99_ms:>9.1f} "
                f"{t.max_ms:>9.1f}"
                for t in self.tools
            )
        return "\n".join(lines)


@tool(toolset="runtime", read_only=True, output=ServerMetrics, title="Server metrics",
      examples=[{}], aliases=("get_ui_performance",))
def get_server_metrics(ctx: ToolContext) -> Result[ServerMetrics]:
    """This server's figures: uptime, calls, errors and latency per tool, memory, CPU."""
    return Result.success(_server_metrics(ctx))


def _server_metrics(ctx: ToolContext) -> ServerMetrics:
    import psutil

    process = psutil.Process(os.getpid())
    recorder = ctx.services.find(CallMetrics)
    with process.oneshot():
        memory = process.memory_info()
        times = process.cpu_times()
        figures = ProcessFigures(
            pid=process.pid,
            rss_bytes=memory.rss,
            memory_percent=round(process.memory_percent(), 2),
            cpu_percent=0.0,
            cpu_seconds=round(times.user + times.system, 3),
            threads=process.num_threads(),
            open_files=_open_files(process),
            system_cpu_count=psutil.cpu_count() or 1,
            system_memory_percent=psutil.virtual_memory().percent,
            load_average=[round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        )
        started = process.create_time()
    figures.cpu_percent = process.cpu_percent(interval=CPU_SAMPLE_SECONDS)
    if recorder is None:
        return ServerMetrics(uptime_seconds=round(time.time() - started, 3), recording=False, total_calls=0,
                             total_errors=0, tools=[], process=figures)
    snap = recorder.snapshot()
    tools = [ToolFigures(name=s.name, calls=s.calls, errors=s.errors, mean_ms=s.mean_ms, p50_ms=s.p50_ms,
                         p90_ms=s.p90_ms, p99_ms=s.p99_ms, max_ms=s.max_ms) for s in snap.tools]
    return ServerMetrics(uptime_seconds=round(snap.uptime_seconds, 3), recording=True, total_calls=snap.total_calls,
                         total_errors=snap.total_errors, tools=tools, process=figures)


def _open_files(process: object) -> int | None:
    counter = getattr(process, "num_fds", None)
    try:
        return int(counter()) if callable(counter) else None
    except OSError:
        return None


def _duration(seconds: float) -> str:
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}d {text}" if days else text
