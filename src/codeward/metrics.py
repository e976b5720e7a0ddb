"""Call metrics of a server or session: how many calls per tool, how many failed, how long they took.

One :class:`CallMetrics` lives in ``ToolContext.services.metrics``; whatever dispatches calls
(the MCP server, the CLI) records each finished call, and ``get_server_metrics`` reads a
:meth:`~CallMetrics.snapshot`. Latency percentiles are computed over a bounded window of the
most recent calls of each tool, so memory stays flat however long the server runs.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codeward.catalog import ToolOutcome
from codeward.chain import Middleware, ToolCall
from codeward.surface import ToolSurface

if TYPE_CHECKING:
    from codeward.context import Services

DEFAULT_WINDOW = 1000


@dataclass(frozen=True)
class ToolStats:
    """Figures for one tool; latencies in milliseconds over the recent window."""

    name: str
    calls: int
    errors: int
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float


@dataclass(frozen=True)
class MetricsSnapshot:
    """A consistent copy of the figures at one moment."""

    started_at: float
    """Wall-clock time (epoch seconds) the recorder was created."""
    uptime_seconds: float
    total_calls: int
    total_errors: int
    tools: tuple[ToolStats, ...]
    """Busiest tool first."""


@dataclass
class _ToolRecord:
    calls: int = 0
    errors: int = 0
    total_seconds: float = 0.0
    max_seconds: float = 0.0
    recent: deque[float] = field(default_factory=deque)


class CallMetrics:
    """Thread-safe recorder of finished tool calls."""

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self._window = window
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._started_wall = time.time()
        self._tools: dict[str, _ToolRecord] = {}

    def record(self, name: str, seconds: float, is_error: bool) -> None:
        """Count one finished call of ``name`` that took ``seconds``."""
        seconds = max(0.0, float(seconds))
        with self._lock:
            entry = self._tools.get(name)
            if entry is None:
                entry = self._tools[name] = _ToolRecord(recent=deque(maxlen=self._window))
            entry.calls += 1
            entry.errors += bool(is_error)
            entry.total_seconds += seconds
            entry.max_seconds = max(entry.max_seconds, seconds)
            entry.recent.append(seconds)

    def snapshot(self) -> MetricsSnapshot:
        with self._lock:
            copies = [(name, e.calls, e.errors, e.total_seconds, e.max_seconds, sorted(e.recent))
                      for name, e in self._tools.items()]
            uptime = time.monotonic() - self._started
        stats = [
            ToolStats(
                name=name,
                calls=calls,
                errors=errors,
                mean_ms=_ms(total / calls) if calls else 0.0,
                p50_ms=_ms(percentile(recent, 50)),
                p90_ms=_ms(percentile(recent, 90)),
                p99_ms=_ms(percentile(recent, 99)),
                max_ms=_ms(longest),
            )
            for name, calls, errors, total, longest, recent in copies
        ]
        stats.sort(key=lambda s: (-s.calls, s.name))
        return MetricsSnapshot(
            started_at=self._started_wall,
            uptime_seconds=uptime,
            total_calls=sum(s.calls for s in stats),
            total_errors=sum(s.errors for s in stats),
            tools=tuple(stats),
        )


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 for none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def metrics_of(services: Services) -> CallMetrics | None:
    """The recorder a context carries, if calls are being recorded."""
    return services.metrics


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


class RecordCalls(Middleware):
    """The chain's metrics: every finished call (denied ones too) counted into ``metrics``."""

    def __init__(self, metrics: CallMetrics) -> None:
        self.metrics = metrics

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        started = time.perf_counter()
        outcome = await inner.call(call.name, call.arguments, call.ctx)
        # the outcome's own run time; else the time here, less any wait for a person's approval
        seconds = outcome.seconds or max(0.0, time.perf_counter() - started - outcome.waited)
        self.metrics.record(call.name, seconds, outcome.is_error)
        return outcome
