"""Call figures across replicas: each replica publishes its own totals, any replica adds them up.

A replica's :class:`~codeward.audit.metrics.CallMetrics` records every call in its own memory (nothing on
a call's path touches Redis); :class:`MetricsPublisher` writes the totals to the shared state once a
second when something changed — one round trip, whatever the call rate — and ``GET /metrics`` on any
replica reads every replica's totals and adds them up (:func:`deployment_metrics`). With Redis down
the figures are this replica's own, with a warning saying so; publishing resumes when Redis answers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

import anyio
from starlette.types import Receive, Scope, Send

from codeward.audit.metrics import CallMetrics, ToolStats, ToolTotals, merged_stats
from codeward.audit.prometheus import CONTENT_TYPE, Gauge, exposition, wants_prometheus
from codeward.kernel.state_unavailable import StateUnavailable
from codeward.serving.shared_state.backend import StateBackend
from codeward.serving.shared_state.resume import _json, _naming

log = logging.getLogger(__name__)

PUBLISH_S = 1.0
"""How often a replica publishes its figures when calls were recorded since the last time."""
REFRESH_S = 5.0
"""A replica with nothing new publishes anyway this often (a Redis that restarted empty learns them again)."""
METRICS = "/metrics"


class MetricsPublisher:
    """Publishes one replica's figures to the shared state, off the calls' path."""

    def __init__(self, state: StateBackend, metrics: CallMetrics) -> None:
        self.state = state
        self.metrics = metrics
        self._down = False

    def figures(self) -> dict[str, Any]:
        return {"started": self.metrics.started_at, "seen": time.time(),
                "tools": {name: totals.as_json() for name, totals in self.metrics.totals().items()}}

    async def run(self) -> None:
        published, last = -1, 0.0
        while True:
            await anyio.sleep(PUBLISH_S)
            changes = self.metrics.changes
            if changes == published and time.monotonic() - last < REFRESH_S:
                continue
            try:
                await self.state.publish_metrics(self.figures())
            except StateUnavailable as error:
                if not self._down:
                    log.warning("%s; GET /metrics shows this replica's figures only until then", error)
                self._down = True
                continue
            if self._down:
                log.warning("codeward's shared state answers again: this replica's call figures are published")
            self._down = False
            published, last = changes, time.monotonic()


async def deployment_metrics(state: StateBackend, local: CallMetrics) -> dict[str, Any]:
    """Every replica's call figures and their sum (``tool_calls``), or this replica's alone with a
    ``warning`` when the shared state cannot be read."""
    mine = {"started": local.started_at, "seen": time.time(),
            "tools": {name: totals.as_json() for name, totals in local.totals().items()}}
    warning = None
    try:
        published = await state.replica_metrics()
    except StateUnavailable as error:
        published, warning = {}, f"{error}; these figures are this replica's only"
    published[state.replica] = mine  # fresher than what it published last
    replicas: dict[str, dict[str, Any]] = {}
    every: dict[str, list[ToolTotals]] = {}
    for replica, figures in sorted(published.items()):
        tools = _tools(replica, figures)
        for name, totals in tools.items():
            every.setdefault(name, []).append(totals)
        replicas[replica] = {"started": figures.get("started"), "seen": figures.get("seen"),
                             "tool_calls": _view([merged_stats(name, [t]) for name, t in tools.items()])}
    answer: dict[str, Any] = {
        "replica": state.replica, "shared": state.shared and warning is None,
        "tool_calls": _view([merged_stats(name, parts) for name, parts in every.items()]),
        "replicas": replicas,
    }
    if warning is not None:
        answer["warning"] = warning
    return answer


def _tools(replica: str, figures: Mapping[str, Any]) -> dict[str, ToolTotals]:
    tools: dict[str, ToolTotals] = {}
    for name, data in (figures.get("tools") or {}).items():
        try:
            tools[str(name)] = ToolTotals.from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("replica %s published unreadable figures for %s; left out", replica, name)
    return tools


def _view(stats: list[ToolStats]) -> dict[str, Any]:
    """The shape of the console's figures: totals, then each tool, busiest first."""
    stats.sort(key=lambda s: (-s.calls, s.name))
    return {"total": sum(s.calls for s in stats), "errors": sum(s.errors for s in stats),
            "by_name": [{"name": s.name, "calls": s.calls, "errors": s.errors, "mean_ms": s.mean_ms,
                         "p50_ms": s.p50_ms, "p90_ms": s.p90_ms, "p99_ms": s.p99_ms, "max_ms": s.max_ms}
                        for s in stats]}


class MetricsEndpoint:
    """``GET /metrics`` on a replica's HTTP port (behind its bearer token, for the auditor role): the
    deployment's call figures as JSON, or — asked by a scraper — this replica's own in the Prometheus
    text format (:mod:`codeward.audit.prometheus`) with ``gauges`` (calls in flight, the drain, the
    audit records waiting for Redis)."""

    def __init__(self, app: Any, state: StateBackend, metrics: CallMetrics,
                 gauges: Callable[[], Mapping[str, Gauge]] = dict) -> None:
        self.app = app
        self.state = state
        self.metrics = metrics
        self.gauges = gauges

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").rstrip("/") != METRICS:
            await self.app(scope, receive, send)
            return

        named = _naming(send, self.state.replica)
        if scope["method"] != "GET":
            await _json(named, 405, {"error": "method not allowed", "message": "GET /metrics reads the call figures"})
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if wants_prometheus(headers, query):
            body = exposition(self.metrics, self.state.replica, self.gauges)
            await named({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store")]})
            await named({"type": "http.response.body", "body": body})
            return
        await _json(named, 200, await deployment_metrics(self.state, self.metrics))
