"""What one request offers of the session's tools: a trimmed subset (meta mode is the stack's).

Offering fewer schemas never takes a tool away: like the :class:`~codeward.tools.meta.Meta`
middleware, :class:`Offered` still lets a call reach any tool of the session by name, through
the same chain (approval, observation).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codeward.kernel.chain import Middleware
from codeward.kernel.surface import ToolInfo, ToolSurface


class Offered(Middleware):
    """Lists only ``names`` of the tools inside (and those ``later`` admits: a toolset the model enabled
    meanwhile); calls reach all of them."""

    def __init__(self, names: Sequence[str], later: Callable[[str], bool] | None = None) -> None:
        self.names = frozenset(names)
        self.later = later

    def list_tools(self, inner: ToolSurface) -> Sequence[ToolInfo]:
        later = self.later
        return [info for info in inner.tool_infos()
                if info.name in self.names or (later is not None and later(info.name))]
