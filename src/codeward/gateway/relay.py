"""The way back from an upstream request to the client that made it.

An upstream server believes the gateway is its client. During a call it may ask for a sampled
message (``sampling/createMessage``), a form or a URL to visit (``elicitation/create``) or the
roots (``roots/list``), and it reports progress and log messages. Each goes to the MCP client
of the call it belongs to, in that client's protocol era (:mod:`codeward.kernel.client_link`):

* a :class:`Relay` is one upstream request in flight and the client it belongs to: it asks the
  client (at once, or in a 2026-07-28 input round) and passes progress and log lines on in order;
* a :class:`RelayBoard` (one per upstream) knows which are running and which one a request from
  the upstream belongs to — the call whose task the transport delivered it in (streamable HTTP
  carries that along), else the only call running, else the latest of one client's calls.
  Requests that could belong to the calls of several clients (stdio and SSE do not say which)
  are refused rather than guessed;
* :class:`ContextLink` is the client of a call made outside an MCP server (the agent, the
  command line). The ``ClientSession`` callbacks that use all this are in
  :mod:`codeward.gateway.callbacks`.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from codeward.kernel.client_link import ClientLink
from codeward.kernel.context import NullReporter, ToolContext

logger = logging.getLogger("codeward.gateway")

QUESTIONS: dict[str, str] = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
"""What an upstream may ask its client, by method, and the capability the client must have declared."""

_CURRENT: ContextVar[Relay | None] = ContextVar("codeward_gateway_relay", default=None)
"""The relay of the upstream request running in this context (streamable HTTP delivers the
upstream's requests about a call in the call's own context)."""

KEPT_MESSAGES = 256
"""Progress and log messages a relay keeps while its client cannot take them (between 2026-07-28 rounds);
past that the oldest go: an upstream flooding a waiting call costs it its oldest news, not the gateway's memory."""


class Unattributable(Exception):
    """A request from the upstream could belong to the calls of more than one client."""


@dataclass(eq=False)
class Ask:
    """One question of the upstream waiting for a 2026-07-28 client's answer (asked in an input round)."""

    key: str
    method: str
    params: dict[str, Any]
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Any = None
    sent: bool = False

    def wire(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}


class Relay:
    """One upstream request in flight, and the way back to the client that made it.

    In the handshake era the link stays for the whole request and questions go through it at
    once. A 2026-07-28 call spans several client requests (input rounds): :meth:`attach` gives
    the relay each round's link, questions wait in :attr:`asks` for the next round, and progress
    and log messages sent between rounds wait for the next link.
    """

    def __init__(self, link: ClientLink | None, *, label: str) -> None:
        self.label = label
        """The call as messages name it (``alias__tool``)."""
        self.link = link
        self.client = link.client if link is not None else ""
        self.modern = link.modern if link is not None else False
        self.asks: list[Ask] = []
        self.changed = anyio.Event()
        """Set (and replaced) when a question arrives or the request ends (see :meth:`wake`)."""
        self._counter = 0
        self._pending: deque[tuple[str, tuple[Any, ...]]] = deque(maxlen=KEPT_MESSAGES)
        self._sending = anyio.Lock()

    @property
    def wants_progress(self) -> bool:
        return self.link is not None and self.link.wants_progress

    # -- 2026-07-28 rounds -------------------------------------------------------------------

    def attach(self, link: ClientLink) -> None:
        """A new round of the call: its link, and the answers it brought."""
        self.link = link
        for ask in self.asks:
            if ask.sent and not ask.answered.is_set() and ask.key in link.answers:
                ask.answer = link.answers[ask.key]
                ask.answered.set()

    def detach(self) -> None:
        self.link = None

    def unsent(self) -> list[Ask]:
        """The questions the next input round must ask (asked once and not answered: asked again)."""
        waiting = [ask for ask in self.asks if not ask.answered.is_set()]
        for ask in waiting:
            ask.sent = True
        return waiting

    def wake(self) -> None:
        """Wake whoever waits on :attr:`changed` (a question arrived, or the request ended)."""
        changed, self.changed = self.changed, anyio.Event()
        changed.set()

    def has_unsent(self) -> bool:
        return any(not ask.sent and not ask.answered.is_set() for ask in self.asks)

    # -- questions ---------------------------------------------------------------------------

    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        """The client's answer to one question of the upstream (its JSON), in the client's era."""
        link = self.link
        if not self.modern:
            if link is None:
                raise RelayRefused("the call this request belongs to has ended")
            return await link.request(method, params)
        self._counter += 1
        ask = Ask(f"codeward.relay.{self._counter}", method, params)
        self.asks.append(ask)
        self.wake()
        try:
            await ask.answered.wait()
        finally:
            self.asks.remove(ask)
        return ask.answer

    # -- progress and log messages, in order ---------------------------------------------------

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """An upstream progress notification (called in the order they arrived: see :meth:`drain`)."""
        self._pending.append(("progress", (progress, total, message)))
        await self._flush()

    async def log(self, level: str, data: Any, logger_name: str | None) -> None:
        self._pending.append(("log", (level, data, logger_name)))
        await self._flush()

    async def drain(self) -> None:
        """Deliver every progress and log message that arrived before the upstream's answer.

        The SDK hands each notification to a task of its own, and each task queues its message in
        its first step, before it yields. Those tasks were started before the answer was read, and
        the event loop runs ready tasks in the order they became ready (asyncio and uvloop alike),
        so by the time the answer reaches the caller every one of them has queued its message: the
        flush sends them all, in order, after any still being sent, before the caller sees the result.
        """
        if self._pending or self._sending.locked():
            await self._flush()

    async def _flush(self) -> None:
        async with self._sending:
            while self._pending and self.link is not None:
                kind, values = self._pending.popleft()
                try:
                    if kind == "progress":
                        await self.link.progress(*values)
                    else:
                        await self.link.log(*values)
                except Exception as exc:  # a closed stream loses the message, never the call
                    logger.debug("gateway: dropped a %s message of %s: %s", kind, self.label, exc)


