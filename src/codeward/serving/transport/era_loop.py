"""Serve one stdio connection in the era its first request opens, without the SDK's relay task.

``Server.run`` (``mcp.server.runner.serve_dual_era_loop``) peeks at the client's first request
to choose the protocol era, then hands the serving loop a memory stream fed by a relay task
that copies every later message across: one more task wake-up and stream hand-off per message,
about a sixth of a stdio server's time per ``read_file`` call. Here the first request is peeked
the same way, and the era's loop then reads the frames kept so far followed by the transport's
own stream, directly.

The era loops are the SDK's own (``_serve_modern_stream`` and ``_serve_legacy_stream``), so
everything past the choice — the handshake, envelopes, refusals of the other era — is the SDK's.
They are private: when this SDK does not have them with the expected parameters,
:func:`serve_stdio_connection` is ``Server.run``, relay included.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest

logger = logging.getLogger(__name__)

PRE_REQUEST_REPLAY_LIMIT = 8
"""Frames kept from before the first request, as the SDK keeps them (a bare
``notifications/initialized`` is the one that matters); further ones are dropped."""


class ReplayThenRead(ObjectReceiveStream[SessionMessage | Exception]):
    """The frames read while looking for the first request, then the rest of ``stream``, in order.

    What the serving loop reads instead of the SDK's relayed copy; closing it closes ``stream``.
    Iteration and the context manager come from anyio's :class:`~anyio.abc.ObjectReceiveStream`.
    """

    def __init__(self, lead: list[SessionMessage | Exception], stream: Any) -> None:
        self._lead = lead
        self._stream = stream

    async def receive(self) -> SessionMessage | Exception:
        if self._lead:
            return self._lead.pop(0)
        return await self._stream.receive()  # type: ignore[no-any-return]

    def close(self) -> None:
        self._lead.clear()
        self._stream.close()

    async def aclose(self) -> None:
        self._lead.clear()
        await self._stream.aclose()


def _era_loops() -> tuple[Callable[..., Any], Callable[..., Any], Callable[[Any], bool]] | None:
    """The SDK's two era loops and its envelope test, when they are there as this module expects."""
    from mcp.server import runner

    modern = getattr(runner, "_serve_modern_stream", None)
    legacy = getattr(runner, "_serve_legacy_stream", None)
    has_envelope = getattr(runner, "_has_modern_envelope", None)
    if modern is None or legacy is None or has_envelope is None:
        return None
    try:
        modern_names = set(inspect.signature(modern).parameters)
        legacy_names = set(inspect.signature(legacy).parameters)
    except (TypeError, ValueError):
        return None
    common = {"server", "read_stream", "write_stream", "lifespan_state", "raise_exceptions"}
    if modern_names != common or legacy_names != common | {"session_id", "init_options"}:
        return None
    return modern, legacy, has_envelope


async def serve_stdio_connection(server: Server[Any], read_stream: Any, write_stream: Any,
                                 init_options: InitializationOptions) -> None:
    """``server.run(read_stream, write_stream, init_options)``, without the relay when the SDK allows."""
    loops = _era_loops()
    if loops is None:
        await server.run(read_stream, write_stream, init_options)
        return
    modern, legacy, has_envelope = loops
    async with server.lifespan(server) as lifespan_state:
        try:
            lead: list[SessionMessage | Exception] = []
            opening: JSONRPCRequest | None = None
            try:
                async for item in read_stream:
                    if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCRequest):
                        opening = item.message
                    elif len(lead) >= PRE_REQUEST_REPLAY_LIMIT:
                        logger.debug("dropped a frame received before the first request: %r", item)
                        continue
                    lead.append(item)
                    if opening is not None:
                        break
            except anyio.ClosedResourceError:
                logger.debug("read stream closed by transport; treating as EOF")
            replayed = ReplayThenRead(lead, read_stream)
            try:
                if opening is not None and opening.method != "initialize" and has_envelope(opening.params):
                    await modern(server=server, read_stream=replayed, write_stream=write_stream,
                                 lifespan_state=lifespan_state, raise_exceptions=False)
                else:
                    await legacy(server=server, read_stream=replayed, write_stream=write_stream,
                                 lifespan_state=lifespan_state, session_id=None, init_options=init_options,
                                 raise_exceptions=False)
            finally:
                await replayed.aclose()
        finally:
            await write_stream.aclose()
