"""A stdio server transport driven by the event loop, for the SDK's ``Server.run``.

``mcp.server.stdio.stdio_server`` reads and writes the pipes through worker threads and
memory streams, which costs a few thread and task hand-offs per message. :func:`fast_stdio_server`
yields the same ``(read_stream, write_stream)`` pair, speaking the same newline-delimited
JSON-RPC, but lets the event loop drive non-blocking pipes directly. It keeps the SDK
transport's behaviour: fd 0 reads the null device and fd 1 writes to stderr while serving (so
stray output cannot corrupt the protocol), lines that are not JSON-RPC arrive as exception
items, EOF ends the stream, and the fds are restored on exit. When the fds cannot be driven
this way (regular files, sockets, a terminal without a private re-open, a non-asyncio loop,
replaced ``sys`` streams) it falls back to the SDK transport.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from codeward.engines.jsonrpc.line_streams import LineReaderProtocol, MessageReader, MessageWriter, WriterProtocol
from codeward.serving.transport.stdio_fds import ClaimedFd, claim, open_null_for_reading, open_stderr_for_writing

logger = logging.getLogger("codeward.serving.transport.stdio")

FLUSH_TIMEOUT = 5.0
"""How long closing waits for the client to take the last buffered responses."""

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

    StdioStreams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]


@asynccontextmanager
async def fast_stdio_server() -> AsyncIterator[StdioStreams]:
    """Serve MCP over this process's stdin/stdout; a drop-in for the SDK's ``stdio_server()``."""
    pipes = await _open_pipes()
    if pipes is None:
        from mcp.server.stdio import stdio_server

        logger.debug("stdin/stdout cannot be driven by the event loop; using the SDK stdio transport")
        async with stdio_server() as streams:
            yield streams
        return
    try:
        yield pipes.reader, pipes.writer
    finally:
        await pipes.close()


def freeze_startup_heap() -> None:
    """Exempt what start-up allocated (modules, schemas, the catalog) from garbage collection,
    and turn the collector on (``codeward serve`` starts with it paused: :func:`codeward.apps.cli.main`).

    A server's heap is mostly import-time objects that live as long as the process; left in
    the collector's care, every full collection re-traverses them all (about 100k objects, a
    60-90 ms pause every few thousand requests: the tail of a stdio session's latency). Call
    it once the server is built, right before serving. Reference counting still frees them.
    """
    gc.freeze()
    gc.enable()


@dataclass
class _Pipes:
    stdin: ClaimedFd
    stdout: ClaimedFd
    read_protocol: LineReaderProtocol
    write_protocol: WriterProtocol
    reader: MessageReader
    writer: MessageWriter

    async def close(self) -> None:
        """Flush what is buffered for the client, close the wire, give fd 0/1 back."""
        with anyio.CancelScope(shield=True):
            self.reader.close()
            self.writer.close()
            await _close_transports(self.read_protocol, self.write_protocol, FLUSH_TIMEOUT)
            _flush(sys.stdout)  # stray prints made while serving go to stderr, not to the restored wire
            self.stdout.release()
            self.stdin.release()


async def _open_pipes() -> _Pipes | None:
    """Claim fd 0/1 and attach them to the running asyncio loop, or ``None`` to fall back."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio): the SDK transport works everywhere
        return None
    if not (_backed_by(sys.stdin, 0) and _backed_by(sys.stdout, 1)):
        return None
    stdin = claim(0, writing=False)
    stdout = claim(1, writing=True) if stdin is not None else None
    if stdin is None or stdout is None or not (
        _pollable(loop, stdin.wire, writing=False) and _pollable(loop, stdout.wire, writing=True)
    ):
        for claimed in (stdin, stdout):
            if claimed is not None:
                _discard(claimed)
        return None
    read_protocol = LineReaderProtocol(loop)
    write_protocol = WriterProtocol(loop)
    stdin_file = os.fdopen(stdin.wire, "rb", buffering=0)  # from here on the files own the wires
    stdout_file = os.fdopen(stdout.wire, "wb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: read_protocol, stdin_file)
        await loop.connect_write_pipe(lambda: write_protocol, stdout_file)
        _flush(sys.stdout)
        stdin.divert(open_null_for_reading)
        stdout.divert(open_stderr_for_writing)
    except (OSError, ValueError) as exc:
        logger.debug("cannot drive stdin/stdout from the event loop (%s)", exc)
        with anyio.CancelScope(shield=True):
            await _close_transports(read_protocol, write_protocol, 0)
        stdin_file.close()
        stdout_file.close()
        stdout.release()
        stdin.release()
        return None
    def reply(data: bytes) -> None:
        """An answer the reader makes itself (to a message the SDK would drop), on the same wire."""
        transport = write_protocol.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    return _Pipes(stdin, stdout, read_protocol, write_protocol, MessageReader(read_protocol, reply),
                  MessageWriter(write_protocol))


async def _close_transports(read: LineReaderProtocol, write: WriterProtocol, flush_timeout: float) -> None:
    """Close both pipe transports, giving the client ``flush_timeout`` seconds to take buffered output."""
    if read.transport is not None:
        read.transport.close()
    transport = write.transport
    if transport is not None:
        transport.close()  # writes out the buffer first
        with anyio.move_on_after(flush_timeout):
            await write.closed
        if not write.closed.done():
            if unread := transport.get_write_buffer_size():
                logger.warning("the client did not read the last %d bytes; dropping them", unread)
            transport.abort()
            await write.closed
    if read.transport is not None:
        await read.closed


def _backed_by(stream: TextIO | Any, fd: int) -> bool:
    """Whether a ``sys`` stream still writes to its standard fd (tests and hosts may replace it)."""
    try:
        return bool(stream.fileno() == fd)
    except (AttributeError, OSError, ValueError):
        return False


def _pollable(loop: asyncio.AbstractEventLoop, fd: int, *, writing: bool) -> bool:
    """Whether the loop's selector accepts ``fd`` (epoll refuses regular files and /dev/null)."""
    try:
        if writing:
            loop.add_writer(fd, _nothing)
            loop.remove_writer(fd)
        else:
            loop.add_reader(fd, _nothing)
            loop.remove_reader(fd)
    except (OSError, ValueError):
        return False
    return True


def _discard(claimed: ClaimedFd) -> None:
    with suppress(OSError):
        os.close(claimed.wire)
    claimed.release()


def _flush(stream: TextIO | None) -> None:
    with suppress(Exception):
        if stream is not None:
            stream.flush()


def _nothing() -> None:
    return None
