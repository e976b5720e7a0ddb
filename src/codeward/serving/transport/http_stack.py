"""Which event loop and HTTP parser an HTTP server runs on: uvloop + httptools, or asyncio + h11.

uvicorn's pure-Python h11 parser and the asyncio loop are a fair share of the CPU each request
costs. The optional ``fast`` extra brings uvloop and httptools (the banner says how to add it to
the installation at hand); when both import, ``serve --http`` and ``gateway --http`` run on them, chosen
explicitly (never through uvicorn's ``"auto"``, so what runs is what the start-up line says).
``[server] fast_http = false`` (or ``CODEWARD_FAST_HTTP=0``) forces the plain stack, for
debugging. The loop has to be chosen before the command's event loop starts, so the command
runs its coroutine through :meth:`HttpStack.run`, and :meth:`HttpStack.uvicorn_options` gives
uvicorn the matching parser.

Neither parser bounds a request's head reliably (httptools not at all, h11 only while it is
incomplete) nor the time it may take: both stacks' protocols add the two
(:mod:`codeward.serving.transport.http_head_size`, :mod:`codeward.serving.transport.http_head_deadline`;
the fast stack's is :class:`~codeward.serving.transport.http_head_bound.BoundedHttpToolsProtocol`).
Nothing here imports uvloop or httptools until an HTTP server asks (stdio start-up never does).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from codeward.serving.transport.http_head_deadline import HEAD_TIMEOUT, DeadlineH11Protocol, with_head_timeout

if TYPE_CHECKING:
    from codeward.config.server import ServerSettings

T = TypeVar("T")

FAST_MODULES = ("uvloop", "httptools")


@dataclass(frozen=True)
class HttpStack:
    """The loop and parser one HTTP server runs on, and why (for its start-up line)."""

    fast: bool
    reason: str
    head_timeout: float = HEAD_TIMEOUT
    """Seconds a connection has to send a complete request head (``[server] http_head_timeout``)."""
    missing: tuple[str, ...] = ()
    """The fast extra's modules that did not import (none when the plain stack was chosen on purpose)."""

    @property
    def summary(self) -> str:
        """One line for the start-up banner: what runs, and how to get the other stack."""
        stack = "uvloop + httptools" if self.fast else "asyncio + h11"
        return f"{stack} ({self.reason})"

    def loop_factory(self) -> Callable[[], Any] | None:
        """The event loop to run the server on (None: asyncio's own)."""
        return importlib.import_module("uvloop").new_event_loop if self.fast else None  # type: ignore[no-any-return]

    def run(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``anyio.run(func, *args)`` on this stack's event loop."""
        factory = self.loop_factory()
        return anyio.run(func, *args, backend_options={"loop_factory": factory} if factory is not None else None)

    def uvicorn_options(self) -> dict[str, Any]:
        """The ``uvicorn.Config`` keywords naming this stack's parser and loop explicitly."""
        if not self.fast:
            return {"http": with_head_timeout(DeadlineH11Protocol, self.head_timeout), "loop": "asyncio"}
        from codeward.serving.transport.http_head_bound import BoundedHttpToolsProtocol

        return {"http": with_head_timeout(BoundedHttpToolsProtocol, self.head_timeout), "loop": "uvloop"}


def http_stack(enabled: bool = True, head_timeout: float = HEAD_TIMEOUT) -> HttpStack:
    """The fast stack when ``enabled`` and the ``fast`` extra imports, else the plain one (saying why)."""
    if not enabled:
        return HttpStack(False, "fast_http = false in [server] or CODEWARD_FAST_HTTP=0", head_timeout)
    missing = []
    for name in FAST_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        return HttpStack(False, f"{' and '.join(missing)} not installed: the fast extra", head_timeout,
                         tuple(missing))
    return HttpStack(True, "the fast extra", head_timeout)


def configured_http_stack(server: ServerSettings) -> HttpStack:
    """The stack ``[server]`` asks for: ``fast_http`` and ``http_head_timeout``."""
    return http_stack(server.fast_http, server.http_head_timeout)
