"""The seed's ``/api/gui`` surface: settable fields, queued actions, diagnostics, status.

The seed drives its GUI by queuing tasks (``{"action": "set_value", "item": ..., "value": ...}``)
to the GUI thread. codeward's "GUI" is the agent session and its console: a
:class:`GuiDriver` names the fields a script may read and set and carries out the actions.
A task is checked when it arrives — an unknown field, a bad value or a change that would widen
what the agent may do is refused there, with the reason — and only then queued; the
:class:`GuiQueue` applies queued tasks one at a time, in order, on the session's own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from codeward.apps.control.state import ControlState

ACTIONS = ("set_value", "click", "select_tab", "select_list_item", "push_event", "ask")
TABS = ("approvals", "calls", "conversation", "performance", "servers")
PROTECTED_PROJECT_KEYS = ("roots", "label", "config", "logs", "tools", "transport", "approvals", "chat_session")
"""What the project record says about the run itself: shown, never changed over HTTP."""
CLICKS_SEND = ("btn_gen_send", "send")
CLICKS_CANCEL = ("btn_cancel", "cancel")
CLICKS_RESET = ("btn_reset_session", "reset", "reset_session")
CLICKS_APPROVE = ("btn_approve_tool", "approve")
CLICKS_DENY = ("btn_deny_tool", "deny")


class GuiError(Exception):
    """A task refused: ``status`` 400 (bad input), 403 (would widen policy), 404 (unknown), 409 (not now)."""

    def __init__(self, message: str, hint: str, status: int = 400) -> None:
        super().__init__(message)
        self.hint = hint
        self.status = status


@dataclass(frozen=True)
class GuiTask:
    """One queued change, in the seed's shape: ``action`` and its fields."""

    action: str
    item: str = ""
    value: Any = None
    user_data: Any = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    by: str | None = None
    """The signed-in person who sent it (a team's console), ``None`` for the run's own token: an approval
    clicked is audited under this name, and nobody clicks through their own call."""


def parse_task(body: Mapping[str, Any]) -> GuiTask:
    """The body of ``POST /api/gui`` as a task; a :class:`GuiError` says what is wrong."""
    action = body.get("action")
    if action == "custom_callback" or callable(action):
        raise GuiError("custom_callback tasks run code and are not accepted over HTTP",
                       f"Use one of the actions {', '.join(ACTIONS)}.")
    if not isinstance(action, str) or action not in ACTIONS:
        raise GuiError(f"unknown or missing action {action!r}", f"Send {{\"action\": ...}} with one of "
                       f"{', '.join(ACTIONS)}, e.g. {{\"action\": \"set_value\", \"item\": \"model\", "
                       "\"value\": \"gpt-4o\"}.")
    if action == "set_value":
        item = _text(body, "item")
        if "value" not in body:
            raise GuiError("set_value needs a 'value'", 'Send {"action": "set_value", "item": ..., "value": ...}.')
        return GuiTask(action, item, body["value"], raw=dict(body))
    if action == "click":
        return GuiTask(action, _text(body, "item"), user_data=body.get("user_data"), raw=dict(body))
    if action == "select_tab":
        tab = _text(body, "tab")
        if tab not in TABS:
            raise GuiError(f"no console tab {tab!r}", f"Tabs: {', '.join(TABS)}.", status=404)
        return GuiTask(action, str(body.get("tab_bar") or "console"), tab, raw=dict(body))
    if action == "select_list_item":
        return GuiTask(action, _text(body, "listbox"), body.get("item_value"), raw=dict(body))
    if action == "push_event":
        event_type = _text(body, "event_type")
        payload = body.get("payload", {})
        if not isinstance(payload, dict):
            raise GuiError("push_event's 'payload' must be an object", 'Send "payload": {...}.')
        return GuiTask(action, event_type, payload, raw=dict(body))
    return GuiTask(action, "", body.get("data"), raw=dict(body))  # "ask": the seed's dialog task


