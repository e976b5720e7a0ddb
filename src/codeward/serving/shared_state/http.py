"""Putting a state backend under the SDK's streamable-HTTP app: one event log per session, and
sessions any replica can take up.

This reaches into the SDK's session manager (``mcp>=2.3,<3`` is pinned; the replica tests cover
it): the SDK hands one ``EventStore`` to all sessions and uses the request id as the stream id, so
two sessions' request 1 would share a stream — codeward gives each session its own log; and a
session exists only in the process that opened it — codeward replays the session's ``initialize``
(kept in shared state) to open it again, under the same id, on the replica a request reaches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport

from codeward.kernel.surface import ToolInfo
from codeward.serving.shared_state.backend import StateBackend
from codeward.serving.shared_state.metrics import MetricsEndpoint
from codeward.serving.shared_state.resume import ApprovalsEndpoint, SharedStateMiddleware

if TYPE_CHECKING:
    from mcp.server.streamable_http import EventStore

    from codeward.audit.log import AuditLog
    from codeward.audit.metrics import CallMetrics
    from codeward.audit.prometheus import Gauge

ADOPTION_ID = "codeward-adopt"
"""The request id the replayed ``initialize`` carries (its events never reach a client)."""


class Sessions:
    """The SDK's sessions on this replica: scoped event logs, and taking up another replica's session."""

    def __init__(self, server: Server[Any], state: StateBackend) -> None:
        manager = server._session_manager
        if manager is None:
            raise RuntimeError("the streamable-HTTP app must be built before its sessions are scoped")
        self._manager = manager
        self._state = state
        self._open = manager._server_instances
        self._lock = anyio.Lock()
        admit = manager._admit_session

        def admit_scoped(requestor: Any) -> Any:
            transport = admit(requestor)
            if transport is not None and transport.mcp_session_id:
                transport._event_store = cast("EventStore", state.events(transport.mcp_session_id))
            return transport

        manager._admit_session = admit_scoped  # type: ignore[method-assign]

    def is_local(self, session_id: str) -> bool:
        return session_id in self._open

    async def adopt(self, session_id: str, initialize: dict[str, Any], scope: dict[str, Any]) -> bool:
        """Open ``session_id`` here by replaying its ``initialize`` (and ``initialized``); True if open."""
        async with self._lock:
            if session_id in self._open:
                return True
            manager = self._manager
            transport = StreamableHTTPServerTransport(
                mcp_session_id=session_id, is_json_response_enabled=manager.json_response,
                event_store=cast("EventStore", self._state.events(session_id)),
                security_settings=manager.security_settings, retry_interval=manager.retry_interval,
                idle_timeout=manager.session_idle_timeout)
            self._open[session_id] = transport
            version = str((initialize.get("params") or {}).get("protocolVersion", ""))
            opening = {**initialize, "id": ADOPTION_ID}
            await manager._serve_opening_request(transport, *_request(scope, opening, session_id, ""))
            if session_id not in self._open:
                return False
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await transport.handle_request(*_request(scope, initialized, session_id, version))
            return True


def _request(scope: dict[str, Any], body: dict[str, Any], session_id: str, version: str) -> tuple[Any, Any, Any]:
    """An internal POST (scope, receive, send) carrying ``body``; its answer is dropped."""
    headers = [(k, v) for k, v in scope.get("headers") or [] if k in (b"host", b"origin", b"authorization")]
    headers += [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream"),
                (b"mcp-session-id", session_id.encode())]
    if version:
        headers.append((b"mcp-protocol-version", version.encode()))
    internal = {**scope, "method": "POST", "headers": headers, "query_string": b""}
    data = json.dumps(body).encode()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        return None

    return internal, receive, send


def add_state(app: Any, server: Server[Any], state: StateBackend, tools: Callable[[], Sequence[ToolInfo]]) -> None:
    """Serve ``app`` (built by ``server.streamable_http_app``) with ``state`` shared across replicas."""
    finisher = None
    if state.shared:  # the in-process client it runs calls through is imported only here
        from codeward.serving.shared_state.takeover import CallFinisher

        finisher = CallFinisher(server, tools)
    app.add_middleware(SharedStateMiddleware, state=state, sessions=Sessions(server, state), finisher=finisher)


def add_approvals(app: Any, state: StateBackend, metrics: CallMetrics | None = None,
                  audit: AuditLog | None = None, gauges: Callable[[], Mapping[str, Gauge]] = dict) -> None:
    """``/approvals``, ``/audit`` and ``/metrics`` (add them outside the JSON-RPC guard, inside the bearer
    token); answers given on ``/approvals`` go to ``audit`` with the user who gave them; ``gauges`` join
    the Prometheus figures."""
    app.add_middleware(ApprovalsEndpoint, state=state, audit=audit)
    if metrics is not None:
        app.add_middleware(MetricsEndpoint, state=state, metrics=metrics, gauges=gauges)
