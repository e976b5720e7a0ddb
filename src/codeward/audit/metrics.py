"""Call metrics of a server or session: how many calls per tool, how many failed, how long they took.

One :class:`CallMetrics` lives in the context's services (``ctx.services.find(CallMetrics)``); whatever dispatches calls
(the MCP server, the CLI) records each finished call, and ``get_server_metrics`` reads a
:meth:`~CallMetrics.snapshot`. Latency percentiles are computed over a bounded window of the
most recent calls of each tool, so memory stays flat however long the server runs.

Each tool also keeps a histogram of every latency (geometric buckets, each about 19 % wider
than the last): replicas of one deployment publish their :meth:`~CallMetrics.totals` and the
histograms add up, so percentiles across replicas come out of :func:`merged_stats` (to within a
bucket) without shipping every sample.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codeward.kernel.chain import Middleware, ToolCall
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.surface import ToolSurface

if TYPE_CHECKING:
    pass

DEFAULT_WINDOW = 1000
BUCKET_BASE_S = 1e-5
"""The upper bound of the first latency bucket (10 µs)."""
BUCKET_RATIO = 2 ** 0.25
"""Each bucket's bound over the one before: four buckets per doubling."""


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
    buckets: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolTotals:
    """Everything recorded of one tool since the start: what replicas publish and add up."""

    calls: int
    errors: int
    total_seconds: float
    max_seconds: float
    buckets: Mapping[int, int]
    """Latency histogram: bucket index (:func:`bucket_of`) → calls."""

    def as_json(self) -> dict[str, object]:
        return {"calls": self.calls, "errors": self.errors, "total_s": self.total_seconds, "max_s": self.max_seconds,
                "buckets": {str(k): v for k, v in sorted(self.buckets.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolTotals:
        """Read what :meth:`as_json` wrote (ValueError/TypeError/KeyError/AttributeError on anything else)."""
        return cls(int(data["calls"]), int(data["errors"]), float(data["total_s"]), float(data["max_s"]),
                   {int(k): int(v) for k, v in data["buckets"].items()})


def bucket_of(seconds: float) -> int:
    """The histogram bucket of a latency: the first whose upper bound is at least ``seconds``."""
    if seconds <= BUCKET_BASE_S:
        return 0
    return max(0, math.ceil(math.log(seconds / BUCKET_BASE_S, BUCKET_RATIO) - 1e-9))


def bucket_bound(index: int) -> float:
    return BUCKET_BASE_S * BUCKET_RATIO ** index


def merged_stats(name: str, parts: Sequence[ToolTotals]) -> ToolStats:
    """One tool's figures over several recorders (replicas): sums, the largest maximum, and
    percentiles from the added histograms (a bucket's upper bound, never above the maximum)."""
    calls = sum(p.calls for p in parts)
    longest = max((p.max_seconds for p in parts), default=0.0)
    buckets: dict[int, int] = {}
    for part in parts:
        for index, count in part.buckets.items():
            buckets[index] = buckets.get(index, 0) + count

    def pct(value: float) -> float:
        if not buckets:
            return 0.0
        rank, seen = max(1, math.ceil(value / 100 * sum(buckets.values()))), 0
        for index in sorted(buckets):
            seen += buckets[index]
            if seen >= rank:
                return min(bucket_bound(index), longest)
        return longest

    return ToolStats(name=name, calls=calls, errors=sum(p.errors for p in parts),
                     mean_ms=_ms(sum(p.total_seconds for p in parts) / calls) if calls else 0.0,
                     p50_ms=_ms(pct(50)), p90_ms=_ms(pct(90)), p99_ms=_ms(pct(99)), max_ms=_ms(longest))


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
        self._changes = 0

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
            index = bucket_of(seconds)
            entry.buckets[index] = entry.buckets.get(index, 0) + 1
            self._changes += 1

    @property
    def changes(self) -> int:
        """How many calls were recorded (a cheap "anything new?" for publishers)."""
        return self._changes

    @property
    def started_at(self) -> float:
        return self._started_wall

    def totals(self) -> dict[str, ToolTotals]:
        """Every tool's figures since the start, histograms included."""
        with self._lock:
            return {name: ToolTotals(e.calls, e.errors, e.total_seconds, e.max_seconds, dict(e.buckets))
                    for name, e in self._tools.items()}

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
