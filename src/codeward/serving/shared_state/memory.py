"""The in-process state backend: one machine, one process, nothing shared (the default)."""

from __future__ import annotations

import itertools
import uuid
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, StreamId
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter

from codeward.serving.shared_state.backend import CallRecord, EventLog, StoredEvent

DEFAULT_MAX_EVENTS = 2000
"""Events kept across all sessions of the process; the oldest are dropped first."""
MAX_AUDIT = 1000
"""Audit records kept in memory for ``GET /audit`` (the JSONL file has them all)."""


class MemoryState:
    """Events of every session in one bounded log; calls are never taken over (no other replica)."""

    shared = False
    where = "memory"

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self.replica = uuid.uuid4().hex[:12]
        self._max = max_events
        self._events: OrderedDict[str, tuple[str, str, JSONRPCMessage | None]] = OrderedDict()
        self._ids = itertools.count(1)
        self._added = anyio.Event()
        self._approvals: dict[str, tuple[dict[str, Any], anyio.Event, dict[str, Any]]] = {}
        self._gone: dict[str, dict[str, Any]] = {}
        self._audit: deque[dict[str, Any]] = deque(maxlen=MAX_AUDIT)
        self._metrics: dict[str, Any] = {}

    def events(self, session_id: str) -> EventLog:
        return _SessionEvents(self, session_id)

    def _store(self, session_id: str, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = str(next(self._ids))
        self._events[event_id] = (session_id, stream_id, message)
        while len(self._events) > self._max:
            self._events.popitem(last=False)
        self._added.set()
        self._added = anyio.Event()
        return event_id

    def _after(self, session_id: str, event_id: str) -> list[tuple[str, str, JSONRPCMessage | None]]:
        found, out = False, []
        for key, (session, stream, message) in list(self._events.items()):
            if found and session == session_id:
                out.append((key, stream, message))
            found = found or key == event_id
        return out

    async def check(self) -> None:
        return None

    async def remember_session(self, session_id: str, initialize: dict[str, Any]) -> None:
        return None

    async def session_opening(self, session_id: str) -> dict[str, Any] | None:
        return None

    async def begin_call(self, record: CallRecord) -> str | None:
        return None  # one process: the SDK itself refuses a request id already in flight

    async def end_call(self, session_id: str, stream_id: str) -> None:
        return None

    async def renew_leases(self) -> None:
        return None

    async def call_record(self, session_id: str, stream_id: str) -> CallRecord | None:
        return None

    async def lease_alive(self, session_id: str, stream_id: str) -> bool:
        return True

    async def claim(self, session_id: str, stream_id: str) -> bool:
        return False

    async def open_approval(self, approval_id: str, data: dict[str, Any]) -> None:
        self._approvals[approval_id] = (data, anyio.Event(), {})

    async def pending_approvals(self) -> list[dict[str, Any]]:
        return [data for data, done, _ in self._approvals.values() if not done.is_set()]

    async def answer_approval(self, approval_id: str, approved: bool, by: str) -> bool | None:
        entry = self._approvals.get(approval_id)
        if entry is None:
            return None
        _, done, answer = entry
        if done.is_set():
            return False
        answer.update(approved=approved, by=by)
        done.set()
        return True

    async def wait_approval(self, approval_id: str) -> dict[str, Any]:
        _, done, answer = self._approvals[approval_id]
        await done.wait()
        self._approvals.pop(approval_id, None)
        return answer

    async def withdraw_approval(self, approval_id: str) -> None:
        entry = self._approvals.pop(approval_id, None)
        self._gone[approval_id] = {**(entry[0] if entry else {"id": approval_id}), "gone": "stopped"}

    async def approval_gone(self, approval_id: str) -> dict[str, Any] | None:
        return self._gone.get(approval_id)

    async def audit(self, record: Mapping[str, Any]) -> None:
        self._audit.append(dict(record))

    async def recent_audit(self, count: int) -> list[dict[str, Any]]:
        return list(reversed(self._audit))[:count]

    async def publish_metrics(self, figures: Mapping[str, Any]) -> None:
        self._metrics = dict(figures)

    async def replica_metrics(self) -> dict[str, dict[str, Any]]:
        return {self.replica: self._metrics} if self._metrics else {}

    def pins(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class _SessionEvents:
    """One session's view of the process's event log."""

    def __init__(self, state: MemoryState, session_id: str) -> None:
        self._state = state
        self._session = session_id

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        return self._state._store(self._session, stream_id, message)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        stream_id = await self.stream_of(last_event_id)
        if stream_id is None:
            return None
        for event_id, stream, message in self._state._after(self._session, last_event_id):
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id

    async def stream_of(self, event_id: str) -> str | None:
        entry = self._state._events.get(event_id)
        return entry[1] if entry is not None and entry[0] == self._session else None

    async def stream_events(self, stream_id: str) -> Sequence[StoredEvent]:
        return [StoredEvent(key, stream, None if message is None else _dump(message))
                for key, (session, stream, message) in list(self._state._events.items())
                if session == self._session and stream == stream_id]

    async def read_after(self, event_id: str, wait: float) -> Sequence[StoredEvent]:
        found = self._state._after(self._session, event_id)
        if not found:
            with anyio.move_on_after(wait):
                await self._state._added.wait()
            found = self._state._after(self._session, event_id)
        return [StoredEvent(key, stream, None if message is None else _dump(message)) for key, stream, message in found]


def _dump(message: JSONRPCMessage) -> str:
    return jsonrpc_message_adapter.dump_json(message, by_alias=True, exclude_unset=True).decode()
