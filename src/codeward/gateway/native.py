"""codeward's own tools served next to the upstream ones, under their names or an alias."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from codeward.catalog import Catalog, ToolOutcome
from codeward.context import ToolContext
from codeward.gateway.names import plain_name
from codeward.surface import CatalogSurface, ToolInfo, ToolSurface, unknown_tool


class AliasedSurface:
    """Another surface's tools renamed ``alias__name`` (so they sort and read like upstream tools)."""

    def __init__(self, inner: ToolSurface, alias: str) -> None:
        self.inner = inner
        self.alias = alias
        self._names = {plain_name(alias, info.name): info.name for info in inner.tool_infos()}
        self._infos = [replace(info, name=plain_name(alias, info.name)) for info in inner.tool_infos()]

    def tool_infos(self) -> Sequence[ToolInfo]:
        return self._infos

    def has(self, name: str) -> bool:
        return name in self._names

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        inner = self._names.get(name)
        if inner is None:
            return unknown_tool(name, list(self._names))
        outcome = await self.inner.call(inner, arguments, ctx)
        outcome.name = name
        return outcome


def native_surface(catalog: Catalog, native: bool | str) -> ToolSurface | None:
    """The native tools as configured by ``[mcp] native``: off, own names, or an alias."""
    if native is False:
        return None
    surface = CatalogSurface(catalog)
    if native is True:
        return surface
    return AliasedSurface(surface, native)
