"""codeward's own tools served next to the upstream ones, under their names or an alias."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from codeward.gateway.names import plain_name
from codeward.kernel.chain import Middleware, ToolCall
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.surface import ToolInfo, ToolSurface, unknown_tool


class Alias(Middleware):
    """The inner surface's tools renamed ``alias__name`` (so they sort and read like upstream tools).

    Only the names change: each tool keeps its :class:`~codeward.kernel.surface.ToolOrigin`, so approval
    rules written for ``name`` or ``alias__name`` mean the same tool.
    """

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self._renamed: tuple[Sequence[ToolInfo], list[ToolInfo]] | None = None

    def _inner_name(self, name: str) -> str | None:
        prefix = plain_name(self.alias, "")
        return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else None

    def list_tools(self, inner: ToolSurface) -> Sequence[ToolInfo]:
        infos = inner.tool_infos()
        cached = self._renamed
        if cached is not None and cached[0] is infos:  # the same list as last time: the same renames
            return cached[1]
        renamed = [replace(info, name=plain_name(self.alias, info.name)) for info in infos]
        self._renamed = (infos, renamed)
        return renamed

    def has(self, name: str, inner: ToolSurface) -> bool:
        original = self._inner_name(name)
        return original is not None and inner.has(original)

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        original = self._inner_name(call.name)
        if original is None or not inner.has(original):
            return unknown_tool(call.name, [info.name for info in self.list_tools(inner)])
        outcome = await inner.call(original, call.arguments, call.ctx)
        outcome.name = call.name
        return outcome


def native_alias(native: bool | str) -> Alias | None:
    """The rename ``[mcp] native`` asks for: none for ``true`` (own names) or ``false`` (not served)."""
    return Alias(native) if isinstance(native, str) else None
