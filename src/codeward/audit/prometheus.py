"""The call figures in the Prometheus text format (``GET /metrics`` asked by a scraper), through
``prometheus_client``'s own exposition.

Each replica exposes its own figures, labelled with its replica id: Prometheus scrapes every replica
(each one a target) and adds them up in PromQL (``sum by (tool) (rate(codeward_tool_calls_total[5m]))``),
so nothing is counted twice. The latency histogram is the recorder's own (geometric buckets, four per
doubling) read at the usual bounds: a call counts under a bound once its bucket's upper edge is within
it, so a count may show one bucket (at most 19 %) late — never early.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from codeward.audit.metrics import CallMetrics, ToolTotals, bucket_bound

CONTENT_TYPE = CONTENT_TYPE_LATEST
BOUNDS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""Histogram bounds (seconds): from a cached read to a long build."""

Gauge = tuple[str, float]
"""A gauge's help text and value."""


class CallCollector(Collector):
    """One replica's figures as Prometheus metric families, read fresh at each scrape."""

    def __init__(self, metrics: CallMetrics, replica: str, gauges: Callable[[], Mapping[str, Gauge]]) -> None:
        self.metrics = metrics
        self.replica = replica
        self.gauges = gauges

    def collect(self) -> Iterator[Metric]:
        labels = ["replica", "tool"]
        calls = CounterMetricFamily("codeward_tool_calls", "Tool calls finished (errors and denials included).",
                                    labels=labels)
        errors = CounterMetricFamily("codeward_tool_call_errors", "Tool calls that ended in an error or a denial.",
                                     labels=labels)
        seconds = HistogramMetricFamily("codeward_tool_call_seconds", "How long tool calls ran (a person's "
                                        "approval wait left out).", labels=labels)
        for name, totals in sorted(self.metrics.totals().items()):
            calls.add_metric([self.replica, name], totals.calls)
            errors.add_metric([self.replica, name], totals.errors)
            seconds.add_metric([self.replica, name], buckets=_cumulative(totals), sum_value=totals.total_seconds)
        yield calls
        yield errors
        yield seconds
        started = GaugeMetricFamily("codeward_start_time_seconds", "When this replica started (Unix time).",
                                    labels=["replica"])
        started.add_metric([self.replica], self.metrics.started_at)
        yield started
        for name, (text, value) in self.gauges().items():
            gauge = GaugeMetricFamily(name, text, labels=["replica"])
            gauge.add_metric([self.replica], value)
            yield gauge


def _cumulative(totals: ToolTotals) -> list[tuple[str, float]]:
    edges = sorted((bucket_bound(index), count) for index, count in totals.buckets.items())
    buckets = [(_bound(bound), float(sum(count for edge, count in edges if edge <= bound * (1 + 1e-9))))
               for bound in BOUNDS]
    return [*buckets, ("+Inf", float(totals.calls))]


def _bound(value: float) -> str:
    return f"{value:g}"


def exposition(metrics: CallMetrics, replica: str, gauges: Callable[[], Mapping[str, Gauge]] = dict) -> bytes:
    """The text a scraper reads (``text/plain; version=0.0.4``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CallCollector(metrics, replica, gauges))
    return bytes(generate_latest(registry))


def wants_prometheus(headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
    """Whether a ``GET /metrics`` asks for the Prometheus text: ``?format=prometheus``, or an ``Accept``
    naming the text or OpenMetrics format (what Prometheus sends); anything else gets the JSON figures."""
    if query.get("format") in ("prometheus", "text"):
        return True
    accept = headers.get("accept", "").lower()
    return "application/openmetrics-text" in accept or "text/plain" in accept
