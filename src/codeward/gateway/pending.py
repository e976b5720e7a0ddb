"""Upstream requests that outlive one client request: the 2026-07-28 input rounds.

A 2026-07-28 client has no back-channel. When the upstream a call runs on asks something
mid-call, the gateway must answer the client's request with an ``input_required`` result
carrying the question — while the upstream request goes on, waiting for its answer. So in that
era an upstream request runs in a task of its own, a :class:`PendingRequest`, under a random
handle the round's state carries (:attr:`codeward.kernel.client_link.InputRequired.resume`); the
client's next call with the answers finds it by that handle, hands the answers over and waits
again, until the upstream answers.

A pending request ends with its upstream request (bounded by the server's ``call_timeout``);
a result nobody came back for is dropped after :data:`KEPT_S`. A client that abandons a round
(it cancels the request or goes away) cancels the upstream request. The handle only means
something to this process: a round answered on another replica of ``gateway --http`` is told
so and asked to call again.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
import anyio.abc

from codeward.gateway.relay import Relay
from codeward.kernel.client_link import ClientLink, InputRequired

logger = logging.getLogger("codeward.gateway")

T = TypeVar("T")

KEPT_S = 300.0
"""How long a result waits for the client's next round before it is dropped."""


class RoundExpired(Exception):
    """A client's round continues a request that is not waiting here (any more)."""


@dataclass(eq=False)
class PendingRequest(Generic[T]):
    """One upstream request waiting on its client between input rounds."""

    handle: str
    target: tuple[str, str]
    """What the request is for (method, name or URI with its arguments): a round must match it."""
    relay: Relay
    done: anyio.Event = field(default_factory=anyio.Event)
    claimed: anyio.Event = field(default_factory=anyio.Event)
    result: T | None = None
    failure: BaseException | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    async def run(self, start: Callable[[Relay], Awaitable[T]], forget: Callable[[], None]) -> None:
        try:
            with self.scope:
                try:
                    self.result = await start(self.relay)
                except Exception as exc:
                    self.failure = exc
            self.done.set()
            self.relay.wake()
            with anyio.move_on_after(KEPT_S):
                await self.claimed.wait()
        finally:
            self.done.set()
            self.relay.wake()
            forget()


class PendingRequests:
    """The gateway's upstream requests waiting on 2026-07-28 clients, by handle."""

    def __init__(self) -> None:
        self._waiting: dict[str, PendingRequest[Any]] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    async def run(self, tg: anyio.abc.TaskGroup, target: tuple[str, str], link: ClientLink, label: str,
                  start: Callable[[Relay], Awaitable[T]]) -> T:
        """The upstream request for ``target`` made by ``link``'s client, or this round's questions.

        A round with no handle starts the request (in ``tg``, so it outlives this client request);
        a round with one continues it. Returns the result when the upstream answered, raises
        :class:`InputRequired` with the questions it asks meanwhile, :class:`RoundExpired` when
        the handle leads nowhere, and whatever the upstream request raised.
        """
        pending: PendingRequest[T]
        if link.resume is not None:
            found = self._waiting.get(link.resume)
            if found is None or found.target != target:
                raise RoundExpired(label)
            pending = found
            pending.relay.attach(link)
        else:
            handle = secrets.token_urlsafe(18)
            pending = PendingRequest(handle, target, Relay(link, label=label))
            self._waiting[handle] = pending

            def forget() -> None:
                self._waiting.pop(handle, None)

            tg.start_soon(pending.run, start, forget)
        try:
            await _next_step(pending)
            await pending.relay.drain()  # progress and log lines that came between rounds, on this round's stream
        except BaseException:  # the client abandoned the round: nobody will answer the upstream's questions
            pending.scope.cancel()
            raise
        if not pending.done.is_set():
            asks = pending.relay.unsent()
            pending.relay.detach()
            raise InputRequired({ask.key: ask.wire() for ask in asks}, resume=pending.handle)
        pending.claimed.set()
        pending.relay.detach()
        if pending.failure is not None:
            raise pending.failure
        return pending.result  # type: ignore[return-value]


async def _next_step(pending: PendingRequest[Any]) -> None:
    """Wait until the upstream answered or asked something the client has not been asked yet."""
    relay = pending.relay
    while not pending.done.is_set() and not relay.has_unsent():
        await relay.changed.wait()

