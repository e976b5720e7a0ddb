"""ASGI middleware that makes an HTTP replica one of many: calls recorded in shared state, streams
resumed across replicas, a clear error when the shared state is out of reach.

- A ``tools/call`` posted in an MCP session is recorded (its JSON-RPC request and a lease this
  replica renews) before the SDK runs it; any request that finds the backend unreachable is
  answered ``503`` with a JSON-RPC error naming Redis, at once — nothing waits on it.
- A request in a session another replica opened is served here once that session is taken up
  (its ``initialize``, kept in shared state, replayed under the same session id).
- A ``GET`` with ``Last-Event-ID`` (the client's stream broke: the load balancer moved it, or its
  replica died) is served from the shared event log: the events after that id, then new ones as
  any replica stores them, until the call's answer. If the lease of
  the replica running the call lapses, this replica claims the call and finishes it
  (:mod:`codeward.serving.shared_state.takeover`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl

import anyio
from anyio.abc import TaskGroup

from codeward.audit.users import USER_KEY
from codeward.kernel.state_unavailable import StateUnavailable
from codeward.serving.shared_state.backend import CallRecord, EventLog, StateBackend

if TYPE_CHECKING:
    from codeward.audit.log import AuditLog
    from codeward.serving.shared_state.takeover import CallFinisher

log = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]

TAIL_WAIT_S = 1.0
APPROVALS = "/approvals"
AUDIT = "/audit"
MAX_BODY = 4 * 1024 * 1024


class SessionHost(Protocol):
    """The SDK's sessions on this replica (:class:`codeward.serving.shared_state.http.Sessions`)."""

    def is_local(self, session_id: str) -> bool: ...

    async def adopt(self, session_id: str, initialize: dict[str, Any], scope: dict[str, Any]) -> bool: ...


