"""A bounded in-memory event store so streamable-HTTP clients can resume a dropped SSE stream.

With an event store the SDK stamps every SSE event with an id; a client that lost its stream
reconnects with ``Last-Event-ID`` and gets what it missed. Only the newest events are kept.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

DEFAULT_MAX_EVENTS = 2000


class BoundedEventStore(EventStore):
    """Keeps the last ``max_events`` events of all streams, oldest dropped first."""

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self._max = max_events
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self._max:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if last_event_id not in self._events:
            return None
        stream_id = self._events[last_event_id][0]
        found = False
        for event_id, (stream, message) in list(self._events.items()):
            if found and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            if event_id == last_event_id:
                found = True
        return stream_id