class RelayRefused(Exception):
    """A question of the upstream that is not forwarded; the message says why (the upstream sees it)."""


class RelayBoard:
    """The requests running on one upstream, and which one a request from the upstream belongs to."""

    def __init__(self) -> None:
        self._running: list[Relay] = []

    @contextmanager
    def running(self, relay: Relay | None) -> Iterator[None]:
        if relay is None:
            yield
            return
        self._running.append(relay)
        token = _CURRENT.set(relay)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            self._running.remove(relay)

    def owner(self) -> Relay | None:
        """The relay a request from the upstream belongs to; None when no call is running.

        Raises :class:`Unattributable` when calls of several clients run and the transport does
        not say which call the request is about.
        """
        current = _CURRENT.get()
        if current is not None and current in self._running:
            return current
        if not self._running:
            return None
        clients = {relay.client for relay in self._running}
        if len(self._running) == 1 or (len(clients) == 1 and None not in clients):
            return self._running[-1]
        raise Unattributable()


class ContextLink:
    """The client of a call made outside an MCP server (the agent, ``codeward call``, a script), as
    a :class:`ClientLink`: form elicitation through the context's peer, progress and log messages
    through its reporter; nothing else can be asked."""

    modern = False
    client = ""
    answers: Mapping[str, Any] = {}
    resume: str | None = None

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self.capabilities: Mapping[str, Any] = {"elicitation": {"form": {}}} if ctx.peer is not None else {}
        self.wants_progress = not isinstance(ctx.reporter, NullReporter)

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        peer = self._ctx.peer
        if method != "elicitation/create" or peer is None:
            raise RelayRefused(f"this call was not made by an MCP client, so {QUESTIONS.get(method, method)} "
                               "cannot be passed on")
        answer = await anyio.to_thread.run_sync(peer.elicit, str(params.get("message", "")),
                                                dict(params.get("requestedSchema") or {}))
        action = str(answer.get("action", "decline"))
        content = answer.get("content") if action == "accept" else None
        return {"action": action, **({"content": content} if content is not None else {})}

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await anyio.to_thread.run_sync(self._ctx.progress, progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        await anyio.to_thread.run_sync(self._ctx.log, level, f"{logger}: {text}" if logger else text)


def link_of(ctx: ToolContext) -> ClientLink | None:
    """The client a call's upstream questions and reports go to: the MCP client behind it, else the context's
    own peer and reporter (None when it has neither)."""
    if ctx.link is not None:
        return ctx.link
    if ctx.peer is None and isinstance(ctx.reporter, NullReporter):
        return None
    return ContextLink(ctx)
