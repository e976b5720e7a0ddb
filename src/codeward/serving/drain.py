"""A server's stop in two steps, so a rolling restart loses no call.

SIGTERM (or Ctrl-C) starts the drain: readiness turns false (``/readyz`` answers 503, the balancer
and Kubernetes stop sending work), every new JSON-RPC request is answered ``503`` with an error
saying the replica is stopping (the shipped nginx and HAProxy configurations send it to another
replica), calls that wait for a person are handed back (their approval withdrawn from every
replica's list, the call answered "not run: send it again"), and the calls already running finish —
up to ``[server] drain_timeout`` seconds. Then the server stops and the command exits 0. A second
SIGTERM or Ctrl-C stops at once.

One :class:`Drain` per server, made by the serving runtime and handed to the HTTP side (which counts
the calls in flight) and to the approvals (which hand theirs back).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio

STOPPING = "this codeward replica is stopping (draining) and takes no new work"


class Drain:
    """Whether this server is stopping, and the calls it still runs."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.draining = False
        self.started: float | None = None
        self._running = 0
        self._idle = anyio.Event()
        self._idle.set()
        self._hand_backs: list[Callable[[], Awaitable[None]]] = []
        self._standing: set[anyio.CancelScope] = set()

    @property
    def running(self) -> int:
        """Requests in flight (tool calls and every other JSON-RPC request)."""
        return self._running

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Count one request in flight for as long as it is answered."""
        self._running += 1
        self._idle = anyio.Event() if self._running == 1 else self._idle
        try:
            yield
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    @contextmanager
    def standing(self) -> Iterator[anyio.CancelScope]:
        """A stream that only ends when the client leaves (a session's ``GET``): ended by the drain once
        the calls are done, so the client reconnects elsewhere before the server stops."""
        with anyio.CancelScope() as scope:
            self._standing.add(scope)
            try:
                yield scope
            finally:
                self._standing.discard(scope)

    def on_drain(self, hand_back: Callable[[], Awaitable[None]]) -> None:
        """Run ``hand_back`` when the drain starts (the approvals give their held calls back)."""
        self._hand_backs.append(hand_back)

    async def drain(self) -> bool:
        """Stop taking work, hand held calls back, and wait for the rest up to the deadline; True if every
        call finished in time."""
        if not self.draining:
            self.draining = True
            self.started = time.monotonic()
            for hand_back in self._hand_backs:
                await hand_back()
        with anyio.move_on_after(self.deadline):
            await self._idle.wait()
        for scope in list(self._standing):
            scope.cancel()
        return not self._running
