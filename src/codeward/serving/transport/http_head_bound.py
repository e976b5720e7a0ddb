"""uvicorn's httptools protocol with the same bounds on a request's head as the h11 one.

httptools bounds nothing in a request's head: through uvicorn it kept a 2 MB header and 3000
headers. This protocol refuses a head over :data:`~codeward.serving.transport.http_head_size.MAX_HEAD_BYTES`
(h11's 16 KiB) with ``431 Request Header Fields Too Large`` naming the bound, however the network cut
it (:mod:`codeward.serving.transport.http_head_size`), and keeps the same deadline on a head as the h11
protocol (:mod:`codeward.serving.transport.http_head_deadline`). Imported only by the fast HTTP stack
(:mod:`codeward.serving.transport.http_stack`): it needs httptools.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from codeward.serving.transport.http_head_deadline import HeadDeadline
from codeward.serving.transport.http_head_size import HeadSize, HeadSizeBound


class BoundedHttpToolsProtocol(HeadSizeBound, HeadDeadline, HttpToolsProtocol):
    """httptools parsing, with a request's head bounded in size and in time."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._in_head = True  # a head has begun and is not complete: its deadline runs
        self._awaiting_head = True  # from a connection's start or a request's end to a head's end: counted

    def on_message_begin(self) -> None:
        self._in_head = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = self._awaiting_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._awaiting_head = True  # a kept-alive connection's next read starts the next head
        super().on_message_complete()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_size = HeadSize()
        self._arm_head_deadline()  # a fresh connection owes a head too

    def connection_lost(self, exc: Exception | None) -> None:
        self._clear_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._parse_bounded(data, self._awaiting_head, super().data_received)
        if self.transport.is_closing():
            return
        if self._in_head:
            self._arm_head_deadline()
        else:  # the head is complete: the body has its own bound
            self._clear_head_deadline()