class SharedStateMiddleware:
    """Between the HTTP guards and the SDK's streamable-HTTP app; see the module docstring."""

    def __init__(self, app: Any, state: StateBackend, sessions: SessionHost,
                 finisher: CallFinisher | None = None) -> None:
        self.app = app
        self.state = state
        self.sessions = sessions
        self.finisher = finisher
        self._group: TaskGroup | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" and self.state.shared:
            await self._lifespan(scope, receive, send)
            return
        if scope["type"] != "http" or not self.state.shared:
            await self.app(scope, receive, send)
            return
        send = _naming(send, self.state.replica)
        headers = _headers(scope)
        session = headers.get("mcp-session-id")
        last_event = headers.get("last-event-id")
        if scope["method"] == "GET" and session and last_event:
            await self._resume(session, last_event, receive, send)
            return
        opening: dict[str, Any] | None = None
        if scope["method"] == "POST":
            body, receive = await _buffered(receive)
            message = _parse(body)
            try:
                running_on = await self._record(message, session)
            except StateUnavailable as error:
                await _json_error(send, 503, str(error), message.get("id") if message else None)
                return
            if running_on is not None and session and message is not None:
                await self._answer_twice_sent(session, str(message["id"]), running_on, receive, send)
                return
            if message is not None and message.get("method") == "initialize" and not session:
                opening = message
        if session and not self.sessions.is_local(session):
            try:
                await self._take_up(session, scope)
            except StateUnavailable as error:
                await _json_error(send, 503, str(error), None)
                return
        if opening is None:
            await self.app(scope, receive, send)
            return
        opened: list[str] = []
        await self.app(scope, receive, _opened(send, opened))
        if opened:
            try:
                await self.state.remember_session(opened[0], opening)
            except StateUnavailable as error:
                log.warning("%s", error)

    async def _take_up(self, session: str, scope: Scope) -> None:
        """Open here a session another replica opened (the SDK answers 404 to one nobody opened)."""
        initialize = await self.state.session_opening(session)
        if initialize is not None and await self.sessions.adopt(session, initialize, scope):
            log.info("took up session %s opened on another replica", session[:64])

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._renew)
            try:
                await self.app(scope, receive, send)
            finally:
                self._group = None
                group.cancel_scope.cancel()
        await self.state.aclose()

    async def _renew(self) -> None:
        """Keep this replica's leases alive (a third of the lease apart)."""
        while True:
            await anyio.sleep(1.0)
            try:
                await self.state.renew_leases()
            except StateUnavailable as error:
                log.warning("%s", error)

    async def _record(self, message: dict[str, Any] | None, session: str | None) -> str | None:
        """Record a call in flight (or just check the backend answers). The replica already running the
        same request of the same session, if any (it was sent twice); raises StateUnavailable.

        A request of no session that opens none (the 2026-07-28 protocol) has nothing to share: it is not
        checked here, so a read answers while Redis is down; what it does need (an approval, the gateway's
        pins) fails on its own with the error naming Redis."""
        if message is None or "id" not in message or "method" not in message:
            return None
        if session and message["method"] == "tools/call":
            return await self.state.begin_call(CallRecord(session, str(message["id"]), message, self.state.replica))
        if session or message["method"] == "initialize":
            await self.state.check()
        return None

    async def _answer_twice_sent(self, session: str, stream: str, running_on: str, receive: Receive,
                                 send: Send) -> None:
        """A request this session already sent is running (a balancer retried it here after a timeout, while
        the replica it first went to hung but lives): it is not run again — this response carries that
        run's events and answer, from the shared log (taken over as any call if its replica dies)."""
        log.warning("request %s of session %s was sent twice (a balancer's retry?): it runs on replica %s; "
                    "relaying that run's answer instead of running it again", stream[:64], session[:64], running_on)
        await self._stream(session, stream, "0-0", receive, send)

    async def _resume(self, session: str, last_event: str, receive: Receive, send: Send) -> None:
        events = self.state.events(session)
        try:
            stream = await events.stream_of(last_event)
        except StateUnavailable as error:
            await _json_error(send, 503, str(error), None)
            return
        if stream is None:
            await _json_error(send, 404, f"event {last_event!r} of session {session[:64]!r} is not in codeward's "
                              "shared state (never stored, or expired); send the request again", None)
            return
        await self._stream(session, stream, last_event, receive, send)

    async def _stream(self, session: str, stream: str, cursor: str, receive: Receive, send: Send) -> None:
        """An event stream of one call's events stored after ``cursor``, until its answer."""
        events = self.state.events(session)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform"),
            (b"x-accel-buffering", b"no"), (b"mcp-session-id", session.encode())]})
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_disconnect, receive, group)
            try:
                await self._tail(events, session, stream, cursor, send)
            except StateUnavailable as error:
                log.warning("%s", error)  # the client reconnects and resumes once Redis is back
            group.cancel_scope.cancel()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _tail(self, events: EventLog, session: str, stream: str, cursor: str, send: Send) -> None:
        claimed = False
        while True:
            batch = await events.read_after(cursor, TAIL_WAIT_S)
            for event in batch:
                cursor = event.event_id
                if event.stream_id != stream or event.message is None:
                    continue
                await send({"type": "http.response.body", "more_body": True,
                            "body": f"event: message\nid: {event.event_id}\ndata: {event.message}\n\n".encode()})
                if _is_answer(event.message):
                    return
            if batch:
                continue
            await send({"type": "http.response.body", "body": b": waiting\n\n", "more_body": True})
            if claimed or self.finisher is None or await self.state.lease_alive(session, stream):
                continue
            record = await self.state.call_record(session, stream)
            if record is not None and await self.state.claim(session, stream):
                claimed = True
                self._start(self._finish, record, events)

    def _start(self, func: Callable[..., Any], *args: Any) -> None:
        if self._group is not None:
            self._group.start_soon(func, *args)

    async def _finish(self, record: CallRecord, events: EventLog) -> None:
        assert self.finisher is not None
        try:
            await self.finisher.finish(record, events)
        except StateUnavailable as error:
            log.warning("%s", error)
        except Exception:
            log.exception("finishing call %s of session %s failed", record.stream_id, record.session_id)
        finally:
            try:
                await self.state.end_call(record.session_id, record.stream_id)
            except StateUnavailable as error:
                log.warning("%s", error)


