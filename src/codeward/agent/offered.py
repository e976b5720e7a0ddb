"""The surface one request offers: the whole session surface, a trimmed subset, or meta mode.

Offering fewer schemas never takes a tool away: like :class:`~codeward.registry.meta.MetaSurface`,
a trimmed surface still calls any tool of the session by name, through the same approval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codeward.agent.approval import ApprovingSurface
from codeward.catalog import ToolOutcome
from codeward.context import ToolContext
from codeward.gateway.policy import ConfirmCallback
from codeward.registry.meta import MetaSurface
from codeward.surface import ToolInfo, ToolSurface


class OfferedSurface:
    """Lists only ``names`` of ``inner``'s tools; calls reach all of them."""

    def __init__(self, inner: ToolSurface, names: Sequence[str]) -> None:
        self.inner = inner
        self.names = frozenset(names)

    def tool_infos(self) -> Sequence[ToolInfo]:
        return [info for info in self.inner.tool_infos() if info.name in self.names]

    def has(self, name: str) -> bool:
        return self.inner.has(name)

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        return await self.inner.call(name, arguments, ctx)


def meta_surface(inner: ToolSurface, confirm: ConfirmCallback, auto_approve: Sequence[str]) -> ToolSurface:
    """The four meta-tools in front of the session's surface, under the agent's approval rules.

    ``registry_execute`` running a tool of ``inner`` is approved there, by that tool's own name
    and hints (asking twice would be noise); running or signing a registry item, or copying one
    with ``registry_load``, is approved here like any other writing tool.
    """
    meta = MetaSurface(inner)

    def forwarded(name: str, arguments: Mapping[str, Any] | None) -> bool:
        args = arguments or {}
        target = args.get("name")
        return (name == "registry_execute" and args.get("action", "run") == "run" and args.get("source") is None
                and isinstance(target, str) and inner.has(target))

    return ApprovingSurface(meta, confirm, auto_approve=auto_approve, delegated=forwarded)
