"""The serving runtime, put together in one place: every command that serves MCP runs :func:`serve_mcp`.

``serve``, ``serve --control``, ``gateway`` (with or without ``--control``) and replicas (any of
them over HTTP on a shared ``[state] url``) differ only in what they ask for (:class:`Serving`).
The order is always the same::

    shared state → audit → drain → control plane → approvals → observers → build_stack → server → transport

so an HTTP server always has its audit — an approval answered through its ``/approvals`` endpoint
records who answered, on ``serve`` as on ``gateway`` —, its roles, its probes (``/healthz``,
``/readyz``), its drain (:mod:`codeward.serving.drain`: SIGTERM stops it without losing a call, the
approvals it holds handed back) and always its DNS-rebinding protection for a host that is not
loopback. The control plane belongs to the applications above this floor; a command hands one in
(:class:`Plane`: what the runtime needs of it), and without one nothing is observed and approvals
go to the asker as they are.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Literal, Protocol

import anyio

from codeward.config import Config, GatewayConfig
from codeward.kernel.chain import Middleware
from codeward.serving.drain import Drain
from codeward.serving.stack import Approver, Stack, build_stack
from codeward.serving.transport.http_endpoint import HttpEndpoint

if TYPE_CHECKING:
    from codeward.approval.policy import ConfirmCallback
    from codeward.audit.setup import HttpAudit
    from codeward.serving.http_server import HttpServing
    from codeward.serving.shared_state.backend import StateBackend
    from codeward.serving.transport.http_stack import HttpStack
    from codeward.serving.transport.http_token import HttpAuth

@dataclass(frozen=True)
class Serving:
    """What one serving command asks for."""

    label: Literal["serve", "gateway"]
    roots: Sequence[str | Path] = ()
    gateway: GatewayConfig | None = None
    """``[mcp]`` as the command line changed it (``--url`` servers added); None: the configuration's."""
    upstreams: bool = False
    native: bool | str = True
    meta: bool = False
    confirm: ConfirmCallback | None = None
    """Who approves calls the policy does not allow outright; None: nobody in the server (the client
    confirms, as plain ``serve`` leaves it)."""
    notify: Callable[[str], None] | None = None
    """Where a decision taken elsewhere (the console, a timeout) is reported (the gateway's stderr)."""
    http: HttpEndpoint | None = None
    """Streamable HTTP on this endpoint; None: stdio."""
    approvals: str = "none"
    """How calls are approved, as the control plane's project view names it (``console``, ``none``)."""

    @property
    def name(self) -> str:
        return "codeward-gateway" if self.label == "gateway" else "codeward"

    @property
    def transport(self) -> str:
        return "http" if self.http is not None else "stdio"


@dataclass(frozen=True)
class Started:
    """A server about to answer: what a command prints in its banner."""

    stack: Stack
    serving: Serving
    auth: HttpAuth | None = None
    http_stack: HttpStack | None = None


class Plane(Protocol):
    """What the runtime needs of a control plane (:class:`codeward.apps.control.plane.ControlPlane`)."""

    def approvals(self, terminal: ConfirmCallback | None = None, *,
                  notify: Callable[[str], None] | None = None) -> ConfirmCallback: ...

    def middleware(self) -> list[Middleware]: ...

    def attach_server(self, stack: Stack, serving: Serving, state: StateBackend | None,
                      audit: HttpAudit | None) -> None: ...


class _NoPlane:
    """No control plane: approvals go to the asker as they are, nothing observes the calls."""

    def approvals(self, terminal: ConfirmCallback | None = None, *,
                  notify: Callable[[str], None] | None = None) -> ConfirmCallback:
        assert terminal is not None
        return terminal

    def middleware(self) -> list[Middleware]:
        return []

    def attach_server(self, stack: Stack, serving: Serving, state: StateBackend | None,
                      audit: HttpAudit | None) -> None:
        return None


PlaneFactory = Callable[[], AbstractAsyncContextManager[Plane]]


