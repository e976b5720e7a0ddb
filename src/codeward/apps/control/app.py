"""The Hook API as a Starlette app: REST endpoints, an SSE stream and the web console.

Handlers only read copies from :class:`~codeward.apps.control.state.ControlState` or hand it a
change; they never touch the agent or the gateway directly: what changes the session goes
through the run's :class:`~codeward.apps.control.gui.GuiQueue`, checked on arrival and applied on
the session's loop. ``POST /api/project`` and ``POST /api/session`` replace the records scripts
read back (as in the seed) and, in a chat, set its fields and conversation; the workspace roots
and the approval policy's rules are not reachable over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from codeward.approval.asks import AskTimeout
from codeward.apps.control.gui import (
    OWN_CALL_HINT,
    PROTECTED_PROJECT_KEYS,
    GuiError,
    StateDriver,
    diagnostics,
    mma_status,
    own_call_refusal,
    parse_task,
)
from codeward.apps.control.security import ControlGuard
from codeward.apps.control.state import ControlState
from codeward.audit.users import USER_KEY
from codeward.kernel.state_unavailable import StateUnavailable

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from codeward.apps.control.session_logs import SessionLogs
    from codeward.audit.users import Directory

DEFAULT_ASK_TIMEOUT = 60.0
MAX_ASK_TIMEOUT = 3600.0
MAX_BODY_BYTES = 1024 * 1024
PING_SECONDS = 15.0
LOGGED_BODY_CHARS = 4000


class BadRequest(Exception):
    """A request the API cannot use; becomes a 400 (or ``status``) with the message and hint."""

    def __init__(self, message: str, hint: str, status: int = 400) -> None:
        super().__init__(message)
        self.hint = hint
        self.status = status


def create_app(state: ControlState, token: str, *, logs: SessionLogs | None = None,
               ask_timeout: float = DEFAULT_ASK_TIMEOUT, extra_hosts: tuple[str, ...] = (),
               any_host: bool = False, users: Callable[[], Directory | None] | None = None) -> Any:
    """The ASGI app: routes behind :class:`ControlGuard` (and the API-hook log, when given)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    api = _Api(state, ask_timeout)
    routes = [
        Route("/", api.root, methods=["GET"]),
        Route("/status", api.status, methods=["GET"]),
        Route("/api/project", api.project, methods=["GET", "POST"]),
        Route("/api/session", api.session, methods=["GET", "POST"]),
        Route("/api/performance", api.performance, methods=["GET"]),
        Route("/api/events", api.events, methods=["GET"]),
        Route("/api/events/stream", api.stream, methods=["GET"]),
        Route("/api/calls", api.calls, methods=["GET"]),
        Route("/api/asks", api.asks, methods=["GET"]),
        Route("/api/servers", api.servers, methods=["GET"]),
        Route("/api/ask", api.ask, methods=["POST"]),
        Route("/api/ask/respond", api.respond, methods=["POST"]),
        Route("/api/replicas/approvals", api.replica_approvals, methods=["GET"]),
        Route("/api/replicas/approvals/{approval_id}", api.answer_replica, methods=["POST"]),
        Route("/api/gui", api.gui, methods=["POST"]),
        Route("/api/gui/value", api.gui_value, methods=["GET"]),
        Route("/api/gui/value/{item:path}", api.gui_value, methods=["GET"]),
        Route("/api/gui/diagnostics", api.gui_diagnostics, methods=["GET"]),
        Route("/api/gui/mma_status", api.gui_mma_status, methods=["GET"]),
        Mount("/console", StaticFiles(packages=[("codeward.apps.control", "static")], html=True), name="console"),
    ]
    app: Starlette = Starlette(routes=routes, exception_handlers={
        404: _not_found, 405: _not_allowed, BadRequest: _bad_request})
    guarded = ControlGuard(app, token, extra_hosts=extra_hosts, any_host=any_host,
                           users=users or (lambda: state.users))
    return guarded if logs is None else _HookLog(guarded, logs)


