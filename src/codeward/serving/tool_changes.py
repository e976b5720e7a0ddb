"""Telling connected clients that the tool list changed (a gateway's upstream added a tool).

The two protocol eras deliver ``notifications/tools/list_changed`` differently:

* handshake-era sessions (stdio, or HTTP with a session id) get it on the session itself, so
  the sessions that asked for tools are remembered (weakly: a closed session just goes);
* 2026-07-28 clients open a ``subscriptions/listen`` stream; the event is published on the
  SDK's subscription bus, whose listen handler delivers it to the streams that asked.

A change may be announced from any code on the event loop (a gateway callback is plain
synchronous code), so :meth:`ToolListNotifier.changed` only sets a flag; a task started by
the server's run loop sends the notifications, several quick changes coalescing into one.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged

logger = logging.getLogger("codeward.serving.server")


class ToolListNotifier:
    """Remembers who listens for tool-list changes, and tells them."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.listen_handler = ListenHandler(self.bus)
        self._sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._dirty = False
        self._wake: anyio.Event | None = None  # made by run(), on the event loop

    def remember(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Note the connection of a handshake-era request (2026-07-28 clients listen instead).

        ``ctx.session`` is a per-request wrapper, gone when the request is; the connection
        under it lives as long as the client, and sends on its standalone channel. The SDK
        does not expose it on this context, hence the attribute (the wrapper is the fallback).
        """
        target = getattr(ctx.session, "_connection", ctx.session)
        try:
            self._sessions.add(target)
        except TypeError:  # cannot be weakly referenced: not remembered
            logger.debug("cannot remember %r for list_changed", type(target).__name__)

    def changed(self) -> None:
        """Announce a change (from synchronous code on the event loop); sent by :meth:`run`."""
        self._dirty = True
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Send the announced changes until cancelled (run it beside the transport)."""
        while True:
            self._wake = anyio.Event()
            if not self._dirty:
                await self._wake.wait()
            self._dirty = False
            await self.notify()

    async def notify(self) -> None:
        """Tell every remembered session and every listen stream, now."""
        await self.bus.publish(ToolsListChanged())
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception as exc:  # a closed session must not stop the others
                logger.debug("dropped tools/list_changed for a session: %s", exc)
