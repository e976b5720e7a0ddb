"""Lazy meta-tool mode: a surface that lists only the four registry tools but reaches every tool.

Clients pay context for each tool schema they are shown; ~80 schemas cost thousands of
tokens before the first question. :class:`MetaSurface` shows four. ``registry_search`` and
``registry_help`` see the inner surface's tools (the catalog, the gateway's upstreams) and
``registry_execute`` dispatches to it directly — same code path as a direct call, so
gateway approval policies, path locks and output caps all still apply. Tools left out of
the list stay callable by name for clients that already know them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codeward.catalog import Catalog, ToolOutcome
from codeward.context import ToolContext
from codeward.registry.served import EXTRAS_KEY, ServedTools
from codeward.surface import ToolInfo, ToolSurface

DIRECT_KEYS = frozenset({"name", "action", "params", "dry_run", "timeout"})


def meta_catalog() -> Catalog:
    """A catalog of just the four registry tools."""
    from codeward.tools import registry_tools

    return Catalog.from_functions([registry_tools.registry_search, registry_tools.registry_load,
                                   registry_tools.registry_execute, registry_tools.registry_help])


class MetaSurface:
    """The four registry tools in front of any other surface."""

    def __init__(self, inner: ToolSurface, meta: Catalog | None = None) -> None:
        self.inner = inner
        self.meta = meta or meta_catalog()
        self.served = ServedTools(inner)
        self._infos = [ToolInfo.from_spec(spec) for spec in self.meta]

    def tool_infos(self) -> Sequence[ToolInfo]:
        return self._infos

    def has(self, name: str) -> bool:
        return name in self.meta or self.inner.has(name)

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        ctx = ctx.child(extras={**ctx.extras, EXTRAS_KEY: self.served})
        if name not in self.meta:
            return await self.inner.call(name, arguments, ctx)
        target = self._direct_target(name, arguments)
        if target is not None:
            params = (arguments or {}).get("params") or {}
            return await self.inner.call(target, params, ctx)
        return await self.meta.acall(name, arguments, ctx)

    def _direct_target(self, name: str, arguments: Mapping[str, Any] | None) -> str | None:
        """The served tool a plain ``registry_execute`` run names (anything else goes the long way)."""
        if name != "registry_execute" or not isinstance(arguments, Mapping) or not set(arguments) <= DIRECT_KEYS:
            return None
        target = arguments.get("name")
        if arguments.get("action", "run") != "run" or arguments.get("dry_run") or not isinstance(target, str):
            return None
        if not isinstance(arguments.get("params") or {}, Mapping):
            return None
        return target if self.served.has(target) else None
