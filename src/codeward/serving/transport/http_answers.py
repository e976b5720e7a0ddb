"""How each streamable-HTTP request is answered: one JSON body unless the client needs a stream.

The SDK's session manager answers every request of a server one way, fixed at start-up: an SSE
stream (the default: progress and request-scoped notifications reach the client, and with an
event store the stream can be resumed) or one ``application/json`` body (cheaper for both
sides, but whatever the call says before its result is lost). Most calls say nothing before
their result, and for them the stream is pure cost: in the handshake era each one is an SSE
response with a priming event stored in the event log, a ``retry`` hint and chunked framing
that the client has to parse, where one JSON body does (about half the CPU per call, server
and client alike, in ``bench/http_load.py``).

So codeward chooses per request, from what the request itself asks for:

- a stream when its ``_meta`` carries a ``progressToken`` (the client wants progress) or, in the
  2026-07-28 era, the ``io.modelcontextprotocol/logLevel`` opt-in (log messages ride the
  request's stream in that era); ``subscriptions/listen`` is always a stream (the SDK's rule);
- in the handshake era, also a stream for every call of a session whose client declared
  ``elicitation``, ``sampling`` or ``roots``: a call may ask it something (a gateway passes its
  upstreams' questions on), and the question rides the call's own stream;
- one JSON body otherwise. A log message of such a call goes on the session's GET stream.

A server whose state is shared by replicas (``[state] url``) keeps every answer a resumable
stream, so a call whose replica dies can be finished by another one
(:mod:`codeward.serving.shared_state.resume`); :func:`answer_by_need` is then not installed.

The choice reaches the SDK through a context variable read where the SDK reads its one
setting: the request runs in its own task, from this middleware down to the transport. The
variable names that task, so a task started from inside the request (the session's own task,
started by its ``initialize``) inherits the variable but not the choice: it reads the SDK's
stream behaviour, as does anything outside a request chosen for JSON.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import LOG_LEVEL_META_KEY, JSONRPCRequest

Scope = dict[str, Any]
Receive = Any
Send = Any

MESSAGE_KEY = "codeward.jsonrpc"
"""Where :class:`~codeward.serving.transport.http_guard.JsonRpcGuardMiddleware` leaves a POST's screened message."""

_ANSWERED_AS_JSON: ContextVar[asyncio.Task[Any] | None] = ContextVar("codeward_answered_as_json", default=None)


def _as_json() -> bool:
    """Whether the running task is a request chosen for one JSON body."""
    task = _ANSWERED_AS_JSON.get()
    return task is not None and task is asyncio.current_task()


def needs_stream(message: Any) -> bool:
    """Whether the client asked for something only a stream can carry (progress, per-request logs)."""
    if not isinstance(message, JSONRPCRequest):
        return False
    meta = (message.params or {}).get("_meta")
    return isinstance(meta, dict) and ("progressToken" in meta or LOG_LEVEL_META_KEY in meta)


def may_ask(message: Any) -> bool:
    """Whether an ``initialize`` declares a client that can be asked something mid-call."""
    if not isinstance(message, JSONRPCRequest) or message.method != "initialize":
        return False
    capabilities = (message.params or {}).get("capabilities")
    return isinstance(capabilities, dict) and bool({"elicitation", "sampling", "roots"} & capabilities.keys())


ASKABLE = "codeward_client_may_be_asked"
"""Set on a handshake-era session's transport whose client declared elicitation, sampling or roots."""


class AnswerByNeed:
    """ASGI middleware (inside the JSON-RPC guard): one JSON body for a POST that needs no stream."""

    def __init__(self, app: Any, sessions: Mapping[str, Any]) -> None:
        self.app = app
        self.sessions = sessions
        """The SDK's open handshake-era sessions: their transports by session id."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or MESSAGE_KEY not in scope:
            await self.app(scope, receive, send)
            return
        message = scope[MESSAGE_KEY]
        if may_ask(message):
            send = self._marking(send)
        stream = needs_stream(message) or getattr(self._session(scope), ASKABLE, False)
        token = _ANSWERED_AS_JSON.set(None if stream else asyncio.current_task())
        try:
            await self.app(scope, receive, send)
        finally:
            _ANSWERED_AS_JSON.reset(token)

    def _session(self, scope: Scope) -> Any:
        for name, value in scope.get("headers") or ():
            if name == b"mcp-session-id":
                return self.sessions.get(value.decode("latin-1"))
        return None

    def _marking(self, send: Send) -> Send:
        """``send`` that marks the session an ``initialize`` opens as one whose client may be asked."""

        async def marking(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers") or ():
                    if name == b"mcp-session-id":
                        transport = self.sessions.get(value.decode("latin-1"))
                        if transport is not None:
                            setattr(transport, ASKABLE, True)
            await send(message)

        return marking


class _ChoosingManager(StreamableHTTPSessionManager):
    """The SDK's session manager with ``json_response`` read per request (the 2026-07-28 era)."""

    @property  # type: ignore[override]
    def json_response(self) -> bool:
        return _as_json()

    @json_response.setter
    def json_response(self, value: bool) -> None:
        """Chosen per request by :class:`AnswerByNeed`; the constructor's value is not used."""


class _ChoosingTransport(StreamableHTTPServerTransport):
    """A handshake-era session's transport with its answer format read per request.

    Outside a request chosen for JSON (the session's message router, GET streams) it reads
    False: the SDK's stream behaviour, unchanged — so a notification about a streamed request
    is never dropped as if it had no stream.
    """

    @property  # type: ignore[override]
    def is_json_response_enabled(self) -> bool:
        return _as_json()

    @is_json_response_enabled.setter
    def is_json_response_enabled(self, value: bool) -> None:
        """Chosen per request by :class:`AnswerByNeed`; the constructor's value is not used."""


def answer_by_need(app: Any, server: Server[Any]) -> None:
    """Make ``app`` (built by ``server.streamable_http_app``) answer each request as it needs; add
    it inside the JSON-RPC guard (it reads the guard's screened message).

    The SDK builds its session manager and each session's transport itself, so their classes are
    switched to subclasses that add nothing but the per-request reading of the one setting.
    """
    manager = server._session_manager
    if manager is None:
        raise RuntimeError("the streamable-HTTP app must be built before its answers are chosen")
    manager.__class__ = _ChoosingManager
    admit = manager._admit_session

    def admit_choosing(requestor: Any) -> Any:
        transport = admit(requestor)
        if transport is not None:
            transport.__class__ = _ChoosingTransport
        return transport

    manager._admit_session = admit_choosing  # type: ignore[method-assign]
    app.add_middleware(AnswerByNeed, sessions=manager._server_instances)
