"""A server's stop in two steps, so a rolling restart loses no call.

SIGTERM (or Ctrl-C) starts the drain: readiness turns false (``/readyz`` answers 503, the balancer
and Kubernetes stop sending work), every new JSON-RPC request is answered ``503`` with an error
saying the replica is stopping (the shipped nginx and HAProxy configurations send it to another
replica), calls that wait for a person are handed back (their approval withdrawn from every
replica's list, the call answered "not run: send it again"), and the calls already running finish —
up to ``[server] drain_timeout`` seconds. Then the server stops and the command exits 0. A second
SIGTERM or Ctrl-C stops at once. A stdio server drains the same way on SIGTERM
(:mod:`codeward.serving.transport.stdio_drain`): its client's new requests are answered with the
same error, the calls it runs finish, then it exits 0 (Ctrl-C there stays an immediate stop, 130).

One :class:`Drain` per server, made by the serving runtime and handed to the HTTP side (which counts
the calls in flight) and to the approvals (which hand theirs back).
"""

from __future__ import annotations

import sys
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
        self.begin()
        try:
            yield
        finally:
            self.end()

    def begin(self) -> None:
        """One more request in flight (:meth:`serving`, or a transport that sees its answer go out)."""
        self._running += 1
        self._idle = anyio.Event() if self._running == 1 else self._idle

    def end(self) -> None:
        """A request answered."""
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

    def starting_note(self, signal_name: str) -> str:
        """What a server says on stderr when a signal starts its drain."""
        return (f"{signal_name}: draining — no new requests, {self.running} in flight get up to "
                f"{self.deadline:g}s ([server] drain_timeout); {signal_name} again stops at once")

    def finished_note(self, finished: bool) -> str:
        """What it says when the drain is over."""
        return ("drained: every call finished; stopping" if finished else
                f"drain deadline reached with {self.running} calls running; they are cut")


def say(text: str) -> None:
    """A line on stderr about the server's stop (what an operator reads in the supervisor's log)."""
    print(f"codeward: {text}", file=sys.stderr, flush=True)
