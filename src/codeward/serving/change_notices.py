"""Telling connected clients what changed: the tool, prompt or resource list, one resource, a log line.

A gateway's upstreams change under its clients (a tool added, a resource updated, a message
logged outside any call); the two protocol eras deliver such notices differently:

* handshake-era sessions (stdio, or HTTP with a session id) get them on the session itself, so
  the sessions that asked for a list are remembered (weakly: a closed session just goes), with
  the resources each subscribed to (``resources/subscribe``);
* 2026-07-28 clients open a ``subscriptions/listen`` stream; events are published on the SDK's
  subscription bus, whose listen handler delivers them to the streams that asked (a resource
  update only to streams that named its URI). That era has no channel for a log line outside a
  request, so those reach handshake-era sessions only.

A change may be announced from any code on the event loop (a gateway callback is plain
synchronous code), so :meth:`ChangeNotifier.changed` only marks it; a task started by the
server's run loop sends the notifications, several quick changes of one list coalescing into one.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types import SubscriptionsListenRequestParams, SubscriptionsListenResult

from codeward.serving.request_link import LOG_LEVELS

logger = logging.getLogger("codeward.serving.server")

ListKind = Literal["tools", "prompts", "resources"]
_EVENTS: dict[ListKind, ServerEvent] = {
    "tools": ToolsListChanged(), "prompts": PromptsListChanged(), "resources": ResourcesListChanged(),
}
_SENDERS: dict[ListKind, str] = {
    "tools": "send_tool_list_changed", "prompts": "send_prompt_list_changed", "resources": "send_resource_list_changed",
}
"""The connection's method sending each list's ``notifications/*/list_changed``."""
SubscriptionHook = Callable[[Iterable[str]], Awaitable[None]]
"""Told which resource URIs a 2026-07-28 listen stream watches when it opens, and again when it ends."""


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The connection under a request: ``ctx.session`` is a per-request wrapper, gone when the request
    is; the connection lives as long as the client and sends on its standalone channel. The SDK does
    not expose it on this context, hence the attribute (the wrapper is the fallback)."""
    return getattr(ctx.session, "_connection", ctx.session)


class ChangeNotifier:
    """Remembers who listens for changes, and tells them."""

    def __init__(self, on_listen: SubscriptionHook | None = None, on_unlisten: SubscriptionHook | None = None) -> None:
        """``on_listen``/``on_unlisten``: told of the URIs a 2026-07-28 listen stream watches."""
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self._on_listen = on_listen
        self._on_unlisten = on_unlisten
        self._sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._subscribed: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self._levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._dirty: set[ListKind] = set()
        self._updated: list[str] = []
        self._forwarded: list[tuple[str, dict[str, Any]]] = []
        self._wake: anyio.Event | None = None  # made by run(), on the event loop

    # -- who listens -------------------------------------------------------------------------

    def remember(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Note the connection of a handshake-era request (2026-07-28 clients listen instead)."""
        try:
            self._sessions.add(connection_of(ctx))
        except TypeError:  # cannot be weakly referenced: not remembered
            logger.debug("cannot remember %r for list_changed", type(ctx.session).__name__)

    def subscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        """A handshake-era session asked to hear when ``uri`` changes."""
        self.remember(ctx)
        try:
            self._subscribed.setdefault(connection_of(ctx), set()).add(uri)
        except TypeError:
            logger.debug("cannot remember a subscription of %r", type(ctx.session).__name__)

    def set_level(self, ctx: ServerRequestContext[Any, Any], level: str) -> None:
        """A handshake-era session set its log level: log lines outside any request below it are not sent to it."""
        self.remember(ctx)
        try:
            self._levels[connection_of(ctx)] = level
        except TypeError:
            logger.debug("cannot remember the log level of %r", type(ctx.session).__name__)

    def unsubscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> bool:
        """Forget one subscription; whether the session had it."""
        uris = self._subscribed.get(connection_of(ctx))
        if uris is None or uri not in uris:
            return False
        uris.discard(uri)
        return True

    async def listen_handler(self, ctx: ServerRequestContext[Any, Any],
                             params: SubscriptionsListenRequestParams) -> SubscriptionsListenResult:
        """``subscriptions/listen``: the SDK's handler, with the watched URIs told to the hooks."""
        uris = list(params.notifications.resource_subscriptions or ())
        if uris and self._on_listen is not None:
            await self._on_listen(uris)
        try:
            return await self._listen(ctx, params)
        finally:
            if uris and self._on_unlisten is not None:
                with anyio.CancelScope(shield=True):
                    await self._on_unlisten(uris)

    # -- what changed ------------------------------------------------------------------------

    def changed(self, kind: str = "tools") -> None:
        """Announce that a list (``tools``, ``prompts``, ``resources``) changed (from synchronous code on the
        event loop); sent by :meth:`run`."""
        for known in _SENDERS:
            if known == kind:
                self._dirty.add(known)
                self._poke()

    def updated(self, uri: str) -> None:
        """Announce that the resource at ``uri`` changed; sent to those who subscribed to it."""
        self._updated.append(uri)
        self._poke()

    def forward(self, method: str, params: dict[str, Any]) -> None:
        """Pass another server's notification on to every handshake-era session (an upstream's
        ``notifications/elicitation/complete``: the client that was shown the URL retries); sent by :meth:`run`."""
        self._forwarded.append((method, params))
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Send the announced changes until cancelled (run it beside the transport)."""
        while True:
            self._wake = anyio.Event()
            if not self._dirty and not self._updated and not self._forwarded:
                await self._wake.wait()
            dirty, self._dirty = self._dirty, set()
            updated, self._updated = list(dict.fromkeys(self._updated)), []
            forwarded, self._forwarded = self._forwarded, []
            for kind in ("tools", "prompts", "resources"):
                if kind in dirty:
                    await self.notify(kind)
            for uri in updated:
                await self.notify_updated(uri)
            for method, params in forwarded:
                for session in list(self._sessions):
                    try:
                        await session.notify(method, params)
                    except Exception as exc:
                        logger.debug("dropped %s for a session: %s", method, exc)

    async def notify(self, kind: ListKind = "tools") -> None:
        """Tell every remembered session and every listen stream that a list changed, now."""
        await self.bus.publish(_EVENTS[kind])
        for session in list(self._sessions):
            try:
                await getattr(session, _SENDERS[kind])()
            except Exception as exc:  # a closed session must not stop the others
                logger.debug("dropped %s/list_changed for a session: %s", kind, exc)

    async def notify_one(self, ctx: ServerRequestContext[Any, Any], kind: ListKind = "tools", *, modern: bool,
                         listeners: bool) -> None:
        """Tell one client that a list changed for it alone (its lean listing): a handshake-era client on its
        connection; a 2026-07-28 client on its listen streams, which ``listeners`` says are its own (a
        stdio server's), since a listen stream names no session."""
        if modern:
            if listeners:
                await self.bus.publish(_EVENTS[kind])
            return
        try:
            await getattr(connection_of(ctx), _SENDERS[kind])()
        except Exception as exc:  # a closed session is told nothing
            logger.debug("dropped %s/list_changed for a session: %s", kind, exc)

    async def notify_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))
        for session, uris in list(self._subscribed.items()):
            if uri in uris:
                try:
                    await session.send_resource_updated(uri)
                except Exception as exc:
                    logger.debug("dropped resources/updated for a session: %s", exc)

    async def log(self, level: str, data: Any, logger_name: str | None) -> None:
        """A log line outside any request, to every handshake-era session whose log level admits it (all do
        until they set one)."""
        for session in list(self._sessions):
            floor = self._levels.get(session)
            if floor is not None and LOG_LEVELS.index(_level(level)) < LOG_LEVELS.index(_level(floor)):
                continue
            try:
                with warnings.catch_warnings():  # the logging capability is deprecated in 2026-07-28, not here
                    warnings.simplefilter("ignore")
                    await session.log(level, data, logger_name)
            except Exception as exc:
                logger.debug("dropped a log message for a session: %s", exc)


def _level(name: str) -> str:
    return name if name in LOG_LEVELS else "info"
