"""Cross-cutting concerns as one ordered chain around a tool surface (the FastMCP middleware model).

A :class:`Middleware` sees every tool list and every call of the surface it wraps and may
change either: observe and record a call, ask for approval, rename tools, replace the list.
:func:`chain` composes an ordered list of them (outermost first) around a surface and gives
back a :class:`~codeward.kernel.surface.ToolSurface`, so every surface — the MCP server, the
gateway, the agent, the CLI — is served through the same chain, built in one place
(:func:`codeward.serving.stack.build_stack`), instead of wrappers stacked by hand.

Each middleware receives the surface *inside* it (``inner``) and decides whether, and how, to
pass the call on — exactly like FastMCP's ``call_next``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.surface import ToolInfo, ToolSurface


@dataclass(frozen=True)
class ToolCall:
    """One call travelling down the chain; a middleware may pass on a changed copy."""

    name: str
    arguments: Mapping[str, Any] | None
    ctx: ToolContext


class Middleware:
    """One concern in the chain. Every hook passes through unchanged unless overridden."""

    def list_tools(self, inner: ToolSurface) -> Sequence[ToolInfo]:
        """The tools this layer shows (default: those of the layer inside)."""
        return inner.tool_infos()

    def has(self, name: str, inner: ToolSurface) -> bool:
        """Whether this layer answers for ``name`` (default: whether the layer inside does)."""
        return inner.has(name)

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        """Run the call; ``inner.call(...)`` passes it on (default: pass it on as it is)."""
        return await inner.call(call.name, call.arguments, call.ctx)


class _Layer:
    """One middleware bound to what it wraps; a ToolSurface itself, so layers nest."""

    def __init__(self, middleware: Middleware, inner: ToolSurface) -> None:
        self.middleware = middleware
        self.inner = inner

    def tool_infos(self) -> Sequence[ToolInfo]:
        return self.middleware.list_tools(self.inner)

    def has(self, name: str) -> bool:
        return self.middleware.has(name, self.inner)

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        return await self.middleware.call_tool(ToolCall(name, arguments, ctx), self.inner)


class Chain:
    """A surface served through an ordered list of middleware (``middleware[0]`` is outermost)."""

    def __init__(self, surface: ToolSurface, middleware: Sequence[Middleware]) -> None:
        self.surface = surface
        self.middleware = tuple(middleware)
        outer: ToolSurface = surface
        for each in reversed(self.middleware):
            outer = _Layer(each, outer)
        self._outer = outer

    def tool_infos(self) -> Sequence[ToolInfo]:
        return self._outer.tool_infos()

    def has(self, name: str) -> bool:
        return self._outer.has(name)

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        return await self._outer.call(name, arguments, ctx)

    def find(self, kind: type[Any]) -> Any:
        """The first middleware of this type in the chain, if any."""
        return next((m for m in self.middleware if isinstance(m, kind)), None)


def chain(surface: ToolSurface, middleware: Sequence[Middleware]) -> ToolSurface:
    """``surface`` behind ``middleware`` (outermost first); the surface itself when there is none."""
    return Chain(surface, middleware) if middleware else surface


def tool_info(surface: ToolSurface, name: str) -> ToolInfo | None:
    """The listed tool called ``name`` on ``surface``, if it is listed."""
    return next((info for info in surface.tool_infos() if info.name == name), None)
