"""Newline-delimited JSON-RPC streams over asyncio pipe transports.

These are the ``(read_stream, write_stream)`` pair the SDK's ``Server.run`` consumes, but
without the SDK stdio transport's worker threads and memory-stream hops: the event loop
reads the pipe, :meth:`MessageReader.receive` parses the next complete line, and
:meth:`MessageWriter.send` hands the serialized message straight to the pipe transport.
Back-pressure comes from the transports' flow control, not from queues in between.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable
from typing import cast

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic_core import PydanticSerializationError

from codeward.engines.jsonrpc.guard import Rejection, screen

logger = logging.getLogger("codeward.serving.transport.stdio")

READ_HIGH_WATER = 4 * 1024 * 1024
"""Bytes of complete, unread lines after which the pipe stops being read until they are consumed."""


class LineReaderProtocol(asyncio.Protocol):
    """Cuts the incoming bytes into lines, however the pipe splits them; holds partial lines."""

    def __init__(self, loop: asyncio.AbstractEventLoop, high_water: int = READ_HIGH_WATER) -> None:
        self._loop = loop
        self._high_water = high_water
        self._partial = bytearray()
        self._lines: deque[bytes] = deque()
        self._queued = 0
        self._paused = False
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.ReadTransport | None = None
        self.closed: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A pipe transport; uvloop's (the fast HTTP stack's loop) are not asyncio's classes.
        self.transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        if data.find(b"\n") < 0:
            self._partial += data
            return
        pieces = data.split(b"\n")
        if self._partial:
            self._partial += pieces[0]
            pieces[0] = bytes(self._partial)
            self._partial.clear()
        self._partial += pieces.pop()
        for line in pieces:
            self._push(line)
        if self._queued > self._high_water and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        self._finish()
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish()
        if not self.closed.done():
            self.closed.set_result(None)

    async def next_line(self) -> bytes | None:
        """The next complete line without its newline, or ``None`` once the pipe is at EOF."""
        while not self._lines:
            if self._eof:
                return None
            if self._waiter is not None:
                raise anyio.BusyResourceError("receiving")
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        line = self._lines.popleft()
        self._queued -= len(line)
        if self._paused and self._queued <= self._high_water // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return line

    def wake(self) -> None:
        """Let a pending :meth:`next_line` re-check its state (used when the stream closes)."""
        self._wake()

    def _push(self, line: bytes) -> None:
        if line.strip():  # blank lines (keep-alives, CRLF leftovers) carry no message
            self._lines.append(line)
            self._queued += len(line)

    def _finish(self) -> None:
        if self._partial:  # a last message without its newline still counts
            self._push(bytes(self._partial))
            self._partial.clear()
        self._eof = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class MessageReader(ObjectReceiveStream[SessionMessage | Exception]):
    """The read stream: each line parsed as a JSON-RPC message (iteration and the context manager
    from anyio's :class:`~anyio.abc.ObjectReceiveStream`).

    With ``reply`` (the write side), each line is screened first (:mod:`jsonrpc_guard`): one
    too large or too deep is refused unparsed, and one that is not valid JSON-RPC is answered
    with a JSON-RPC error through ``reply`` instead of reaching the SDK, which would drop it
    unanswered. Without it, a line that does not parse is an exception item, as in the SDK.
    """

    def __init__(self, protocol: LineReaderProtocol, reply: Callable[[bytes], None] | None = None) -> None:
        self._protocol = protocol
        self._reply = reply
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            line = await self._protocol.next_line()
            if self._closed:
                raise anyio.ClosedResourceError
            if line is None:
                raise anyio.EndOfStream
            if self._reply is None:
                return parse_line(line)
            screened = screen(line)
            if not isinstance(screened, Rejection):
                return SessionMessage(screened)
            logger.warning("refused a message from the client: %s", screened.reason)
            answer = screened.reply_bytes()
            if answer is not None:
                self._reply(answer + b"\n")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            transport = self._protocol.transport
            if transport is not None:
                transport.close()
            self._protocol.wake()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class WriterProtocol(asyncio.Protocol):
    """Flow control for the write pipe: ``drain`` waits while the transport's buffer is full."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self.transport: asyncio.WriteTransport | None = None
        self.lost = False
        self.closed: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A pipe transport; uvloop's (the fast HTTP stack's loop) are not asyncio's classes.
        self.transport = cast(asyncio.WriteTransport, transport)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._release_waiters()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._release_waiters()
        if not self.closed.done():
            self.closed.set_result(None)

    async def drain(self) -> None:
        if not self._paused or self.lost:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._drain_waiters:
                self._drain_waiters.remove(waiter)

    def _release_waiters(self) -> None:
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()


class MessageWriter(ObjectSendStream[SessionMessage]):
    """The write stream: one JSON line per message, written by the event loop (the context manager from
    anyio's :class:`~anyio.abc.ObjectSendStream`)."""

    def __init__(self, protocol: WriterProtocol) -> None:
        self._protocol = protocol
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        transport = self._protocol.transport
        if transport is None or self._protocol.lost or transport.is_closing():
            raise anyio.BrokenResourceError
        transport.write(encode_message(item))
        await self._protocol.drain()
        if self._protocol.lost:
            raise anyio.BrokenResourceError

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()



def parse_line(line: bytes) -> SessionMessage | Exception:
    """One line as a JSON-RPC message; what is not one travels as an exception item, as in the SDK."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:
        try:
            line.decode()
        except UnicodeDecodeError:  # the SDK reads text with errors="replace": accept the same messages
            return parse_text(line.decode(errors="replace"))
        return exc


def parse_text(text: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except Exception as exc:
        return exc


def encode_message(item: SessionMessage) -> bytes:
    """The message as one UTF-8 JSON line.

    Text that UTF-8 cannot carry (lone surrogates, e.g. from undecodable file names) is sent
    as JSON escapes instead of failing the response.
    """
    try:
        return item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
    except (PydanticSerializationError, UnicodeEncodeError):
        data = item.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return json.dumps(data, separators=(",", ":")).encode() + b"\n"
