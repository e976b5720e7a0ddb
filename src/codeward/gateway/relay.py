"""What an upstream asks of its client, passed to the client that made the call.

An upstream server believes the gateway is its client. During a call it may ask for a sampled
message (``sampling/createMessage``), a form or a URL to visit (``elicitation/create``) or the
roots (``roots/list``), and it reports progress and log messages. Each goes to the MCP client
of the call it belongs to, in that client's protocol era (:mod:`codeward.client_link`):

* a :class:`Relay` is one upstream request in flight and the client it belongs to; a
  :class:`RelayBoard` (one per upstream) knows which are running and which one a request from
  the upstream belongs to — the call whose task the transport delivered it in (streamable HTTP
  carries that along), else the only call running, else the latest of one client's calls.
  Requests that could belong to the calls of several clients (stdio and SSE do not say which)
  are refused rather than guessed;
* :class:`UpstreamCallbacks` are the ``ClientSession`` callbacks. Whatever goes wrong in one —
  no call running, a client that did not declare the capability or cannot answer, a refusal, an
  answer that breaks the protocol, a bug — becomes that request's JSON-RPC error, which the
  upstream sees and the call ends with; the gateway and its other calls never notice.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from codeward.client_link import ClientLink
from codeward.context import NullReporter, ToolContext

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

OutOfCallLog = Callable[[types.LoggingMessageNotificationParams], Awaitable[None]]
"""Where an upstream's log messages go when no call is running (the gateway's clients at large)."""


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


class UpstreamCallbacks:
    """The ``ClientSession`` callbacks of one upstream: each request relayed, each failure contained."""

    def __init__(self, alias: str, board: RelayBoard, *, sampling: bool, out_of_call_log: OutOfCallLog) -> None:
        self.alias = alias
        self.board = board
        self.sampling_allowed = sampling
        self._out_of_call_log = out_of_call_log

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        if not self.sampling_allowed:
            return _refusal(f"sampling is turned off for server {self.alias!r} (sampling = false in its "
                            "[mcp.servers] table), so the gateway did not pass the request on")
        result: type[BaseModel] = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self._relay("sampling/createMessage", params, result)

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        answer = await self._relay("elicitation/create", params, types.ElicitResult)
        if isinstance(answer, types.ElicitResult) and answer.action == "accept" and \
                isinstance(params, types.ElicitRequestFormParams):
            return answer.model_copy(update={"content": with_defaults(answer.content, params.requested_schema)})
        return answer

    async def roots(self, context: Any) -> Any:
        return await self._relay("roots/list", None, types.ListRootsResult)

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log message: to the call it belongs to, else (no call running) to the gateway's clients at large."""
        try:
            named = params.model_copy(update={"logger": _logger_name(self.alias, params.logger)})
            try:
                relay = self.board.owner()
            except Unattributable:  # one of several clients' calls: told to none rather than to the wrong one
                logger.debug("gateway: a log line of server %r could be any of several clients' calls; dropped",
                             self.alias)
                return
            if relay is not None:
                await relay.log(str(named.level), named.data, named.logger)
            else:
                await self._out_of_call_log(named)
        except Exception as exc:  # a log message never ends anything
            logger.debug("gateway: dropped a log message of server %r: %s", self.alias, exc)

    async def _relay(self, method: str, params: BaseModel | None, result: type[BaseModel]) -> Any:
        """Ask the client of the call this request belongs to; any failure is this request's error."""
        what = QUESTIONS[method]
        try:
            relay = self.board.owner()
            if relay is None:
                raise RelayRefused(f"{what} requests are passed to the client of a call, and no call to server "
                                   f"{self.alias!r} is running now")
            missing = lacking(relay.link, method, params)
            if missing:
                raise RelayRefused(f"the client that called {relay.label} does not support {missing}, so the "
                                   "request cannot be passed on")
            wire = params.model_dump(by_alias=True, mode="json", exclude_none=True) if params is not None else {}
            answer = await relay.ask(method, wire)
            return result.model_validate(answer, by_name=False)
        except Unattributable:
            return _refusal(f"calls of several clients are running on server {self.alias!r} and its transport "
                            f"does not say which one this {what} request belongs to, so it was not passed on")
        except RelayRefused as refused:
            return _refusal(str(refused))
        except MCPError as exc:  # the client's own refusal, passed on as it is
            return exc.error
        except ValidationError as exc:
            logger.warning("gateway: the client answered %s of server %r with an invalid result: %s",
                           method, self.alias, exc)
            return types.ErrorData(code=types.INTERNAL_ERROR,
                                   message=f"codeward gateway: the client's answer to {method} is not a valid "
                                   f"{result.__name__}")
        except anyio.get_cancelled_exc_class():
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # an upstream's request must never end the gateway
            logger.warning("gateway: passing %s of server %r to the client failed: %s: %s", method, self.alias,
                           type(exc).__name__, exc)
            return types.ErrorData(code=types.INTERNAL_ERROR,
                                   message=f"codeward gateway: passing {method} to the client failed "
                                   f"({type(exc).__name__}: {exc})")


def lacking(link: ClientLink | None, method: str, params: BaseModel | None) -> str | None:
    """The capability the client lacks for this question ("" or None when it has it)."""
    if link is None:
        return QUESTIONS[method]
    declared = link.capabilities.get(QUESTIONS[method])
    if not isinstance(declared, Mapping):
        return QUESTIONS[method]
    if method == "elicitation/create":
        mode = getattr(params, "mode", None) or "form"
        if mode == "url" and "url" not in declared:
            return "URL elicitation"
        if mode == "form" and declared and "form" not in declared:  # {} means form (protocol 2025-06-18)
            return "form elicitation"
    if method == "sampling/createMessage" and getattr(params, "tools", None) and "tools" not in declared:
        return "sampling with tools"
    return None


def with_defaults(content: Mapping[str, Any] | None, schema: Mapping[str, Any]) -> dict[str, Any]:
    """Elicited form content with the schema's ``default`` filled in for omitted fields (SEP-1034)."""
    filled = dict(content or {})
    properties = schema.get("properties", {})
    if isinstance(properties, Mapping):
        for name, spec in properties.items():
            if name not in filled and isinstance(spec, Mapping) and "default" in spec:
                filled[name] = spec["default"]
    return filled


def _refusal(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=f"codeward gateway: {message}")


def _logger_name(alias: str, name: str | None) -> str:
    """An upstream's logger, namespaced like its tools: ``alias__logger`` (``alias`` when it names none)."""
    return f"{alias}__{name}" if name else alias


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
