"""uvicorn's httptools protocol with h11's bound on a request's head (request line and headers).

h11 refuses a request whose head is still incomplete after 16 KiB
(``h11._connection.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE``). httptools has no such bound: a client
could send megabytes of one header, or thousands of headers, and the server would keep them
all. This protocol counts the bytes that arrive while a head is incomplete and, past the same
16 KiB, answers ``431 Request Header Fields Too Large`` (naming the limit) and closes the
connection — what h11 does, with a clearer answer than its bare 400. It keeps the same
deadline on a head as the h11 protocol (:mod:`codeward.serving.transport.http_head_deadline`). Imported
only by the fast HTTP stack (:mod:`codeward.serving.transport.http_stack`): it needs httptools.
"""

from __future__ import annotations

import asyncio
from typing import Any

from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from codeward.serving.transport.http_head_deadline import HeadDeadline

MAX_HEAD_BYTES = DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
"""A request line and headers larger than this, still incomplete, are refused (h11's bound)."""

TOO_LARGE = (f"the request line and headers are over {MAX_HEAD_BYTES:,} bytes; "
             "send fewer or shorter headers").encode()


class BoundedHttpToolsProtocol(HeadDeadline, HttpToolsProtocol):
    """httptools parsing, with a request's incomplete head bounded to :data:`MAX_HEAD_BYTES` and in time."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._in_head = True
        self._head_bytes = 0

    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()  # a fresh connection owes a head too

    def connection_lost(self, exc: Exception | None) -> None:
        self._clear_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        in_head = self._in_head
        super().data_received(data)
        if self.transport.is_closing():
            return
        if not self._in_head:  # the head is complete: the body has its own bound
            self._clear_head_deadline()
            return
        self._arm_head_deadline()
        if in_head:  # a head still incomplete before this data and after it
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._refuse_head()

    def _refuse_head(self) -> None:
        self.logger.warning("Refused a request whose head is over %d bytes.", MAX_HEAD_BYTES)
        self._refuse_and_close(b"431 Request Header Fields Too Large", TOO_LARGE)
