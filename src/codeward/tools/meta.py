"""Lazy meta-tool mode: a surface that lists only the four registry tools but reaches every tool.

Clients pay context for each tool schema they are shown; ~80 schemas cost thousands of
tokens before the first question. The :class:`Meta` middleware shows four. ``registry_search`` and
``registry_help`` see the inner surface's tools (the catalog, the gateway's upstreams) and
``registry_execute`` dispatches to it directly — same code path as a direct call, so
gateway approval policies, path locks and output caps all still apply. Tools left out of
the list stay callable by name for clients that already know them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from codeward.engines.registry.served import ServedTools
from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import Middleware, ToolCall, chain
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.steps import CallStep
from codeward.kernel.surface import CatalogSurface, ToolInfo, ToolSurface

DIRECT_KEYS = frozenset({"name", "action", "params", "dry_run", "timeout"})


def meta_catalog() -> Catalog:
    """A catalog of just the four registry tools."""
    from codeward.tools import registry_tools

    return Catalog.from_functions([registry_tools.registry_search, registry_tools.registry_load,
                                   registry_tools.registry_execute, registry_tools.registry_help])


class Meta(Middleware):
    """The four registry tools in front of everything inside it (their list replaces the inner one).

    A call of a tool inside (directly, or through ``registry_execute``) is approved inside, by
    that tool's own name and hints — asking about the meta-tool too would be asking twice. The
    meta-tools' own work (running or signing a registry item, copying one with
    ``registry_load``) passes ``guard`` (the stack's approval) like any other writing tool.
    """

    def __init__(self, meta: Catalog | None = None, guard: Middleware | None = None,
                 steps: Sequence[CallStep] | None = None) -> None:
        self.meta = meta or meta_catalog()
        if steps is not None:  # the stack's own steps around each run (checkpoints of registry_load...)
            self.meta = self.meta.with_steps(steps)
        self._infos = [ToolInfo.from_spec(spec) for spec in self.meta]
        self._own = chain(CatalogSurface(self.meta), [guard] if guard is not None else [])
        self._served: ServedTools | None = None
        self._lock = threading.Lock()

    def served(self, inner: ToolSurface) -> ServedTools:
        """The tools inside, searchable and callable by the meta-tools (one index per chain)."""
        with self._lock:
            if self._served is None or self._served.surface is not inner:
                self._served = ServedTools(inner)
            return self._served

    def list_tools(self, inner: ToolSurface) -> Sequence[ToolInfo]:
        return self._infos

    def has(self, name: str, inner: ToolSurface) -> bool:
        return name in self.meta or inner.has(name)

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        served = self.served(inner)
        name, arguments = call.name, call.arguments
        ctx = call.ctx.child(services=call.ctx.services.with_values(served))
        if name not in self.meta:
            return await inner.call(name, arguments, ctx)
        target = self._direct_target(served, name, arguments)
        if target is not None:
            params = (arguments or {}).get("params") or {}
            return await inner.call(target, params, ctx)
        if self._forwards(served, name, arguments):  # runs a tool inside, approved there
            return await self.meta.acall(name, arguments, ctx)
        return await self._own.call(name, arguments, ctx)

    @staticmethod
    def _forwards(served: ServedTools, name: str, arguments: Mapping[str, Any] | None) -> bool:
        """Whether a ``registry_execute`` call runs one of the served tools (not a registry item)."""
        if name != "registry_execute" or not isinstance(arguments, Mapping):
            return False
        target = arguments.get("name")
        return (arguments.get("action", "run") == "run" and arguments.get("source") is None
                and isinstance(target, str) and served.has(target))

    @staticmethod
    def _direct_target(served: ServedTools, name: str, arguments: Mapping[str, Any] | None) -> str | None:
        """The served tool a plain ``registry_execute`` run names (anything else goes the long way)."""
        if name != "registry_execute" or not isinstance(arguments, Mapping) or not set(arguments) <= DIRECT_KEYS:
            return None
        target = arguments.get("name")
        if arguments.get("action", "run") != "run" or arguments.get("dry_run") or not isinstance(target, str):
            return None
        if not isinstance(arguments.get("params") or {}, Mapping):
            return None
        return target if served.has(target) else None