def serve_mcp(config: Config, serving: Serving, *, plane: PlaneFactory | None = None,
              announce: Callable[[Started], None] = lambda started: None) -> None:
    """Serve until the client closes the pipe (stdio) or the process is stopped (HTTP), on the event
    loop the transport wants (``[server] fast_http``: uvloop for HTTP when installed)."""
    from codeward.audit.log_lines import configure_server_logs

    if serving.http is None:
        if config.server.log_format == "json":  # a stdio server's stderr is its client's log: text as it was
            configure_server_logs("json", "stdio")
        anyio.run(_serve, config, serving, plane, announce, None)
        return
    from codeward.serving.http_server import http_serving  # HTTP only: the app, uvicorn, the fast stack, state

    http = http_serving(config, serving.http)
    configure_server_logs(config.server.log_format, http.state.replica, access_log=config.server.access_log)
    http.loop.run(_serve, config, serving, plane, announce, http)


async def _serve(config: Config, serving: Serving, plane_factory: PlaneFactory | None,
                 announce: Callable[[Started], None], http: HttpServing | None) -> None:
    state, audit = (http.state, http.audit) if http is not None else (None, None)
    drain = Drain(config.server.drain_timeout)
    async with (plane_factory() if plane_factory is not None else _no_plane()) as plane:
        stack = serving_stack(config, serving, plane, state, audit, drain)
        # the client's roots are the native tools' workspace: without native tools, nothing to ask it
        server = stack.server(name=serving.name, roots_from_client=not stack.roots_given and serving.http is None
                              and stack.native_tools)
        async with stack:
            plane.attach_server(stack, serving, state, audit)
            if http is None:
                announce(Started(stack, serving))
                with _hang_up_noted():
                    await server.run_stdio(drain)
                return
            endpoint = http.endpoint
            with http.auth() as auth:
                announce(Started(stack, serving, auth, http.loop))
                await server.run_http(host=endpoint.host, port=endpoint.port, token=auth.token,
                                      allowed_hosts=endpoint.allowed_hosts, state=state,
                                      users=audit.users if audit is not None else None,
                                      audit=audit.log if audit is not None else None, http_stack=http.loop,
                                      drain=drain, connecting=_connecting(stack),
                                      access_log=config.server.access_log)


def serving_stack(config: Config, serving: Serving, plane: Plane, state: StateBackend | None,
                  audit: HttpAudit | None, drain: Drain | None = None) -> Stack:
    """Approvals (the plane's race, any replica's answer, the audit of each decision), the observers
    (the audit outermost, then the plane's), and the one stack built from them."""
    approver = None
    if serving.confirm is not None:  # the policy comes with the first stack that has someone to ask
        from codeward.approval.policy import approve_everything

        approvals = plane.approvals(serving.confirm, notify=serving.notify)
        if state is not None and state.shared and serving.confirm is not approve_everything:
            from codeward.serving.shared_state.approvals import SharedApprovals  # answered on any replica

            approvals = SharedApprovals(state, approvals, drain=drain)
        if audit is not None:
            approvals = audit.approvals(approvals)
        approver = Approver(approvals)
    observers = [*([audit.middleware()] if audit is not None else []), *plane.middleware()]
    return build_stack(config, serving.roots, gateway=serving.gateway, upstreams=serving.upstreams,
                       native=serving.native, meta=serving.meta, approver=approver, observers=observers,
                       pins=state.pins() if state is not None and serving.upstreams else None)


@contextmanager
def _hang_up_noted() -> Iterator[None]:
    """SIGHUP on a stdio server is noted on stderr and changes nothing (the users file and the audit file
    an HTTP server reloads do not exist here); it used to end the server without a word."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def noted(signum: int, frame: FrameType | None) -> None:
        print("codeward: SIGHUP: a stdio server has nothing to reload; settings are read at start "
              "(the client restarts the server to change them)", file=sys.stderr, flush=True)

    original = signal.signal(signal.SIGHUP, noted)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, original)


def _connecting(stack: Stack) -> Callable[[], list[str]]:
    """The gateway's upstream servers still connecting (``/readyz`` waits for them)."""
    gateway = stack.gateway
    return lambda: [s.alias for s in (gateway.statuses() if gateway is not None else ()) if s.state == "connecting"]


@asynccontextmanager
async def _no_plane() -> AsyncIterator[Plane]:
    yield _NoPlane()
