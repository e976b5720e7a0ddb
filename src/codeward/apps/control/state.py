"""Everything the Hook API shows, owned by one object behind one lock.

The seed reads GUI state by queuing closures to the GUI thread. Here the owners push instead:
the agent loop, the gateway and tool threads report what happens (a call started, a turn was
added, a server went down) and the HTTP handlers only read copies. Every change and the event
announcing it happen under the same lock, so a watcher's snapshot and the events after it fit
together exactly, whichever thread or task made the change.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from codeward.approval.asks import AskBook
from codeward.apps.control.events import EventHub
from codeward.audit.metrics import CallMetrics, MetricsSnapshot

DEFAULT_CALLS_KEPT = 500
DEFAULT_ENTRIES_KEPT = 2000
PREVIEW_CHARS = 600
ARGUMENT_CHARS = 4000


class ControlState:
    """The session as the control plane sees it: project, conversation, calls, asks, servers."""

    def __init__(self, label: str = "codeward", *, calls_kept: int = DEFAULT_CALLS_KEPT,
                 entries_kept: int = DEFAULT_ENTRIES_KEPT) -> None:
        self.label = label
        self.lock = threading.RLock()
        self.events = EventHub(self.lock)
        self.asks = AskBook(self.events, self.lock)
        self.tool_metrics = CallMetrics()
        self.model_metrics = CallMetrics()
        self.started = time.time()
        self._calls: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._calls_kept = calls_kept
        self._entries_kept = entries_kept
        self._project: dict[str, Any] = {}
        self._session: dict[str, Any] = {"id": None, "entries": []}
        self._servers: list[dict[str, Any]] = []
        self._model_requests = 0
        self._model_waiting: set[str] = set()
        self._tab = "approvals"
        self.gui: Any = None
        """The run's :class:`~codeward.apps.control.gui.GuiQueue` (``/api/gui``), once a session is driven."""
        self.board: Any = None
        """A callable giving the project's beads as (tracks, tickets), when there is a tracker."""
        self.replicas: Any = None
        """The deployment's approvals (:class:`~codeward.apps.control.replicas.ReplicaApprovals`), when this
        process is one replica of several sharing state."""
        self.users: Any = None
        """The server's users (:class:`~codeward.audit.users.Directory`) once it serves HTTP with them: who
        may sign in to the console with their own token (approvers)."""

    # -- project and session ---------------------------------------------------------------

    def project(self) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self._project)

    def set_project(self, project: Mapping[str, Any], by: str = "session") -> None:
        with self.lock:
            self._project = _json_copy(project)
            self.events.publish("project_updated", project=copy.deepcopy(self._project), by=by)

    def session(self) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self._session)

    def set_session(self, session: Mapping[str, Any], by: str = "session") -> None:
        """Replace the session record (id, entries, ...) as a whole."""
        with self.lock:
            record = _json_copy(session)
            record.setdefault("id", self._session.get("id"))
            entries = record.get("entries")
            record["entries"] = list(entries)[-self._entries_kept:] if isinstance(entries, list) else []
            self._session = record
            # events carry copies: the live record keeps changing after they are queued
            self.events.publish("session_updated", session=copy.deepcopy(record), by=by)

    def add_entry(self, entry: Mapping[str, Any]) -> None:
        """One more conversation turn (user, assistant, tool)."""
        with self.lock:
            item = _json_copy(entry)
            entries: list[Any] = self._session.setdefault("entries", [])
            entries.append(item)
            del entries[: max(0, len(entries) - self._entries_kept)]
            self.events.publish("session_entry", entry=copy.deepcopy(item), index=len(entries) - 1)

    # -- tool calls ----------------------------------------------------------------------------

    def call_started(self, name: str, arguments: Mapping[str, Any] | None, source: str = "codeward") -> str:
        call_id = uuid.uuid4().hex[:12]
        record: dict[str, Any] = {
            "id": call_id, "name": name, "source": source, "arguments": _bounded_json(arguments or {}),
            "status": "running", "started": round(time.time(), 3), "duration_ms": None, "preview": "",
            "ask_id": None,
        }
        with self.lock:
            self._calls[call_id] = record
            while len(self._calls) > self._calls_kept:
                self._calls.popitem(last=False)
            self.events.publish("tool_call", call=dict(record))
        return call_id

    def call_waiting(self, call_id: str, ask_id: str) -> None:
        """The call waits for a person's approval (ask ``ask_id``)."""
        self._update_call(call_id, status="awaiting_approval", ask_id=ask_id)

    def call_resumed(self, call_id: str, approved: bool, by: str) -> None:
        self._update_call(call_id, status="running" if approved else "denied", approved_by=by)

    def call_finished(self, call_id: str, *, is_error: bool, seconds: float, text: str, denied: bool = False,
                      waited: float = 0.0) -> None:
        """A call ended: ``seconds`` it ran (the latency figures), ``waited`` for approval before that."""
        with self.lock:
            record = self._calls.get(call_id)
            name = record["name"] if record else "?"
        self.tool_metrics.record(name, seconds, is_error)
        status = "denied" if denied else ("error" if is_error else "ok")
        self._update_call(call_id, status=status, duration_ms=round(seconds * 1000, 3),
                          approval_wait_ms=round(waited * 1000, 3), preview=_preview(text, PREVIEW_CHARS))

    def _update_call(self, call_id: str, **changes: Any) -> None:
        with self.lock:
            record = self._calls.get(call_id)
            if record is None:
                return
            record.update(changes)
            self.events.publish("tool_call", call=dict(record))

    def calls(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(r) for r in self._calls.values()]

    # -- model requests ------------------------------------------------------------------------

    def model_request(self, model: str, messages: int, tools: int) -> str:
        request_id = uuid.uuid4().hex[:12]
        with self.lock:
            self._model_requests += 1
            self._model_waiting.add(request_id)
            self.events.publish("model_request", request_id=request_id, model=model, messages=messages, tools=tools)
        return request_id

    def model_response(self, request_id: str, model: str, *, seconds: float, ok: bool, text: str,
                       tool_calls: Sequence[str], error: str | None = None) -> None:
        self.model_metrics.record(model, seconds, not ok)
        with self.lock:
            self._model_waiting.discard(request_id)
        self.events.publish("model_response", request_id=request_id, model=model, ok=ok,
                            duration_ms=round(seconds * 1000, 3), text=_preview(text, PREVIEW_CHARS),
                            tool_calls=list(tool_calls), error=error)

    # -- what the session is doing --------------------------------------------------------------

    def ai_status(self) -> str:
        """``running <tool>``, ``awaiting approval``, ``sending...`` (waiting on the model) or ``idle``."""
        with self.lock:
            calls = list(self._calls.values())
            running = [c for c in calls if c["status"] == "running"]
            if running:
                return f"running {running[-1]['name']}..."
            if any(c["status"] == "awaiting_approval" for c in calls):
                return "awaiting approval"
            return "sending..." if self._model_waiting else "idle"

    def active_tab(self) -> str:
        with self.lock:
            return self._tab

    def select_tab(self, tab: str, focus: str | None = None) -> None:
        """The console shows ``tab`` (and highlights ``focus``, an ask's id, when given)."""
        with self.lock:
            self._tab = tab
            self.events.publish("gui_tab", tab=tab, focus=focus)

    # -- upstream servers ----------------------------------------------------------------------

    def set_servers(self, servers: Sequence[Mapping[str, Any]]) -> None:
        """The gateway's upstream servers; announced only when something changed."""
        fresh = [_json_copy(s) for s in servers]
        with self.lock:
            if fresh == self._servers:
                return
            self._servers = fresh
            self.events.publish("servers", servers=copy.deepcopy(fresh))

    def servers(self) -> list[dict[str, Any]]:
        with self.lock:
            return copy.deepcopy(self._servers)

    # -- figures -------------------------------------------------------------------------------

    def performance(self) -> dict[str, Any]:
        import os

        import psutil

        process = psutil.Process(os.getpid())
        with process.oneshot():
            memory = process.memory_info()
            cpu = process.cpu_times()
            threads = process.num_threads()
        tools = self.tool_metrics.snapshot()
        models = self.model_metrics.snapshot()
        return {
            "uptime_s": round(time.time() - self.started, 3),
            "tool_calls": _figures(tools),
            "model_requests": _figures(models),
            "memory": {"rss_bytes": memory.rss, "vms_bytes": memory.vms},
            "cpu_seconds": round(cpu.user + cpu.system, 3),
            "threads": threads,
            "pending_asks": len(self.asks),
            "watchers": self.events.watchers,
        }

    def snapshot(self) -> dict[str, Any]:
        """Everything a console needs to draw itself, consistent with the event numbering."""
        with self.lock:
            return {
                "seq": self.events.seq, "label": self.label, "project": self.project(), "session": self.session(),
                "calls": self.calls(), "asks": self.asks.pending(), "servers": self.servers(),
            }

    def close(self) -> None:
        self.asks.close()
        self.events.close()


def _figures(snapshot: MetricsSnapshot) -> dict[str, Any]:
    return {
        "total": snapshot.total_calls,
        "errors": snapshot.total_errors,
        "by_name": [
            {"name": s.name, "calls": s.calls, "errors": s.errors, "mean_ms": s.mean_ms, "p50_ms": s.p50_ms,
             "p90_ms": s.p90_ms, "p99_ms": s.p99_ms, "max_ms": s.max_ms}
            for s in snapshot.tools
        ],
    }


def _json_copy(value: Any) -> Any:
    """A deep, JSON-safe copy (anything JSON cannot hold becomes its string form)."""
    result: Any = json.loads(json.dumps(value, default=str))
    return result


def _bounded_json(value: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as shown: whole when small, else each long string cut."""
    copied: dict[str, Any] = _json_copy(dict(value))
    if len(json.dumps(copied)) <= ARGUMENT_CHARS:
        return copied
    return {k: _preview(v, ARGUMENT_CHARS // 4) if isinstance(v, str) else v for k, v in copied.items()}


def _preview(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more characters]"
