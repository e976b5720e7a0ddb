"""Pending questions to a person: opened by a blocking ``POST /api/ask`` or by a tool approval,
answered by ``POST /api/ask/respond`` (the console's buttons, a script) or withdrawn when the
terminal answered first or time ran out.

Each ask holds a :class:`concurrent.futures.Future`, which any thread may resolve and any
event loop may await, so the agent's loop and the HTTP server's loop need not be the same.
Exactly one resolution wins; the others are told the ask is gone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class Announcer(Protocol):
    """Where asks are announced (the control plane's event hub: ``ask_received``, ``ask_resolved``...)."""

    def publish(self, kind: str, **payload: Any) -> Any: ...


class AskTimeout(TimeoutError):
    """Nobody answered in time; the ask was withdrawn."""


@dataclass
class PendingAsk:
    request_id: str
    data: dict[str, Any]
    created: float
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future, repr=False)
    answered_by: str | None = None
    """Who settled it (a signed-in person's name, ``api``, ``terminal``...), once settled."""

    def to_dict(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "data": self.data, "created": round(self.created, 3)}


class AskBook:
    """The open asks of one session, keyed by request id."""

    def __init__(self, events: Announcer, lock: threading.RLock | None = None) -> None:
        self._events = events
        self._lock = lock or threading.RLock()
        self._pending: dict[str, PendingAsk] = {}

    def open(self, data: Mapping[str, Any]) -> PendingAsk:
        """Register a question and announce it (``ask_received``) to watchers."""
        ask = PendingAsk(uuid.uuid4().hex, dict(data), time.time())
        with self._lock:
            self._pending[ask.request_id] = ask
            self._events.publish("ask_received", request_id=ask.request_id, data=ask.data)
        return ask

    def respond(self, request_id: str, response: Any, by: str = "api") -> bool:
        """Answer an open ask; False when no ask with that id is open (unknown, answered, expired)."""
        return self._settle(request_id, response, by, "ask_resolved")

    def withdraw(self, request_id: str, *, response: Any = None, by: str, kind: str = "ask_resolved") -> bool:
        """Close an ask without an HTTP answer: the terminal answered, time ran out, the asker left."""
        return self._settle(request_id, response, by, kind)

    def _settle(self, request_id: str, response: Any, by: str, kind: str) -> bool:
        with self._lock:
            ask = self._pending.pop(request_id, None)
            if ask is None:
                return False
            ask.answered_by = by
            self._events.publish(kind, request_id=request_id, response=response, by=by)
        if not ask.future.done():
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # a waiter gave up meanwhile
                ask.future.set_result(response)
        return True

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return [ask.to_dict() for ask in self._pending.values()]

    def is_open(self, request_id: str) -> bool:
        with self._lock:
            return request_id in self._pending

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    async def wait(self, ask: PendingAsk, timeout: float | None) -> Any:
        """The answer to ``ask``; on timeout (or cancellation) the ask is withdrawn."""
        waiter = asyncio.wrap_future(ask.future)
        try:
            done, _ = await asyncio.wait({waiter}, timeout=timeout)
        except asyncio.CancelledError:
            self.withdraw(ask.request_id, by="asker", kind="ask_cancelled")
            raise
        if not done:
            if self.withdraw(ask.request_id, by="timeout", kind="ask_expired"):
                waiter.cancel()
                raise AskTimeout(f"no answer within {timeout:g} s")
            return await waiter  # answered in the instant the time ran out
        return waiter.result()

    def close(self) -> None:
        """Withdraw every open ask (the server is stopping): their waiters get ``None``."""
        with self._lock:
            ids = list(self._pending)
        for request_id in ids:
            self.withdraw(request_id, by="shutdown", kind="ask_cancelled")
