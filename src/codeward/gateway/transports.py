"""Opening the official SDK transports (stdio, streamable HTTP, legacy SSE) for one server.

Two small additions the SDK does not give a gateway:

* :class:`HttpFailures` — an httpx response hook that keeps the status and body of the last
  HTTP error. The SDK turns a ``401 {"error":"unauthorized"}`` into a bare "Server returned
  an error response"; with the hook the caller can say *what* the server answered.
* :class:`WatchedReadStream` — wraps the transport's read stream and sets an event when it
  ends, which is how a dead stdio server (or a dropped SSE stream) is noticed at once.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any, TextIO, cast

import anyio

from codeward.gateway.config import ServerConfig
from codeward.gateway.upstream_env import upstream_environment

READ_TIMEOUT = 300.0
"""How long an HTTP response stream may stay silent (SSE streams idle between events)."""


@dataclass(frozen=True)
class HttpFailure:
    status: int
    body: str
    url: str


class HttpFailures:
    """Remembers the last HTTP error response (status >= 400) of one connection."""

    def __init__(self) -> None:
        self.last: HttpFailure | None = None
        self.count = 0

    async def hook(self, response: Any) -> None:
        if response.status_code < 400:
            return
        try:
            await response.aread()
            body = response.text
        except Exception:  # a body we cannot read is still an HTTP failure
            body = ""
        self.last = HttpFailure(int(response.status_code), body, str(response.request.url))
        self.count += 1


class WatchedReadStream:
    """A read stream that sets ``ended`` when the other side is gone (EOF or closed)."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self.ended = ended

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WatchedReadStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


def bearer_token(server: ServerConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """``auth_token`` if set, else the value of ``auth_env`` now, else None (no header)."""
    if server.auth_token:
        return server.auth_token
    if server.auth_env:
        value = (os.environ if environ is None else environ).get(server.auth_env, "")
        return value or None
    return None


def request_headers(server: ServerConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    headers = dict(server.headers)
    token = bearer_token(server, environ)
    if token:
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = f"Bearer {token}"
    return headers


@asynccontextmanager
async def open_transport(
    server: ServerConfig, *, failures: HttpFailures, ended: anyio.Event, errlog: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Yield ``(read_stream, write_stream)`` for ``server`` through the SDK's own transport."""
    async with AsyncExitStack() as stack:
        if server.transport == "stdio":
            from codeward.gateway.stdio_client import event_loop_usable, fast_stdio_client

            assert server.command is not None
            env = upstream_environment(server.env, environ)
            if event_loop_usable():
                read, write = await stack.enter_async_context(fast_stdio_client(
                    server.command, list(server.args), env=env, cwd=server.cwd, errlog=errlog))
            else:
                import sys

                from mcp.client.stdio import StdioServerParameters, stdio_client

                params = StdioServerParameters(command=server.command, args=list(server.args), env=env,
                                               cwd=server.cwd)
                stderr = cast(TextIO, errlog or sys.stderr)
                read, write = await stack.enter_async_context(stdio_client(params, errlog=stderr))
        elif server.transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            assert server.url is not None
            client = await stack.enter_async_context(_http_client(server, failures, environ))
            read, write = await stack.enter_async_context(streamable_http_client(server.url, http_client=client))
        else:
            from mcp.client.sse import sse_client

            assert server.url is not None

            def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
                return _http_client(server, failures, environ, timeout=timeout)

            read, write = await stack.enter_async_context(
                sse_client(server.url, headers=None, timeout=server.timeout, sse_read_timeout=READ_TIMEOUT,
                           httpx_client_factory=factory)
            )
        yield WatchedReadStream(read, ended), write


def _http_client(server: ServerConfig, failures: HttpFailures, environ: Mapping[str, str] | None,
                 timeout: Any = None) -> Any:
    import httpx2

    return httpx2.AsyncClient(
        headers=request_headers(server, environ),
        timeout=timeout or httpx2.Timeout(server.timeout, read=READ_TIMEOUT),
        event_hooks={"response": [failures.hook]},
    )