def _text(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise GuiError(f"{body.get('action')} needs a '{key}' string", f"Send \"{key}\": \"...\".")
    return value.strip()


OWN_CALL_HINT = "Another user with the approver role answers it."


def own_call_refusal(state: ControlState, request_id: str, person: str | None) -> str | None:
    """Why ``person`` may not answer ``request_id`` (the call it waits on is theirs), or None."""
    ask = next((a for a in state.asks.pending() if a["request_id"] == request_id), None)
    if person is not None and ask is not None and ask["data"].get("user") == person:
        return f"ask {request_id!r} waits on a call {person!r} made; nobody answers their own call"
    return None


class GuiDriver(Protocol):
    """What ``/api/gui`` drives. ``check`` runs on the API's thread and must not change anything;
    ``apply`` runs later on the session's loop, in the order tasks arrived."""

    def values(self) -> dict[str, Any]: ...

    def fields(self) -> dict[str, dict[str, Any]]: ...

    def check(self, task: GuiTask) -> None: ...

    async def apply(self, task: GuiTask) -> None: ...

    def project_tasks(self, project: Mapping[str, Any]) -> list[GuiTask]: ...

    def session_task(self, session: Mapping[str, Any]) -> GuiTask | None: ...


class StateDriver:
    """The part every run has: approvals, console tabs, pushed events, the seed's ask task.

    Fields are read-only here; :class:`~codeward.apps.control.chat_driver.ChatDriver` adds the
    session's settable fields and its message, cancel and reset actions.
    """

    def __init__(self, state: ControlState) -> None:
        self.state = state

    def values(self) -> dict[str, Any]:
        status = self.state.ai_status()
        return {"ai_status": status, "active_tab": self.state.active_tab(),
                "pending_approvals": [a["request_id"] for a in self.state.asks.pending()
                                      if a["data"].get("type") == "tool_approval"],
                "session_id": self.state.session().get("id"), "label": self.state.label}

    def fields(self) -> dict[str, dict[str, Any]]:
        return {name: {"settable": False} for name in self.values()}

    def check(self, task: GuiTask) -> None:
        if task.action == "set_value":
            self._unknown_field(task.item)
        elif task.action == "click":
            if task.item in (*CLICKS_APPROVE, *CLICKS_DENY):
                self._not_their_own(self._ask_of(task.user_data), task.by)
            else:
                raise GuiError(f"no button {task.item!r} in this run", self._buttons(), status=404)
        elif task.action == "select_list_item":
            if task.item != "asks":
                raise GuiError(f"no list {task.item!r} in this run", "Lists: asks.", status=404)
            self._ask_of(task.value)

    def project_tasks(self, project: Mapping[str, Any]) -> list[GuiTask]:
        """What ``POST /api/project`` changes in the run; the run's own facts (roots...) are refused."""
        current = self.state.project()
        for key in PROTECTED_PROJECT_KEYS:
            if key in project and key in current and project[key] != current[key]:
                raise GuiError(f"the project's {key!r} cannot be changed over HTTP (it is {current[key]!r})",
                               "Workspace roots and the run's settings come from codeward.toml and the command "
                               "line; change them there and start a new session.", status=403)
        return []

    def session_task(self, session: Mapping[str, Any]) -> GuiTask | None:
        """What ``POST /api/session`` changes in the run beyond the record (nothing without a chat)."""
        return None

    def _buttons(self) -> str:
        return f"Buttons here: {', '.join((*CLICKS_APPROVE, *CLICKS_DENY))}."

    def _unknown_field(self, item: str) -> None:
        fields = self.fields()
        if item in fields:
            raise GuiError(f"{item!r} is read-only", "Read it with GET /api/gui/value/" + item + ".", status=403)
        settable = [n for n, f in fields.items() if f.get("settable")]
        raise GuiError(f"no field {item!r}", (f"Settable fields: {', '.join(settable)}; " if settable else
                                              "This run has no settable fields; ")
                       + f"readable: {', '.join(fields)}.", status=404)

    def _not_their_own(self, request_id: str, person: str | None) -> str:
        """``request_id``, unless the call it waits on is ``person``'s own (as ``POST /api/ask/respond`` refuses)."""
        refusal = own_call_refusal(self.state, request_id, person)
        if refusal is not None:
            raise GuiError(refusal, OWN_CALL_HINT, status=403)
        return request_id

    def _ask_of(self, request_id: Any) -> str:
        """The open tool approval named (or, with none named, the oldest one)."""
        approvals = [a for a in self.state.asks.pending() if a["data"].get("type") == "tool_approval"]
        if request_id in (None, ""):
            if not approvals:
                raise GuiError("no tool call is waiting for approval", "Wait for an ask_received event "
                               "(or GET /api/gui/mma_status: pending_tool_approval).", status=409)
            return str(approvals[0]["request_id"])
        if not isinstance(request_id, str) or not self.state.asks.is_open(request_id):
            raise GuiError(f"no open question has request_id {request_id!r}",
                           "GET /api/asks lists the open ones.", status=404)
        return request_id

    async def apply(self, task: GuiTask) -> None:
        state = self.state
        if task.action == "click" and task.item in (*CLICKS_APPROVE, *CLICKS_DENY):
            request_id = self._not_their_own(self._ask_of(task.user_data), task.by)
            state.asks.respond(request_id, {"approved": task.item in CLICKS_APPROVE}, by=task.by or "api")
        elif task.action == "select_tab":
            state.select_tab(str(task.value))
        elif task.action == "select_list_item" and task.item == "asks":
            state.select_tab("approvals", focus=self._ask_of(task.value))
        elif task.action == "push_event":
            state.events.publish("pushed", event_type=task.item, payload=task.value)
        elif task.action == "ask":
            state.asks.open(task.value if isinstance(task.value, dict) else {"data": task.value})


class GuiQueue:
    """Tasks checked on arrival, then applied one by one on the session's loop, in arrival order."""

    def __init__(self, state: ControlState, driver: GuiDriver, loop: asyncio.AbstractEventLoop) -> None:
        self.state = state
        self.driver = driver
        self.loop = loop
        self._queue: asyncio.Queue[tuple[int, GuiTask]] = asyncio.Queue()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._worker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._worker = self.loop.create_task(self._run())

    def submit(self, task: GuiTask) -> int:
        """Check ``task`` (raising :class:`GuiError`) and queue it; returns its number."""
        self.driver.check(task)
        with self._lock:  # numbers and queue order agree
            number = next(self._numbers)
            self.loop.call_soon_threadsafe(self._queue.put_nowait, (number, task))
        return number

    async def _run(self) -> None:
        while True:
            number, task = await self._queue.get()
            try:
                await self.driver.apply(task)
            except GuiError as exc:  # the world changed between the check and its turn
                self.state.events.publish("gui_task", task=number, action=task.action, item=task.item, ok=False,
                                          error=str(exc), hint=exc.hint)
            except Exception as exc:  # a task must never stop the queue
                self.state.events.publish("gui_task", task=number, action=task.action, item=task.item, ok=False,
                                          error=f"{type(exc).__name__}: {exc}", hint="")
            else:
                self.state.events.publish("gui_task", task=number, action=task.action, item=task.item, ok=True)

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker


def diagnostics(state: ControlState) -> dict[str, Any]:
    """The seed's indicators: ``thinking`` (waiting on the model or a tool), ``live`` (a tool
    running), ``prior`` (a resumed conversation is shown)."""
    status = state.ai_status()
    return {"thinking": status != "idle", "live": status.startswith("running"),
            "prior": bool(state.session().get("resumed")), "ai_status": status}


def mma_status(state: ControlState, tracker: Any = None) -> dict[str, Any]:
    """The seed's orchestration status mapped onto one agent session (see docs/control.md)."""
    asks = state.asks.pending()
    tool = [a for a in asks if a["data"].get("type") == "tool_approval"]
    other = [a for a in asks if a["data"].get("type") != "tool_approval"]
    status = state.ai_status()
    tracks, tickets = tracker() if callable(tracker) else ([], [])
    running = [c for c in state.calls() if c["status"] in ("running", "awaiting_approval")]
    return {
        "mma_status": "idle" if status == "idle" else "executing",
        "ai_status": status,
        "active_tier": None,
        "active_track": next((t["id"] for t in tracks if t.get("status") == "in_progress"), None),
        "active_tickets": [t for t in tickets if t.get("status") == "in_progress"],
        "mma_step_mode": False,
        "pending_tool_approval": bool(tool),
        "pending_mma_step_approval": False,
        "pending_mma_spawn_approval": False,
        "pending_approval": bool(tool),
        "pending_spawn": False,
        "pending_asks": len(other),
        "pending_approvals": [{"request_id": a["request_id"], "tool": a["data"].get("tool")} for a in tool],
        "running_calls": [{"id": c["id"], "name": c["name"], "status": c["status"]} for c in running],
        "tracks": tracks,
        "proposed_tracks": [],
        "mma_streams": {},
        "tickets": tickets,
    }