class ApprovalsEndpoint:
    """``/approvals`` and ``/audit`` on a replica's HTTP port (behind its bearer token, before the
    JSON-RPC guard: these bodies are not JSON-RPC): pending approvals of every replica, answering one,
    and the newest audit records of every replica (``GET /audit?count=N``)."""

    def __init__(self, app: Any, state: StateBackend, audit: AuditLog | None = None) -> None:
        self.app = app
        self.state = state
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _is_approvals(scope.get("path", "")):
            await self._approvals(scope, receive, _naming(send, self.state.replica))
            return
        if scope["type"] == "http" and scope.get("path", "").rstrip("/") == AUDIT:
            await self._audit(scope, _naming(send, self.state.replica))
            return
        await self.app(scope, receive, send)

    async def _audit(self, scope: Scope, send: Send) -> None:
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        count = query.get("count", "50")
        if scope["method"] != "GET" or not count.isdigit() or not 1 <= int(count) <= 10_000:
            await _json(send, 400, {"error": "bad request", "message": "GET /audit?count=N with N from 1 to 10000"})
            return
        try:
            await _json(send, 200, {"records": await self.state.recent_audit(int(count))})
        except StateUnavailable as error:
            await _json(send, 503, {"error": "state unavailable", "message": str(error)})

    async def _approvals(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET /approvals``: every pending approval, on any replica; ``POST /approvals/<id>`` with
        ``{"approved": true|false}`` answers one, wherever its call waits."""
        path = scope["path"].rstrip("/")
        try:
            if scope["method"] == "GET" and path == APPROVALS:
                await _json(send, 200, {"approvals": await self.state.pending_approvals()})
                return
            if scope["method"] != "POST" or path == APPROVALS:
                await _json(send, 405, {"error": "method not allowed", "message": "GET /approvals lists pending "
                            "approvals; POST /approvals/<id> with {\"approved\": true} or false answers one"})
                return
            approval_id = path.removeprefix(APPROVALS + "/")
            body = await _small_body(receive)
            if body is None:
                await _json(send, 413, {"error": "too large", "message": "an answer is a small JSON object"})
                return
            answer = _parse(body)
            if answer is None or not isinstance(answer.get("approved"), bool):
                await _json(send, 400, {"error": "bad answer",
                                        "message": 'send {"approved": true} or {"approved": false} as JSON'})
                return
            from codeward.serving.shared_state.approvals import Gone, OwnCall, answer_pending

            by = str(scope.get(USER_KEY) or f"replica {self.state.replica}")  # the user whose token answered
            decided = await answer_pending(self.state, approval_id, answer["approved"], by, self.audit)
        except StateUnavailable as error:
            await _json(send, 503, {"error": "state unavailable", "message": str(error)})
            return
        except OwnCall as error:
            await _json(send, 403, {"error": "own call", "message": str(error)})
            return
        except Gone as error:
            await _json(send, 410, {"error": "gone", "message": str(error)})
            return
        if decided is None:
            await _json(send, 404, {"error": "unknown approval", "message": f"no pending approval {approval_id!r} "
                                    "(GET /approvals lists them; answered ones expire, and a replica that stops "
                                    "withdraws those it held)"})
        elif not decided:
            await _json(send, 409, {"error": "already answered",
                                    "message": f"approval {approval_id!r} was already answered"})
        else:
            await _json(send, 200, {"id": approval_id, "approved": answer["approved"]})


async def _small_body(receive: Receive, limit: int = 65536) -> bytes | None:
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return body
        body += bytes(message.get("body", b""))
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return body


def _naming(send: Send, replica: str) -> Send:
    """Every response says which replica answered (``X-Codeward-Replica``), for operators and logs."""

    async def named(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"x-codeward-replica", replica.encode())]}
        await send(message)

    return named


def _is_approvals(path: str) -> bool:
    return path.rstrip("/") == APPROVALS or path.startswith(APPROVALS + "/")


async def _json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}


def _is_answer(text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and "id" in data and ("result" in data or "error" in data)


def _parse(body: bytes) -> dict[str, Any] | None:
    """The posted JSON-RPC message, or None (the SDK answers malformed bodies and batches)."""
    try:
        message = json.loads(body) if body else None
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _opened(send: Send, opened: list[str]) -> Send:
    """A send that notes the session id a successful ``initialize`` answer carries."""

    async def noting(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message.get("status", 500) < 400:
            for key, value in message.get("headers", []):
                if key.lower() == b"mcp-session-id":
                    opened.append(value.decode("latin-1"))
        await send(message)

    return noting


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """Read the whole request body (the guards in front bound its size) and a receive that replays it."""
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), receive
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(chunks)
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return body, replay


async def _cancel_on_disconnect(receive: Receive, group: TaskGroup) -> None:
    while (await receive()).get("type") != "http.disconnect":
        pass
    group.cancel_scope.cancel()


async def _json_error(send: Send, status: int, message: str, request_id: Any) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
