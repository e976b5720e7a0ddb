"""The stdio side of a drain (:mod:`codeward.serving.drain`): SIGTERM lets the calls a stdio server runs
finish before it exits 0.

A supervisor (systemd, ``docker stop``, an IDE closing a project) stops a stdio server with SIGTERM; it
used to end at once, cutting every call in flight. Here the signal starts the drain instead: each
request the client sends afterwards is answered with a JSON-RPC error naming the stop (the client
sends it again to the server that replaces this one), notifications and the client's answers to the
server's own requests (an elicitation a running call waits on) still go through, and once every
request seen before the signal has had its answer written — or ``[server] drain_timeout`` has passed —
the server stops and the command exits 0. A second SIGTERM stops at once. Ctrl-C is not changed (an
immediate stop, exit 130).

Requests are counted on the wire, not in the tool chain: a request is in flight from the line read to
its answer written (or the client's ``notifications/cancelled`` for it), whatever method it is.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from codeward.serving.drain import Drain, say

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream

STOPPING_CODE = -32000
STOPPING_STDIO = ("this codeward server is stopping (SIGTERM: draining) and takes no new requests; nothing ran: "
                  "send the request again once the server is restarted")


class _InFlight:
    """The ids of the client's requests not yet answered, counted in the drain."""

    def __init__(self, drain: Drain) -> None:
        self.drain = drain
        self._ids: set[str] = set()

    def begin(self, request_id: Any) -> None:
        key = repr(request_id)
        if key not in self._ids:
            self._ids.add(key)
            self.drain.begin()

    def end(self, request_id: Any) -> None:
        key = repr(request_id)
        if key in self._ids:
            self._ids.discard(key)
            self.drain.end()


class DrainingRead(ObjectReceiveStream[SessionMessage | Exception]):
    """The client's messages: each request counted, or refused while draining (answered on ``write``)."""

    def __init__(self, stream: ReadStream[SessionMessage | Exception], write: DrainingWrite) -> None:
        self._stream = stream
        self._write = write

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._stream.receive()
            message = item.message if isinstance(item, SessionMessage) else None
            if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                self._write.in_flight.end((message.params or {}).get("requestId"))
            if not isinstance(message, JSONRPCRequest):
                return item
            if not self._write.in_flight.drain.draining:
                self._write.in_flight.begin(message.id)
                return item
            await self._write.refuse(message)

    async def aclose(self) -> None:
        await self._stream.aclose()


class DrainingWrite(ObjectSendStream[SessionMessage]):
    """The server's messages: an answer ends its request's count."""

    def __init__(self, stream: WriteStream[SessionMessage], drain: Drain) -> None:
        self._stream = stream
        self.in_flight = _InFlight(drain)

    async def send(self, item: SessionMessage, /) -> None:
        await self._stream.send(item)
        if isinstance(item.message, (JSONRPCResponse, JSONRPCError)):
            self.in_flight.end(item.message.id)

    async def refuse(self, request: JSONRPCRequest) -> None:
        """Answer a request sent while the server drains: not run, send it again."""
        await self._stream.send(SessionMessage(JSONRPCError.model_validate({
            "jsonrpc": "2.0", "id": request.id,
            "error": {"code": STOPPING_CODE, "message": STOPPING_STDIO}})))

    async def aclose(self) -> None:
        await self._stream.aclose()


def draining_streams(read: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage],
                     drain: Drain) -> tuple[DrainingRead, DrainingWrite]:
    """The transport's two streams, counted and refused by ``drain``."""
    writing = DrainingWrite(write, drain)
    return DrainingRead(read, writing), writing


@contextmanager
def drain_on_sigterm(drain: Drain, serving: anyio.CancelScope) -> Iterator[None]:
    """While serving: SIGTERM drains, then cancels ``serving`` (the command returns and exits 0); a second
    SIGTERM cancels it at once. Outside the main thread (an embedding host) signals are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Future[None]] = []

    async def drain_then_stop() -> None:
        say(drain.starting_note("SIGTERM"))
        say(drain.finished_note(await drain.drain()))
        serving.cancel()

    def stop() -> None:
        if stopping:
            say(f"SIGTERM again: stopping now, {drain.running} calls cut")
            serving.cancel()
            return
        stopping.append(asyncio.ensure_future(drain_then_stop()))

    def on_term(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(stop)

    original = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, original)
        for task in stopping:
            task.cancel()
