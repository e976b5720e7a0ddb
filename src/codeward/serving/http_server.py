"""The HTTP side of a server: the streamable-HTTP app and its middleware, uvicorn, and what an HTTP server
shares with its replicas and audits. Imported only by a server that serves HTTP (``--http``); a stdio
server never loads Starlette's app, uvicorn, the fast stack or the shared state.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import EventSourceResponse

from codeward.audit.log import AuditLog
from codeward.audit.metrics import CallMetrics
from codeward.audit.setup import HttpAudit, http_audit
from codeward.audit.users import Directory, Role, UsersFileError, UsersMiddleware
from codeward.config import Config
from codeward.engines.jsonrpc.guard import MAX_MESSAGE_BYTES
from codeward.kernel.context import Services
from codeward.kernel.surface import ToolSurface
from codeward.serving.drain import Drain, say
from codeward.serving.shared_state import MemoryState, open_state
from codeward.serving.shared_state.backend import StateBackend
from codeward.serving.shared_state.http import add_approvals, add_state
from codeward.serving.shared_state.metrics import METRICS, MetricsPublisher
from codeward.serving.shared_state.resume import APPROVALS, AUDIT
from codeward.serving.transport.http_access_log import AccessLog, NoteRequest
from codeward.serving.transport.http_answers import answer_by_need
from codeward.serving.transport.http_drain import DrainGate
from codeward.serving.transport.http_endpoint import HttpEndpoint
from codeward.serving.transport.http_guard import JsonRpcGuardMiddleware
from codeward.serving.transport.http_health import HealthEndpoints
from codeward.serving.transport.http_stack import HttpStack, configured_http_stack
from codeward.serving.transport.http_stack import http_stack as choose_stack
from codeward.serving.transport.http_token import HttpAuth, http_auth
from codeward.serving.transport.stdio import freeze_startup_heap


class ServedApp(Protocol):
    """What the HTTP side needs of a server (:class:`codeward.serving.server.CodewardServer`)."""

    lowlevel: Server[Any]
    surface: ToolSurface
    services: Services

    def announcing(self) -> AbstractAsyncContextManager[None]: ...


def role_needed(method: str, path: str) -> Role:
    """What a request may only do with a role: answer and list held calls (approver), read the audit and
    the call figures (auditor), anything else — the MCP endpoint — call tools (agent)."""
    path = path.rstrip("/")
    if path == APPROVALS or path.startswith(APPROVALS + "/"):
        return Role.APPROVER
    if path in (AUDIT, METRICS):
        return Role.AUDITOR
    return Role.AGENT


def http_app(server: ServedApp, *, host: str = "127.0.0.1", path: str = "/mcp", token: str | None = None,
             allowed_hosts: Sequence[str] = (), state: StateBackend | None = None,
             users: Directory | None = None, audit: AuditLog | None = None, drain: Drain | None = None,
             connecting: Callable[[], Sequence[str]] = tuple, access_log: bool = False, **options: Any) -> Any:
    """A Starlette app serving streamable HTTP, with DNS-rebinding protection and optional bearer auth
    (the server's token, and a users file's tokens with their roles); resumable streams and calls in
    flight kept in ``state`` (this process's memory by default); ``/healthz`` and ``/readyz`` for probes.
    Each request is answered with one JSON body unless it asks for a stream
    (:mod:`codeward.serving.transport.http_answers`); with shared state, always with a resumable stream."""
    state = state or MemoryState()
    drain = drain or Drain(deadline=0.0)
    options.setdefault("event_store", state.events(""))
    options.setdefault("retry_interval", 1000)
    # The SDK refuses bodies over 4 MiB by default (since mcp 2.3); codeward's own guard
    # (JsonRpcGuardMiddleware, outermost) bounds them at MAX_MESSAGE_BYTES with a JSON-RPC answer.
    options.setdefault("max_request_body_size", MAX_MESSAGE_BYTES)
    security = None
    if allowed_hosts:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(allowed_hosts),
            allowed_origins=[f"http://{h}" for h in allowed_hosts] + [f"https://{h}" for h in allowed_hosts],
        )
    app = server.lowlevel.streamable_http_app(
        streamable_http_path=path, host=host, transport_security=security, **options
    )
    add_state(app, server.lowlevel, state, server.surface.tool_infos)
    if not state.shared and "json_response" not in options:  # replicas keep every answer resumable

        answer_by_need(app, server.lowlevel)
    app.add_middleware(DrainGate, drain=drain)
    if access_log:
        app.add_middleware(NoteRequest)
    app.add_middleware(JsonRpcGuardMiddleware)
    add_approvals(app, state, server.services.find(CallMetrics), audit, gauges=_gauges(drain, audit))
    directory = users or Directory(None)
    directory.accept_own(token)
    if token or directory.path is not None:  # nothing unauthenticated is read, and each path needs its role
        app.add_middleware(UsersMiddleware, users=directory, needs=role_needed)
    # outermost: probes carry no token
    app.add_middleware(HealthEndpoints, drain=drain, state=state, connecting=connecting)
    if access_log:  # outermost: every request, probes and refusals included
        app.add_middleware(AccessLog, users=directory)
    return app


def _gauges(drain: Drain, audit: AuditLog | None) -> Callable[[], dict[str, tuple[str, float]]]:
    """What a scraper reads beside the call figures: the work in flight, the drain, the audit's backlog."""

    def read() -> dict[str, tuple[str, float]]:
        gauges = {"codeward_requests_in_flight": ("JSON-RPC requests this replica is answering.", float(drain.running)),
                  "codeward_draining": ("1 while this replica drains (SIGTERM), else 0.", float(drain.draining))}
        if audit is not None:
            gauges["codeward_audit_unsent_records"] = (
                "Audit records waiting for the shared state (Redis) to answer again.", float(audit.unsent))
        return gauges

    return read


async def run_http(server: ServedApp, *, host: str, port: int, token: str | None = None,
                   state: StateBackend | None = None, users: Directory | None = None,
                   audit: AuditLog | None = None, http_stack: HttpStack | None = None, drain: Drain | None = None,
                   connecting: Callable[[], Sequence[str]] = tuple, access_log: bool = False,
                   **options: Any) -> None:
    """Serve :func:`http_app` with uvicorn on ``http_stack``'s parser (default: the fast one when
    installed) until SIGTERM or Ctrl-C has drained it (:mod:`codeward.serving.drain`); SIGHUP reloads
    the users file and reopens the audit file. The caller started the event loop, with
    :meth:`HttpStack.run` for uvloop."""
    drain = drain or Drain(deadline=0.0)
    users = users or Directory(None)
    EventSourceResponse.DEFAULT_PING_INTERVAL = SSE_PING_S  # the SDK makes its streams without a ping argument
    app = http_app(server, host=host, token=token, state=state, users=users, audit=audit, drain=drain,
                   connecting=connecting, access_log=access_log, **options)
    freeze_startup_heap()
    chosen = http_stack or choose_stack()
    # uvicorn's own lines go through the server's log format (log_config=None: no handlers of its own);
    # the access log is codeward's (http_access_log), with the user and the JSON-RPC request
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", log_config=None,
                            access_log=False,
                            timeout_graceful_shutdown=GRACE_AFTER_DRAIN_S, **chosen.uvicorn_options())
    async with server.announcing(), anyio.create_task_group() as group:
        metrics = server.services.find(CallMetrics)
        if state is not None and state.shared and metrics is not None:

            group.start_soon(MetricsPublisher(state, metrics).run)
        if audit is not None and audit.sink is not None:
            group.start_soon(audit.resend_forever)  # records Redis missed, sent when it answers again
        await DrainingServer(config, drain, lambda: _reload(users, audit)).serve()
        group.cancel_scope.cancel()


