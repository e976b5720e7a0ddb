"""ApiHookClient: a small synchronous client for the Hook API, for scripts and tests.

Standard library only. Connection failures and 502/503 answers are retried with exponential
backoff; other HTTP errors raise :class:`HookError` carrying the status and the server's
message. The token comes from the constructor, ``CODEWARD_CONTROL_TOKEN``, or the token file
the server wrote (:meth:`ApiHookClient.for_port`).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeward.kernel.user_dirs import data_home

TOKEN_ENV = "CODEWARD_CONTROL_TOKEN"
RETRYABLE_STATUS = frozenset({502, 503})
SEED_FIELDS = {"current_model": "model", "current_provider": "model", "ai_system_prompt": "system_prompt"}
ENDPOINTS = {"status": "/status", "project": "/api/project", "session": "/api/session",
             "performance": "/api/performance", "calls": "/api/calls", "asks": "/api/asks",
             "servers": "/api/servers", "mma_status": "/api/gui/mma_status",
             "diagnostics": "/api/gui/diagnostics"}
UNWRAPPED = frozenset({"status", "mma_status", "diagnostics"})


class HookError(Exception):
    """The API answered with an error (or could not be reached after the retries)."""

    def __init__(self, status: int | None, message: str, body: Any = None) -> None:
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.body = body


def token_file(port: int, home: Path | None = None) -> Path:
    """Where a server on ``port`` writes its token (under codeward's data folder)."""
    return (home or data_home()) / "control" / f"{port}.token"


class ApiHookClient:
    def __init__(self, base_url: str = "http://127.0.0.1:8999", token: str | None = None, *, max_retries: int = 5,
                 retry_delay: float = 0.2, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self.timeout = timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy

    @classmethod
    def for_port(cls, port: int = 8999, *, home: Path | None = None, **options: Any) -> ApiHookClient:
        """A client for the local server on ``port``, with the token from the file it wrote."""
        path = token_file(port, home)
        try:
            token = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise HookError(None, f"no token file at {path}: is a codeward session with --control running on "
                                  f"port {port}?") from None
        return cls(f"http://127.0.0.1:{port}", token, **options)

    # -- transport -------------------------------------------------------------------------------

    def _make_request(self, method: str, endpoint: str, data: Any = None, timeout: float | None = None,
                      retries: int | None = None) -> Any:
        body = None if data is None else json.dumps(data).encode()
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        attempts = 1 + (self.max_retries if retries is None else retries)
        delay = self.retry_delay
        last: Exception | None = None
        for attempt in range(attempts):
            request = urllib.request.Request(self.base_url + endpoint, data=body, headers=headers, method=method)
            try:
                with self._opener.open(request, timeout=timeout or self.timeout) as response:
                    raw = response.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as exc:
                payload = _payload(exc)
                if exc.code not in RETRYABLE_STATUS or attempt == attempts - 1:
                    message = payload.get("message") if isinstance(payload, dict) else None
                    raise HookError(exc.code, message or str(exc.reason), payload) from None
                last = exc
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
                    raise HookError(None, f"{method} {endpoint}: no answer within {timeout or self.timeout:g} s"
                                    ) from None
                last = exc
            if attempt < attempts - 1:
                time.sleep(delay)
                delay *= 2
        raise HookError(None, f"cannot reach the control API at {self.base_url}: {last}")

    def wait_for_server(self, timeout: float = 3.0) -> bool:
        """Poll ``/status`` with exponential backoff until it answers; False after ``timeout``."""
        deadline = time.monotonic() + timeout
        delay = 0.02
        while True:
            try:
                if self._make_request("GET", "/status", timeout=max(0.1, deadline - time.monotonic()), retries=0):
                    return True
            except HookError as exc:
                if exc.status is not None:
                    raise
            if time.monotonic() + delay > deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    # -- reading -----------------------------------------------------------------------------------

    def get_status(self) -> dict[str, Any]:
        result: dict[str, Any] = self._make_request("GET", "/status")
        return result

    def get_project(self) -> dict[str, Any]:
        return dict(self._make_request("GET", "/api/project")["project"])

    def get_session(self) -> dict[str, Any]:
        return dict(self._make_request("GET", "/api/session")["session"])

    def get_performance(self) -> dict[str, Any]:
        return dict(self._make_request("GET", "/api/performance")["performance"])

    def get_events(self) -> list[dict[str, Any]]:
        """Fetch and clear the event queue."""
        return list(self._make_request("GET", "/api/events")["events"])

    def get_calls(self) -> list[dict[str, Any]]:
        return list(self._make_request("GET", "/api/calls")["calls"])

    def get_asks(self) -> list[dict[str, Any]]:
        """The questions waiting for an answer (tool approvals among them)."""
        return list(self._make_request("GET", "/api/asks")["asks"])

    def get_servers(self) -> list[dict[str, Any]]:
        return list(self._make_request("GET", "/api/servers")["servers"])

    def get_mma_status(self) -> dict[str, Any]:
        """What the session is doing: ``ai_status``, pending approvals of each kind, the beads board."""
        return dict(self._make_request("GET", "/api/gui/mma_status"))

    def get_diagnostics(self) -> dict[str, Any]:
        """The indicators: ``thinking``, ``live``, ``prior``."""
        return dict(self._make_request("GET", "/api/gui/diagnostics"))

    def get_value(self, path: str) -> Any:
        """A value by dotted path. The first part is a session field (``model``, ``ai_status``,
        ``tracked_files``... — ``GET /api/gui/value`` lists them) or names an endpoint (``status``,
        ``project``, ``session``, ``performance``, ``calls``, ``asks``, ``servers``, ``mma_status``,
        ``diagnostics``); the rest walks
        into it (``session.entries.-1.role``, ``performance.tool_calls.total``). An unknown field
        raises :class:`KeyError`."""
        head, *rest = path.split(".")
        value: Any
        if head in ENDPOINTS:
            value = self._make_request("GET", ENDPOINTS[head])
            if head not in UNWRAPPED:
                value = value[head]
        else:
            try:
                value = self._make_request("GET", "/api/gui/value/" + urllib.parse.quote(head, safe=""))["value"]
            except HookError as exc:
                if exc.status == 404:
                    raise KeyError(f"no field or endpoint {head!r} ({exc})") from None
                raise
        for part in rest:
            if isinstance(value, list):
                value = value[int(part)]
            elif isinstance(value, dict):
                value = value[part]
            else:
                raise KeyError(f"{path!r}: cannot look up {part!r} in {type(value).__name__}")
        return value

    def get_text_value(self, item: str) -> str | None:
        """:meth:`get_value` as text; None when the field is missing or empty."""
        try:
            value = self.get_value(item)
        except KeyError:
            return None
        return None if value is None else str(value)

    def get_indicator_state(self, tag: str) -> dict[str, Any]:
        """Whether an indicator is shown: ``thinking``, ``live`` or ``prior`` (also with the seed's
        ``_indicator`` suffix); ``known`` is False for any other tag."""
        diagnostics = self.get_diagnostics()
        key = tag.removesuffix("_indicator").removeprefix("operations_").removesuffix("_session")
        known = key in ("thinking", "live", "prior")
        return {"tag": tag, "shown": bool(diagnostics.get(key)) if known else False, "known": known}

    def get_node_status(self, node_tag: str) -> dict[str, Any] | None:
        """A node's status, read in two phases as in the seed: first as a field
        (:meth:`get_value`), then on the board — a bead (track or ticket), a running tool call,
        or an indicator. None when nothing has that name."""
        try:
            return {"tag": node_tag, "status": self.get_value(node_tag), "source": "value"}
        except KeyError:
            pass
        status = self.get_mma_status()
        for kind in ("tracks", "tickets", "running_calls"):
            for node in status.get(kind) or ():
                if node.get("id") == node_tag:
                    return {"tag": node_tag, "status": node.get("status"), "source": kind, "node": node}
        indicator = self.get_indicator_state(node_tag)
        if indicator["known"]:
            return {"tag": node_tag, "status": "shown" if indicator["shown"] else "hidden", "source": "diagnostics"}
        return None

    # -- driving the session (POST /api/gui: checked, then queued in order) ------------------------

    def post_gui(self, gui_data: dict[str, Any]) -> dict[str, Any]:
        """Send a raw task (``{"action": ...}``); ``{"status": "queued", "task": n}`` once accepted."""
        return dict(self._make_request("POST", "/api/gui", gui_data))

    def set_value(self, item: str, value: Any) -> dict[str, Any]:
        """Set a session field (``model``, ``auto_approve``, ``max_tool_depth``, ``tracked_files``,
        ``system_prompt``, ``toolsets``, ``ai_input``); a bad value raises :class:`HookError`."""
        item = SEED_FIELDS.get(item, item)
        return self.post_gui({"action": "set_value", "item": item, "value": value})

    def click(self, item: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Press a button: ``btn_gen_send`` (``user_data`` = the message, else the ``ai_input``
        draft), ``btn_cancel``, ``btn_reset_session``, ``btn_approve_tool``/``btn_deny_tool``
        (``user_data`` = a request id, else the oldest pending approval)."""
        user_data = kwargs.get("user_data", args[0] if args else None)
        task: dict[str, Any] = {"action": "click", "item": item}
        if user_data is not None:
            task["user_data"] = user_data
        return self.post_gui(task)

    def select_tab(self, tab_bar: str, tab: str) -> dict[str, Any]:
        """Show a console tab: ``approvals``, ``calls``, ``conversation``, ``performance``, ``servers``."""
        return self.post_gui({"action": "select_tab", "tab_bar": tab_bar, "tab": tab})

    def select_list_item(self, listbox: str, item_value: Any) -> dict[str, Any]:
        """Pick from a list: ``profiles`` (switches the model), ``asks`` (shows that approval)."""
        return self.post_gui({"action": "select_list_item", "listbox": listbox, "item_value": item_value})

    def push_event(self, event_type: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        """Push an event: ``user_request`` with ``{"prompt": ...}`` sends a message; any other type
        is announced to watchers as a ``pushed`` event."""
        return self.post_gui({"action": "push_event", "event_type": event_type, "payload": payload or {}})

    def reset_session(self) -> dict[str, Any]:
        """Stop any running reply and start a fresh conversation (as clicking Reset Session)."""
        return self.click("btn_reset_session")

    # -- waiting -----------------------------------------------------------------------------------

    def wait_for_event(self, event_type: str, timeout: float = 5.0,
                       where: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any] | None:
        """Drain events until one of ``event_type`` (matching ``where``) arrives; None after ``timeout``.

        Events of other types drained meanwhile are gone, as with :meth:`get_events`.
        """
        deadline = time.monotonic() + timeout
        pause = _Backoff()
        while True:
            for event in self.get_events():
                if event.get("type") == event_type and (where is None or where(event)):
                    return event
            if time.monotonic() >= deadline:
                return None
            pause.sleep(deadline)

    def wait_for_value(self, path: str, expected: Any, timeout: float = 5.0) -> bool:
        """Poll :meth:`get_value` until it equals ``expected``; False after ``timeout``."""
        deadline = time.monotonic() + timeout
        pause = _Backoff()
        while True:
            try:
                if self.get_value(path) == expected:
                    return True
            except (KeyError, IndexError):
                pass
            if time.monotonic() >= deadline:
                return False
            pause.sleep(deadline)

    # -- writing -----------------------------------------------------------------------------------

    def post_session(self, entries: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        return dict(self._make_request("POST", "/api/session", {"session": {**fields, "entries": entries}}))

    def post_project(self, project: dict[str, Any]) -> dict[str, Any]:
        return dict(self._make_request("POST", "/api/project", {"project": project}))

    def ask(self, data: dict[str, Any], timeout: float | None = None) -> Any:
        """Block until someone answers; returns the response, or None when nobody did in time (504)."""
        body = dict(data)
        if timeout is not None:
            body["timeout"] = timeout
        wait = (timeout if timeout is not None else 60.0) + self.timeout
        try:
            return self._make_request("POST", "/api/ask", body, timeout=wait, retries=0)["response"]
        except HookError as exc:
            if exc.status == 504:
                return None
            raise

    def request_confirmation(self, tool_name: str, args: dict[str, Any], timeout: float | None = None) -> Any:
        """Ask a person (the console, or a script calling :meth:`respond`) to confirm a tool call."""
        return self.ask({"type": "tool_confirmation", "tool": tool_name, "args": args}, timeout)

    def respond(self, request_id: str, response: Any) -> bool:
        """Answer an open ask; False when no ask with that id is open (404)."""
        try:
            self._make_request("POST", "/api/ask/respond", {"request_id": request_id, "response": response},
                               retries=0)
        except HookError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def approve(self, request_id: str) -> bool:
        return self.respond(request_id, {"approved": True})

    def deny(self, request_id: str) -> bool:
        return self.respond(request_id, {"approved": False})


class _Backoff:
    """Polling pauses that start short (answers often come quickly) and grow to a ceiling."""

    def __init__(self, first: float = 0.02, ceiling: float = 0.25) -> None:
        self.delay = first
        self.ceiling = ceiling

    def sleep(self, deadline: float) -> None:
        time.sleep(max(0.0, min(self.delay, deadline - time.monotonic())))
        self.delay = min(self.delay * 2, self.ceiling)


def _payload(error: urllib.error.HTTPError) -> Any:
    try:
        raw = error.read()
        return json.loads(raw) if raw else None
    except (json.JSONDecodeError, OSError, UnicodeDecodeError):
        return None
