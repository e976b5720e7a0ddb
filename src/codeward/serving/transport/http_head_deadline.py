"""A deadline on a request's head: a connection that does not finish its request line and headers in
time is answered ``408 Request Timeout`` and closed.

uvicorn arms no timer before a request's head is complete, on either parser: a fresh connection
that sends nothing, or a head sent a byte at a time and never finished (slowloris), is held open
for as long as the client likes, each one a socket and a file descriptor of the server's. Other
clients are still served, but enough of them exhaust the server's descriptors. The deadline
runs from the moment a connection opens or a new request's first bytes arrive until its head is
complete (``[server] http_head_timeout``, 30 s by default, like web servers' own header
timeouts); the body and the answer are not limited by it, and an idle kept-alive connection is
closed by uvicorn's own keep-alive timeout as before.

:class:`HeadDeadline` is the timer, shared by the h11 protocol here and the httptools one in
:mod:`codeward.serving.transport.http_head_bound`; :func:`with_head_timeout` makes a protocol class with a
given deadline for ``uvicorn.Config(http=...)``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from codeward.serving.transport.http_head_size import HeadSize, HeadSizeBound

HEAD_TIMEOUT = 30.0
"""Seconds a connection has to send a complete request head (the default of ``http_head_timeout``)."""

TIMED_OUT = b"the request line and headers did not arrive in time; send the whole head at once"

P = TypeVar("P")


class HeadDeadline:
    """The head's timer for a uvicorn HTTP protocol (which provides ``loop``, ``transport``,
    ``cycle`` and ``logger``)."""

    head_timeout: float = HEAD_TIMEOUT
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    logger: logging.Logger
    _head_timer: asyncio.TimerHandle | None = None

    def _arm_head_deadline(self) -> None:
        if self._head_timer is None and not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _clear_head_deadline(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        self.logger.warning("Closed a connection whose request head was not complete after %g s.", self.head_timeout)
        self._refuse_and_close(b"408 Request Timeout", TIMED_OUT)

    def _refuse_and_close(self, status: bytes, reason: bytes) -> None:
        """Answer ``status`` with ``reason`` as plain text, unless another answer is under way on the
        connection, and close it (the request was never parsed: no ASGI app is involved)."""
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(b"HTTP/1.1 " + status + b"\r\n"
                                 b"content-type: text/plain; charset=utf-8\r\n"
                                 b"content-length: " + str(len(reason)).encode() + b"\r\n"
                                 b"connection: close\r\n\r\n" + reason)
        self.transport.close()


class DeadlineH11Protocol(HeadSizeBound, HeadDeadline, H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head and a bound on its size."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_size = HeadSize()
        self._arm_head_deadline()  # a fresh connection owes a head too

    def data_received(self, data: bytes) -> None:
        self._parse_bounded(data, self.conn.their_state is h11.IDLE, super().data_received)
        if self.transport.is_closing():
            return
        # h11 waits for a request's head in IDLE; anything buffered there is a head still incomplete.
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            self._arm_head_deadline()
        elif self.conn.their_state is not h11.IDLE:
            self._clear_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._clear_head_deadline()
        super().connection_lost(exc)


def with_head_timeout(protocol: type[P], seconds: float) -> type[P]:
    """``protocol`` with a head deadline of ``seconds`` (a subclass; the class itself when it is the default)."""
    if seconds == getattr(protocol, "head_timeout", None):
        return protocol
    return type(protocol.__name__, (protocol,), {"head_timeout": seconds})


__all__ = ["HEAD_TIMEOUT", "DeadlineH11Protocol", "HeadDeadline", "with_head_timeout"]
