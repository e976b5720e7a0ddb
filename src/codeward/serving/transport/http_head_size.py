"""A bound on a request's head (request line and headers) that does not depend on how the network cut it.

h11 refuses a head that is still *incomplete* after 16 KiB
(``h11._connection.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE``), and httptools bounds nothing. Either way a
30 KiB head that happens to arrive in one read (a busy server reads up to 256 KiB at once) was
parsed whole, and the same head arriving in pieces was refused: the answer depended on timing.
:class:`HeadSize` counts a head's bytes from its first to its blank line across the reads it spans,
before the parser sees them, so both HTTP stacks' protocols
(:mod:`codeward.serving.transport.http_head_deadline`, :mod:`codeward.serving.transport.http_head_bound`)
refuse every head over :data:`MAX_HEAD_BYTES` with ``431 Request Header Fields Too Large`` naming the
bound, whatever the pieces. A head is counted from the read it starts in: a pipelined request
starting inside the previous request's read may be under-counted by that read, never more.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE

MAX_HEAD_BYTES = DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
"""A request line and headers larger than this are refused (h11's own bound, 16 KiB)."""

TOO_LARGE_STATUS = b"431 Request Header Fields Too Large"
TOO_LARGE = (f"the request line and headers are over {MAX_HEAD_BYTES:,} bytes; "
             "send fewer or shorter headers").encode()

_BLANK_LINE = re.compile(rb"\n\r?\n")
"""The end of a head, as both parsers accept it (CRLF or bare LF lines)."""


class HeadSize:
    """The bytes of the request head now arriving on one connection."""

    __slots__ = ("_rest", "_tail", "total")

    def __init__(self) -> None:
        self.total = 0
        self._tail = b""  # the last bytes already counted: a blank line may straddle two reads
        self._rest = 0  # bytes of the last read after what looked like the head's end

    @property
    def over(self) -> bool:
        """Whether the head counted so far is over :data:`MAX_HEAD_BYTES`."""
        return self.total > MAX_HEAD_BYTES

    def add(self, data: bytes) -> None:
        """Count ``data``, read while a head is awaited, up to the first blank line in it."""
        window = self._tail + data
        end = _BLANK_LINE.search(window)
        counted = len(data) if end is None else max(0, end.end() - len(self._tail))
        self.total += counted
        self._rest = len(data) - counted
        self._tail = window[-2:]

    def parsed(self, head_completed: bool) -> None:
        """After the parser took the read: start over when a head was completed in it; otherwise
        the blank line seen (empty lines before a request line) did not end it, so all of it counts."""
        if head_completed:
            self.total = self._rest = 0
            self._tail = b""
        else:
            self.total += self._rest
            self._rest = 0


class HeadSizeBound:
    """Hands a uvicorn protocol's reads to its parser through a :class:`HeadSize`.

    The protocol provides ``cycle``, ``logger`` and ``_refuse_and_close`` (as
    :class:`~codeward.serving.transport.http_head_deadline.HeadDeadline` does) and makes
    ``_head_size`` when a connection opens."""

    cycle: Any
    logger: logging.Logger
    _head_size: HeadSize
    _refuse_and_close: Callable[[bytes, bytes], None]

    def _parse_bounded(self, data: bytes, awaiting_head: bool, parse: Callable[[bytes], None]) -> None:
        """``parse(data)``, unless the head it continues would be over the bound: then 431 and close."""
        if awaiting_head:
            self._head_size.add(data)
            if self._head_size.over:
                self.logger.warning("Refused a request whose head is over %d bytes.", MAX_HEAD_BYTES)
                self._refuse_and_close(TOO_LARGE_STATUS, TOO_LARGE)
                return
        cycle = self.cycle  # uvicorn starts a new cycle for each request whose head is complete
        parse(data)
        if awaiting_head:
            self._head_size.parsed(self.cycle is not cycle)


__all__ = ["MAX_HEAD_BYTES", "TOO_LARGE", "TOO_LARGE_STATUS", "HeadSize", "HeadSizeBound"]
