"""The HTTP side of a server: the streamable-HTTP app and its middleware, uvicorn, and what an HTTP server
shares with its replicas and audits. Imported only by a server that serves HTTP (``--http``); a stdio
server never loads Starlette's app, uvicorn, the fast stack or the shared state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

from codeward.audit.log import AuditLog
from codeward.audit.metrics import CallMetrics
from codeward.audit.setup import HttpAudit, http_audit
from codeward.audit.users import UsersMiddleware
from codeward.config import Config
from codeward.kernel.context import Services
from codeward.kernel.surface import ToolSurface
from codeward.serving.shared_state import MemoryState, open_state
from codeward.serving.shared_state.backend import StateBackend
from codeward.serving.shared_state.http import add_approvals, add_state
from codeward.serving.shared_state.metrics import MetricsPublisher
from codeward.serving.transport.http_answers import answer_by_need
from codeward.serving.transport.http_auth import BearerTokenMiddleware
from codeward.serving.transport.http_endpoint import HttpEndpoint
from codeward.serving.transport.http_guard import JsonRpcGuardMiddleware
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


def http_app(server: ServedApp, *, host: str = "127.0.0.1", path: str = "/mcp", token: str | None = None,
             allowed_hosts: Sequence[str] = (), state: StateBackend | None = None,
             users: Mapping[str, str] | None = None, audit: AuditLog | None = None, **options: Any) -> Any:
    """A Starlette app serving streamable HTTP, with DNS-rebinding protection and optional bearer auth;
    resumable streams and calls in flight kept in ``state`` (this process's memory by default).
    Each request is answered with one JSON body unless it asks for a stream
    (:mod:`codeward.serving.transport.http_answers`); with shared state, always with a resumable stream."""


    state = state or MemoryState()
    options.setdefault("event_store", state.events(""))
    options.setdefault("retry_interval", 1000)
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
    app.add_middleware(JsonRpcGuardMiddleware)
    add_approvals(app, state, server.services.find(CallMetrics), audit)
    if users:  # added last, so outermost: nothing unauthenticated is read

        app.add_middleware(UsersMiddleware, users=users, token=token)
    elif token:
        app.add_middleware(BearerTokenMiddleware, token=token)
    return app


async def run_http(server: ServedApp, *, host: str, port: int, token: str | None = None,
                   state: StateBackend | None = None, users: Mapping[str, str] | None = None,
                   audit: AuditLog | None = None, http_stack: HttpStack | None = None, **options: Any) -> None:
    """Serve :func:`http_app` with uvicorn on ``http_stack``'s parser (default: the fast one when
    installed); the caller started the event loop, with :meth:`HttpStack.run` for uvloop."""


    app = http_app(server, host=host, token=token, state=state, users=users, audit=audit, **options)
    freeze_startup_heap()
    chosen = http_stack or choose_stack()
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                            **chosen.uvicorn_options())
    async with server.announcing(), anyio.create_task_group() as group:
        metrics = server.services.find(CallMetrics)
        if state is not None and state.shared and metrics is not None:

            group.start_soon(MetricsPublisher(state, metrics).run)
        await uvicorn.Server(config).serve()
        group.cancel_scope.cancel()


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
