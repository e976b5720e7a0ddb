"""CallMetrics and the get_ui_performance / get_server_metrics tools."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from codeward.audit.metrics import CallMetrics, ToolTotals, bucket_bound, bucket_of, merged_stats, percentile
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome

Call = Callable[..., ToolOutcome]


def test_concurrent_records_are_all_counted() -> None:
    metrics = CallMetrics()
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(500):
            metrics.record(f"tool_{n % 2}", 0.001 * (i % 10), is_error=(i % 50 == 0))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snap = metrics.snapshot()
    assert snap.total_calls == 4000 and snap.total_errors == 80
    assert {(t.name, t.calls, t.errors) for t in snap.tools} == {("tool_0", 2000, 40), ("tool_1", 2000, 40)}


def test_latency_percentiles_and_ordering() -> None:
    metrics = CallMetrics()
    for ms in range(100, 0, -1):
        metrics.record("read_file", ms / 1000, is_error=False)
    metrics.record("web_search", 2.5, is_error=True)
    snap = metrics.snapshot()
    busiest, other = snap.tools
    assert busiest.name == "read_file"
    assert (busiest.p50_ms, busiest.p90_ms, busiest.p99_ms, busiest.max_ms) == (50.0, 90.0, 99.0, 100.0)
    assert busiest.mean_ms == pytest.approx(50.5)
    assert (other.name, other.calls, other.errors, other.p50_ms) == ("web_search", 1, 1, 2500.0)
    assert snap.uptime_seconds >= 0


def test_histograms_of_several_recorders_add_up_to_the_percentiles_of_all_calls() -> None:
    """Replicas publish totals with latency histograms; percentiles over the sum stay within one bucket."""
    import random

    rng = random.Random(7)
    recorders = [CallMetrics(), CallMetrics(), CallMetrics()]
    everything: list[float] = []
    for index, recorder in enumerate(recorders):
        for _ in range(2000):
            seconds = rng.lognormvariate(-6 + index, 1.0)  # each replica its own speed
            everything.append(seconds)
            recorder.record("read_file", seconds, is_error=rng.random() < 0.1)
    parts = [ToolTotals.from_json(r.totals()["read_file"].as_json()) for r in recorders]  # as published
    merged = merged_stats("read_file", parts)
    everything.sort()
    assert merged.calls == 6000 and merged.errors == sum(r.totals()["read_file"].errors for r in recorders)
    assert merged.max_ms == round(everything[-1] * 1000, 3)
    for pct, got in ((50, merged.p50_ms), (90, merged.p90_ms), (99, merged.p99_ms)):
        exact = percentile(everything, pct) * 1000
        assert exact <= got <= exact * 2 ** 0.25 + 1e-6, (pct, exact, got)
    assert abs(merged.mean_ms - sum(everything) / 6000 * 1000) < 0.01
    for seconds in (0.0, 1e-6, 1e-5, 0.00123, 1.0, 3600.0):
        index = bucket_of(seconds)
        assert seconds <= bucket_bound(index) and (index == 0 or bucket_bound(index - 1) < seconds)


def test_window_bounds_memory_but_not_counts() -> None:
    metrics = CallMetrics(window=10)
    for i in range(1000):
        metrics.record("t", 1.0 if i < 990 else 0.001, is_error=False)
    stats = metrics.snapshot().tools[0]
    assert stats.calls == 1000 and stats.p99_ms == 1.0  # only the last 10 calls (all fast) are in the window
    assert stats.max_ms == 1000.0  # the all-time maximum is kept
    with pytest.raises(ValueError):
        CallMetrics(window=0)


def test_percentile_edge_cases() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0], 0) == 1.0


def test_without_a_recorder_process_figures_only(call: Call) -> None:
    out = call("get_ui_performance")
    assert not out.is_error, out.text
    assert out.structured is not None
    assert out.structured["recording"] is False and out.structured["tools"] == []
    process = out.structured["process"]
    assert process["pid"] == os.getpid() and process["rss_bytes"] > 1_000_000 and process["threads"] >= 1
    assert "Call metrics are not being recorded" in out.text
    assert f"Process {os.getpid()}: memory" in out.text


def test_recorded_calls_show_per_tool(call: Call, ctx: ToolContext) -> None:
    metrics = CallMetrics()
    ctx.services = ctx.services.with_values(metrics)
    for arguments in ({"path": "missing.txt"}, {"path": "missing.txt"}, {}):
        done = call("read_file", **arguments)
        metrics.record(done.name, done.seconds, done.is_error)
    done = call("get_server_metrics")
    metrics.record(done.name, done.seconds, done.is_error)
    out = call("get_server_metrics")
    assert not out.is_error and out.structured is not None
    figures = out.structured
    assert figures["recording"] is True
    assert (figures["total_calls"], figures["total_errors"]) == (4, 3)
    rows = {t["name"]: (t["calls"], t["errors"]) for t in figures["tools"]}
    assert rows == {"read_file": (3, 3), "get_server_metrics": (1, 0)}
    assert "Calls: 4 total, 3 errors" in out.text
    assert out.text.splitlines()[-2].split()[:3] == ["read_file", "3", "3"]
    alias = call("get_ui_performance")
    assert alias.structured is not None and alias.structured["total_calls"] == 4


def test_metrics_tools_take_no_arguments(call: Call) -> None:
    out = call("get_server_metrics", verbose=True)
    assert out.is_error and "unknown argument 'verbose'" in out.text