GRACE_AFTER_DRAIN_S = 2
"""Once drained, what is left are idle connections and standing event streams (a client's ``GET``): they
get this long to close before they are cut (the client reconnects to another replica)."""
SSE_PING_S = 1
"""Every event stream carries a comment this often while it has nothing to say, so a balancer's read
timeout can be short (``deploy/nginx.conf``: 5 s) — a hung replica is noticed within seconds — while
calls that run for an hour keep their stream."""


def _reload(users: Directory, audit: AuditLog | None) -> None:
    """SIGHUP: the users file read again (a broken one keeps the users as they were), the audit file
    reopened (after a rotation by ``mv``). Every other setting is read at start only."""
    try:
        say(f"SIGHUP: {users.reload()}")
    except UsersFileError as error:
        say(f"SIGHUP: the users file was not reloaded, the users stay as they were: {error}")
    if audit is not None and audit.path is not None:
        audit.close()
        say(f"SIGHUP: the audit file {audit.path} is reopened at its next record")


class DrainingServer(uvicorn.Server):
    """uvicorn's server with codeward's signals: SIGTERM and SIGINT drain, then stop (a second one stops
    at once); SIGHUP reloads. The signal is not raised again after the stop: a drained server's command
    exits 0, without a traceback."""

    def __init__(self, config: uvicorn.Config, drain: Drain, reload: Callable[[], None]) -> None:
        super().__init__(config)
        self.drain = drain
        self.reload = reload
        self._stopping: asyncio.Task[None] | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()

        def stop(signum: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(self._stop, signal.Signals(signum).name)

        def hang_up(signum: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(self.reload)

        handlers: dict[int, Callable[[int, FrameType | None], None]] = {
            signal.SIGTERM: stop, signal.SIGINT: stop, signal.SIGHUP: hang_up}
        originals = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
        try:
            yield
        finally:
            for sig, original in originals.items():
                signal.signal(sig, original)

    def _stop(self, name: str) -> None:
        if self._stopping is not None:
            say(f"{name} again: stopping now, {self.drain.running} calls cut")
            self.should_exit = self.force_exit = True
            return
        self._stopping = asyncio.ensure_future(self._drain_then_stop(name))

    async def _drain_then_stop(self, name: str) -> None:
        say(self.drain.starting_note(name))
        say(self.drain.finished_note(await self.drain.drain()))
        self.should_exit = True


@dataclass(frozen=True)
class HttpServing:
    """What an HTTP server adds around its stack: the event loop and parser ``[server]`` asks for, what it
    shares with its replicas (``[state]``), its audit (``[audit]``), and its endpoint's token."""

    endpoint: HttpEndpoint
    loop: HttpStack
    state: StateBackend
    audit: HttpAudit

    @contextlib.contextmanager
    def auth(self) -> Iterator[HttpAuth]:
        """The token clients must send: the caller's own choice, or ``--token-env``'s, or a generated one
        (saved where ``install-client`` finds it, removed at exit); none with ``--no-auth``."""
        endpoint = self.endpoint
        if endpoint.chosen:
            yield HttpAuth(endpoint.token)
            return
        with http_auth(host=endpoint.host, port=endpoint.port, token_env=endpoint.token_env,
                       no_auth=endpoint.no_auth) as auth:
            yield auth


def http_serving(config: Config, endpoint: HttpEndpoint) -> HttpServing:
    """The HTTP parts of one server; the users file is read here, so a bad one stops the start with its
    problem (nothing connects to Redis before the first use)."""
    state = open_state(config.state)
    return HttpServing(endpoint, configured_http_stack(config.server), state,
                       http_audit(config, state, endpoint.host, endpoint.port))