class _Api:
    def __init__(self, state: ControlState, ask_timeout: float) -> None:
        self.state = state
        self.ask_timeout = ask_timeout

    async def root(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        return RedirectResponse("/console/", status_code=303)

    async def status(self, request: Request) -> Response:
        state = self.state
        return _json({"status": "ok", "label": state.label, "seq": state.events.seq,
                      "session": state.session().get("id"), "pending_asks": len(state.asks)})

    async def project(self, request: Request) -> Response:
        if request.method == "POST":
            body = await _body(request)
            project = body.get("project")
            if not isinstance(project, dict):
                raise BadRequest("the body needs a 'project' object", 'Send {"project": {...}}.')
            queued = self._changes(lambda driver: driver.project_tasks(project))
            current = self.state.project()
            kept = {k: current[k] for k in PROTECTED_PROJECT_KEYS if k in current}
            self.state.set_project({**project, **kept}, by="api")
            return _json({"status": "updated", **({"queued": queued} if queued else {})})
        return _json({"project": self.state.project()})

    async def session(self, request: Request) -> Response:
        if request.method == "POST":
            body = await _body(request)
            session = body.get("session")
            if not isinstance(session, dict) or not isinstance(session.get("entries", []), list):
                raise BadRequest("the body needs a 'session' object whose 'entries' is a list",
                                 'Send {"session": {"entries": [...]}}.')
            queued = self._changes(lambda driver: [t for t in [driver.session_task(session)] if t is not None])
            if not queued:  # a chat records its new conversation itself, once it is in place
                self.state.set_session(session, by="api")
            return _json({"status": "updated", **({"queued": queued} if queued else {})})
        return _json({"session": self.state.session()})

    # -- /api/gui: the seed's GUI surface, driving the session ---------------------------------------

    def _changes(self, tasks_of: Any) -> list[int]:
        """Tasks a project or session post makes for the run, all checked before any is queued."""
        gui = self.state.gui
        try:
            tasks = tasks_of(self._driver())
            for task in tasks:
                self._driver().check(task)
            return [gui.submit(task) for task in tasks] if gui is not None else []
        except GuiError as exc:
            raise BadRequest(str(exc), exc.hint, status=exc.status) from None

    def _driver(self) -> Any:
        gui = self.state.gui
        return gui.driver if gui is not None else StateDriver(self.state)

    async def gui(self, request: Request) -> Response:
        """Check a task and queue it for the session's loop: ``{"status": "queued", "task": n}``."""
        body = await _body(request)
        gui = self.state.gui
        try:
            task = replace(parse_task(body), by=request.scope.get(USER_KEY))
            if gui is None:
                raise GuiError("this run has nothing to drive yet", "Wait until the session has started "
                               "(GET /status), then send the task again.", status=409)
            number = gui.submit(task)
        except GuiError as exc:
            raise BadRequest(str(exc), exc.hint, status=exc.status) from None
        return _json({"status": "queued", "task": number})

    async def gui_value(self, request: Request) -> Response:
        """One field (``/api/gui/value/<item>`` or ``?item=``) as ``{"value": ...}``, or all of them."""
        driver = self._driver()
        item = request.path_params.get("item") or request.query_params.get("item")
        values = driver.values()
        if not item:
            return _json({"value": values, "fields": driver.fields()})
        if item not in values:
            raise BadRequest(f"no field {item!r}", f"Fields: {', '.join(values)}.", status=404)
        return _json({"item": item, "value": values[item]})

    async def gui_diagnostics(self, request: Request) -> Response:
        return _json(diagnostics(self.state))

    async def gui_mma_status(self, request: Request) -> Response:
        return _json(await asyncio.to_thread(mma_status, self.state, self.state.board))

    async def performance(self, request: Request) -> Response:
        figures = await asyncio.to_thread(self.state.performance)
        if self.state.replicas is not None:  # one replica of several: the whole deployment's figures too
            figures["deployment"] = await self.state.replicas.figures()
        return _json({"performance": figures})

    async def events(self, request: Request) -> Response:
        return _json({"events": self.state.events.drain()})

    async def calls(self, request: Request) -> Response:
        return _json({"calls": self.state.calls()})

    async def asks(self, request: Request) -> Response:
        return _json({"asks": self.state.asks.pending()})

    async def servers(self, request: Request) -> Response:
        return _json({"servers": self.state.servers()})

    async def stream(self, request: Request) -> Response:
        """Server-sent events: a ``snapshot`` first (unless resuming), then every event live."""
        from starlette.responses import StreamingResponse

        resume = request.headers.get("last-event-id") or request.query_params.get("since")
        wants_snapshot = request.query_params.get("snapshot", "1") not in ("0", "false", "no")
        seq = _int_or_none(resume)
        hub = self.state.events

        def before() -> tuple[dict[str, Any] | None, list[dict[str, Any]] | None]:
            replay = hub.since(seq) if seq is not None else None
            snapshot = self.state.snapshot() if (replay is None and wants_snapshot) else None
            return snapshot, replay

        subscription, (snapshot, replay) = hub.subscribe(before=before)

        async def lines() -> AsyncIterator[str]:
            try:
                yield "retry: 2000\n\n"
                if snapshot is not None:
                    yield _sse({"type": "snapshot", "seq": snapshot["seq"], **snapshot})
                for event in replay or ():
                    yield _sse(event)
                while True:
                    try:
                        event = await subscription.next(PING_SECONDS)
                    except TimeoutError:
                        yield ": ping\n\n"
                        continue
                    if event is None:
                        return
                    yield _sse(event)
            finally:
                subscription.close()

        return StreamingResponse(lines(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def ask(self, request: Request) -> Response:
        """Block until someone answers (``/api/ask/respond``) or the timeout passes (504)."""
        data = await _body(request)
        timeout = data.pop("timeout", None)
        if timeout is None:
            timeout = self.ask_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_ASK_TIMEOUT:
            raise BadRequest(f"timeout must be a number of seconds in (0, {MAX_ASK_TIMEOUT:g}], got {timeout!r}",
                             "Leave it out for the default, or send e.g. \"timeout\": 30.")
        asks = self.state.asks
        pending = asks.open(data)
        waiting = asyncio.ensure_future(asks.wait(pending, float(timeout)))
        hangup = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({waiting, hangup}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hangup.cancel()
        if not waiting.done():  # the asker left: withdraw the question (ask_cancelled)
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
            return _json({"error": "gone"}, status=499)
        try:
            response = waiting.result()
        except AskTimeout:
            return _json({"error": "timeout", "request_id": pending.request_id,
                          "message": f"nobody answered within {timeout:g} s; the question was withdrawn"},
                         status=504)
        return _json({"status": "ok", "request_id": pending.request_id, "response": response})

    async def respond(self, request: Request) -> Response:
        body = await _body(request)
        request_id = body.get("request_id")
        if not isinstance(request_id, str) or not request_id:
            raise BadRequest("the body needs a 'request_id' string",
                             'Send {"request_id": "<id from ask_received>", "response": ...}.')
        person = request.scope.get(USER_KEY)
        refusal = own_call_refusal(self.state, request_id, person)
        if refusal is not None:
            raise BadRequest(refusal, OWN_CALL_HINT, status=403)
        if not self.state.asks.respond(request_id, body.get("response"), by=person or "api"):
            raise BadRequest(f"no open question has request_id {request_id!r}",
                             "It was already answered, it timed out, or the id is wrong; GET /api/asks lists "
                             "the open ones.", status=404)
        return _json({"status": "ok"})


    async def replica_approvals(self, request: Request) -> Response:
        """Every replica's pending approvals (``replica``: this one's id; null when there are no replicas)."""
        replicas = self.state.replicas
        if replicas is None:
            return _json({"replica": None, "approvals": []})
        try:
            return _json({"replica": replicas.replica, "approvals": await replicas.pending()})
        except StateUnavailable as error:
            raise BadRequest(str(error), "The approvals of this replica are still shown above; retry when Redis "
                             "answers.", status=503) from error

    async def answer_replica(self, request: Request) -> Response:
        """``{"approved": true|false}``: answer an approval wherever its call waits (audited under the signed-in
        person's name; ``console`` for the run's own token); nobody answers their own call."""
        replicas = self.state.replicas
        approval_id = request.path_params["approval_id"]
        body = await _body(request)
        if not isinstance(body.get("approved"), bool):
            raise BadRequest("the body needs 'approved': true or false",
                             'Send {"approved": true} or {"approved": false}.')
        if replicas is None:
            raise BadRequest("this process is not one of several replicas", "Answer its own asks with "
                             "POST /api/ask/respond.", status=404)
        from codeward.serving.shared_state.approvals import Gone, OwnCall

        try:
            decided = await replicas.answer(approval_id, body["approved"], request.scope.get(USER_KEY) or "console")
        except StateUnavailable as error:
            raise BadRequest(str(error), "Retry when Redis answers.", status=503) from error
        except OwnCall as error:
            raise BadRequest(str(error), "Another user with the approver role answers it.", status=403) from error
        except Gone as error:
            raise BadRequest(str(error), "Nothing to answer: the call did not run.", status=410) from error
        if decided is None:
            raise BadRequest(f"no pending approval has id {approval_id!r}", "GET /api/replicas/approvals lists "
                             "them; answered ones are gone.", status=404)
        if not decided:
            raise BadRequest(f"approval {approval_id!r} was already answered", "Nothing to do.", status=409)
        return _json({"status": "ok", "id": approval_id, "approved": body["approved"]})


async def _disconnected(request: Request) -> None:
    """Returns when the client hangs up (the body has been read, so only that can arrive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _body(request: Request) -> dict[str, Any]:
    raw = await _read_limited(request)
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the body is not valid JSON ({exc})", "Send a JSON object with "
                         "Content-Type: application/json.") from exc
    if not isinstance(value, dict):
        raise BadRequest(f"the body must be a JSON object, got {type(value).__name__}", "Wrap it: {\"...\": ...}.")
    return value


async def _read_limited(request: Request) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BadRequest(f"the body is larger than {MAX_BODY_BYTES:,} bytes", "Send less.", status=413)
        chunks.append(chunk)
    return b"".join(chunks)


def _json(value: Any, status: int = 200) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(value, status_code=status, headers={"Cache-Control": "no-store"})


def _sse(event: dict[str, Any]) -> str:
    data = json.dumps(event, default=str)
    return f"id: {event.get('seq', '')}\nevent: {event['type']}\ndata: {data}\n\n"


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


async def _bad_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, BadRequest)
    error = {400: "bad_request", 403: "forbidden", 404: "not_found", 409: "conflict",
             413: "too_large"}.get(exc.status, "bad_request")
    return _json({"error": error, "message": str(exc), "hint": exc.hint}, status=exc.status)


async def _not_found(request: Request, exc: Exception) -> Response:
    return _json({"error": "not_found", "message": f"no endpoint {request.method} {request.url.path}",
                  "hint": "GET /status, /api/project, /api/session, /api/performance, /api/events, "
                          "/api/events/stream, /api/calls, /api/asks, /api/servers, /api/gui/value[/<field>], "
                          "/api/gui/diagnostics, /api/gui/mma_status, /api/replicas/approvals; POST /api/ask, "
                          "/api/ask/respond, /api/gui, /api/project, /api/session, /api/replicas/approvals/<id>"},
                 status=404)


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return _json({"error": "method_not_allowed", "message": f"{request.method} is not allowed on {request.url.path}"},
                 status=405)


class _HookLog:
    """Writes every request, refused ones too, to ``apihooks.log`` (method, path without the
    query — which may hold the token — status and body)."""

    def __init__(self, app: Any, logs: SessionLogs) -> None:
        self.app = app
        self.logs = logs

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body: list[bytes] = []
        status = {"code": 0}

        async def receive_logged() -> Any:
            message = await receive()
            if message.get("type") == "http.request" and sum(map(len, body)) < LOGGED_BODY_CHARS:
                body.append(message.get("body", b""))
            return message

        async def send_logged(message: Any) -> None:
            if message.get("type") == "http.response.start":
                status["code"] = int(message["status"])
                if scope["path"] == "/api/events/stream":
                    self._log(scope, status["code"], b"")
            await send(message)

        try:
            await self.app(scope, receive_logged, send_logged)
        finally:
            if scope["path"] != "/api/events/stream":
                self._log(scope, status["code"], b"".join(body))

    def _log(self, scope: Any, status: int, raw: bytes) -> None:
        text = raw[:LOGGED_BODY_CHARS].decode("utf-8", "replace")
        try:
            body: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        client = scope.get("client")
        self.logs.api_hook(scope.get("method", ""), scope["path"], status, body,
                           client=f"{client[0]}:{client[1]}" if client else None)

