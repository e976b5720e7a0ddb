"""The serving runtime, put together in one place: every command that serves MCP runs :func:`serve_mcp`.

``serve``, ``serve --control``, ``gateway`` (with or without ``--control``) and replicas (any of
them over HTTP on a shared ``[state] url``) differ only in what they ask for (:class:`Serving`).
The order is always the same::

    shared state → audit → control plane → approvals → observers → build_stack → server → transport

so an HTTP server always has its audit — an approval answered through its ``/approvals`` endpoint
records who answered, on ``serve`` as on ``gateway`` — and always its DNS-rebinding protection for
a host that is not loopback. The control plane belongs to the applications above this floor; a
command hands one in (:class:`Plane`: what the runtime needs of it), and without one nothing is
observed and approvals go to the asker as they are.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import anyio

from codeward.config import Config, GatewayConfig
from codeward.kernel.chain import Middleware
from codeward.serving.stack import Approver, Stack, build_stack

if TYPE_CHECKING:
    from codeward.approval.policy import ConfirmCallback
    from codeward.audit.setup import HttpAudit
    from codeward.serving.shared_state.backend import StateBackend
    from codeward.serving.transport.http_stack import HttpStack
    from codeward.serving.transport.http_token import HttpAuth

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""Hosts only this machine reaches: a server bound to one needs no token and no Host check beyond the SDK's."""


@dataclass(frozen=True)
class HttpEndpoint:
    """Where an HTTP server listens and how it is authenticated."""

    host: str = "127.0.0.1"
    port: int = 8765
    token_env: str | None = None
    """The variable holding the token (``--token-env``); unset, a token is generated and saved."""
    no_auth: bool = False
    """No token at all (``--no-auth``, loopback only)."""
    token: str | None = None
    """A token chosen by a caller of the library (``run_gateway_cli(token=...)``): used as it is, and
    without one (and without ``token_env``) such a caller serves without authentication."""
    chosen: bool = False
    """The caller chose the token itself (``token``, possibly None): no token is generated or read."""

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"

    @property
    def allowed_hosts(self) -> list[str]:
        """The ``Host`` headers the server accepts beyond loopback's (DNS-rebinding protection): its own."""
        return [f"{self.host}:*"] if self.host not in LOOPBACK else []


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
    if serving.http is None:
        anyio.run(_serve, config, serving, plane, announce, None)
        return
    from codeward.serving.transport.http_stack import configured_http_stack  # only HTTP runs on it

    runtime = configured_http_stack(config.server)
    runtime.run(_serve, config, serving, plane, announce, runtime)


async def _serve(config: Config, serving: Serving, plane_factory: PlaneFactory | None,
                 announce: Callable[[Started], None], runtime: HttpStack | None) -> None:
    state, audit = _shared_state_and_audit(config, serving.http)
    async with (plane_factory() if plane_factory is not None else _no_plane()) as plane:
        stack = serving_stack(config, serving, plane, state, audit)
        server = stack.server(name=serving.name, roots_from_client=not stack.roots_given and serving.http is None)
        async with stack:
            plane.attach_server(stack, serving, state, audit)
            if serving.http is None:
                announce(Started(stack, serving))
                await server.run_stdio()
                return
            endpoint = serving.http
            with _auth(endpoint) as auth:
                announce(Started(stack, serving, auth, runtime))
                await server.run_http(host=endpoint.host, port=endpoint.port, token=auth.token,
                                      allowed_hosts=endpoint.allowed_hosts, state=state,
                                      users=audit.users if audit is not None else None,
                                      audit=audit.log if audit is not None else None, http_stack=runtime)


def _shared_state_and_audit(config: Config, http: HttpEndpoint | None
                            ) -> tuple[StateBackend | None, HttpAudit | None]:
    """What an HTTP server shares with its replicas (``[state]``) and its audit (``[audit]``): the users
    file is read here, so a bad one stops the start with its problem. Nothing for stdio."""
    if http is None:
        return None, None
    from codeward.audit.setup import http_audit  # HTTP only: users, the log file, the shared stream
    from codeward.serving.shared_state import open_state

    state = open_state(config.state)
    return state, http_audit(config, state, http.host, http.port)


def serving_stack(config: Config, serving: Serving, plane: Plane, state: StateBackend | None,
                  audit: HttpAudit | None) -> Stack:
    """Approvals (the plane's race, any replica's answer, the audit of each decision), the observers
    (the audit outermost, then the plane's), and the one stack built from them."""
    approver = None
    if serving.confirm is not None:  # the policy comes with the first stack that has someone to ask
        from codeward.approval.policy import approve_everything

        approvals = plane.approvals(serving.confirm, notify=serving.notify)
        if state is not None and state.shared and serving.confirm is not approve_everything:
            from codeward.serving.shared_state.approvals import SharedApprovals  # answered on any replica

            approvals = SharedApprovals(state, approvals)
        if audit is not None:
            approvals = audit.approvals(approvals)
        approver = Approver(approvals)
    observers = [*([audit.middleware()] if audit is not None else []), *plane.middleware()]
    return build_stack(config, serving.roots, gateway=serving.gateway, upstreams=serving.upstreams,
                       native=serving.native, meta=serving.meta, approver=approver, observers=observers,
                       pins=state.pins() if state is not None and serving.upstreams else None)


@contextlib.contextmanager
def _auth(endpoint: HttpEndpoint) -> Iterator[HttpAuth]:
    from codeward.serving.transport.http_token import HttpAuth, http_auth

    if endpoint.chosen:
        yield HttpAuth(endpoint.token)
        return
    with http_auth(host=endpoint.host, port=endpoint.port, token_env=endpoint.token_env,
                   no_auth=endpoint.no_auth) as auth:
        yield auth


@asynccontextmanager
async def _no_plane() -> AsyncIterator[Plane]:
    yield _NoPlane()
