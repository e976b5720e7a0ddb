"""The event stream of a session: one numbered sequence, read three ways.

``GET /api/events`` drains a bounded queue (each event is handed out once, as the seed's
scripts expect); live watchers subscribe and get every event as it happens, on their own
event loop, without polling; a bounded history lets a watcher that reconnects resume after
the last event it saw. Publishing is thread-safe and never blocks: a watcher too slow to
keep up is disconnected rather than allowed to hold the session back.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

Event = dict[str, Any]
DEFAULT_HISTORY = 1000
DEFAULT_DRAIN = 10_000
SUBSCRIBER_QUEUE = 2000


class Subscription:
    """One live watcher: events arrive on the watcher's own loop through a bounded queue."""

    def __init__(self, hub: EventHub, loop: asyncio.AbstractEventLoop) -> None:
        self._hub = hub
        self._loop = loop
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=SUBSCRIBER_QUEUE)
        self.closed = False
        self.lagged = False

    def offer(self, event: Event | None) -> bool:
        """Hand an event over from any thread; False once this watcher is gone."""
        if self.closed:
            return False
        try:
            self._loop.call_soon_threadsafe(self._put, event)
        except RuntimeError:  # the watcher's loop is closed
            self.closed = True
            return False
        return True

    def _put(self, event: Event | None) -> None:
        if self.closed and event is not None:
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.lagged = True
            self.closed = True
            self._queue = asyncio.Queue(maxsize=1)
            self._queue.put_nowait(None)

    async def next(self, timeout: float | None = None) -> Event | None:
        """The next event; ``None`` when the stream ended; raises ``TimeoutError`` after ``timeout``."""
        event = await asyncio.wait_for(self._queue.get(), timeout)
        if event is None:
            self.closed = True
        return event

    def close(self) -> None:
        self.closed = True
        self._hub.unsubscribe(self)


class EventHub:
    """Numbered events with a drain queue, a replay history and live subscriptions."""

    def __init__(self, lock: threading.RLock | None = None, *, history: int = DEFAULT_HISTORY,
                 drain: int = DEFAULT_DRAIN, clock: Callable[[], float] = time.time) -> None:
        self._lock = lock or threading.RLock()
        self._seq = 0
        self._history: deque[Event] = deque(maxlen=history)
        self._drain: deque[Event] = deque(maxlen=drain)
        self._subscribers: list[Subscription] = []
        self._clock = clock
        self._closed = False

    @property
    def seq(self) -> int:
        """The number of the last event published (0 before the first)."""
        with self._lock:
            return self._seq

    def publish(self, kind: str, **payload: Any) -> Event:
        with self._lock:
            self._seq += 1
            event: Event = {"seq": self._seq, "type": kind, "time": round(self._clock(), 3), **payload}
            self._history.append(event)
            self._drain.append(event)
            self._subscribers = [s for s in self._subscribers if s.offer(event)]
            return event

    def drain(self) -> list[Event]:
        with self._lock:
            events = list(self._drain)
            self._drain.clear()
            return events

    def since(self, seq: int) -> list[Event] | None:
        """Events after ``seq`` from the history, or ``None`` if some of them were already dropped."""
        with self._lock:
            if seq >= self._seq:
                return []
            if not self._history or self._history[0]["seq"] > seq + 1:
                return None
            return [e for e in self._history if e["seq"] > seq]

    def subscribe(self, loop: asyncio.AbstractEventLoop | None = None,
                  before: Callable[[], Any] | None = None) -> tuple[Subscription, Any]:
        """A new live subscription; ``before()`` runs under the same lock as publishing, so a
        snapshot it takes is exactly the state before the first event the subscription gets."""
        subscription = Subscription(self, loop or asyncio.get_running_loop())
        with self._lock:
            taken = before() if before is not None else None
            if self._closed:
                subscription.offer(None)
            else:
                self._subscribers.append(subscription)
            return subscription, taken

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    @property
    def watchers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def close(self) -> None:
        """End every live subscription (the server is stopping)."""
        with self._lock:
            self._closed = True
            for subscription in self._subscribers:
                subscription.offer(None)
            self._subscribers.clear()
