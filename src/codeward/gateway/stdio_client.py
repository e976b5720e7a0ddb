"""A stdio client transport driven by the event loop, for upstream servers the gateway starts.

The SDK's ``stdio_client`` moves every message through a reader task, a text decoder and a
memory stream (and the same on the way out). The gateway sits in the middle of every call,
so it uses codeward's line streams instead (the ones the server's own stdio uses): the event
loop reads the pipe and :class:`~codeward.engines.jsonrpc.line_streams.MessageReader` parses whole
lines. Behaviour matches the SDK transport: the same inherited environment plus the
configured one, its own process group, and on exit stdin closed, a grace period, then
SIGTERM and SIGKILL to the whole group. Off asyncio (or on Windows) the SDK transport is used.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from typing import IO, Any

import anyio
import sniffio

from codeward.engines.jsonrpc.line_streams import LineReaderProtocol, MessageReader, MessageWriter, WriterProtocol

EXIT_GRACE = 2.0
"""Seconds a server gets to exit after its stdin closes (as the SDK transport allows)."""
KILL_GRACE = 2.0


def event_loop_usable() -> bool:
    """True when the fast transport can run (asyncio on a POSIX system)."""
    try:
        return sniffio.current_async_library() == "asyncio" and sys.platform != "win32"
    except sniffio.AsyncLibraryNotFoundError:
        return False


@asynccontextmanager
async def fast_stdio_client(
    command: str, args: list[str], *, env: Mapping[str, str], cwd: str | None, errlog: IO[str] | None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command`` and yield ``(read_stream, write_stream)`` over its stdout/stdin."""
    from mcp.client.stdio import get_default_environment

    loop = asyncio.get_running_loop()
    full_env = get_default_environment() | dict(env)
    executable = shutil.which(command, path=full_env.get("PATH")) or command
    proc = subprocess.Popen(  # the command comes from the user's own configuration
        [executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=errlog if errlog is not None and _has_fileno(errlog) else subprocess.DEVNULL,
        env=full_env, cwd=cwd, start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        read_transport, reader = await loop.connect_read_pipe(lambda: LineReaderProtocol(loop), proc.stdout)
        write_transport, writer = await loop.connect_write_pipe(lambda: WriterProtocol(loop), proc.stdin)
    except BaseException:
        _kill_group(proc, signal.SIGKILL)
        proc.wait()
        raise
    try:
        yield MessageReader(reader), MessageWriter(writer)
    finally:
        with anyio.CancelScope(shield=True):
            write_transport.close()  # EOF on the server's stdin: the polite way to ask it to stop
            if not await _exited(proc, EXIT_GRACE):
                _kill_group(proc, signal.SIGTERM)
                if not await _exited(proc, KILL_GRACE):
                    _kill_group(proc, signal.SIGKILL)
                    await _exited(proc, KILL_GRACE)
            read_transport.close()
            await anyio.lowlevel.checkpoint()


async def _exited(proc: subprocess.Popen[bytes], within: float) -> bool:
    with anyio.move_on_after(within):
        delay = 0.005
        while proc.poll() is None:
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.1)
        return True
    return proc.poll() is not None


def _kill_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _has_fileno(stream: IO[str]) -> bool:
    try:
        stream.fileno()
    except (OSError, ValueError, AttributeError):
        return False
    return True
