"""The ``tools/list`` answer, built once per tool list instead of once per request.

Turning ~60 tool definitions into wire ``Tool`` models (lean schemas, hints, pydantic models)
costs milliseconds. Over streamable HTTP in the 2026-07-28 era every ``tools/call`` request
stands alone, and the SDK checks its ``Mcp-Param-*`` headers against the called tool's input
schema: without a direct answer (``get_tool_input_schema``) it runs the whole ``tools/list``
handler for every call. So the wire listing is kept and rebuilt only when the surface's list
changes (a gateway's upstream added a tool). A tool whose :class:`~codeward.surface.ToolInfo`
is the same object as last time, or an equal one (a renaming middleware makes fresh ones),
keeps its wire model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from codeward.surface import ToolInfo, ToolSurface
from codeward.wire_schema import wire_hints, wire_output_schema


def wire_tool(info: ToolInfo) -> types.Tool:
    """One tool as ``tools/list`` sends it: lean output schema, only meaningful hints."""
    hints = wire_hints(info.annotations)
    return types.Tool(
        name=info.name,
        title=info.title,
        description=info.description,
        input_schema=info.input_schema,
        output_schema=wire_output_schema(info.output_schema),
        annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
    )


class ToolListing:
    """The wire listing of a surface and its input schemas by name, rebuilt when its tools change."""

    def __init__(self, surface: ToolSurface) -> None:
        self._surface = surface
        self._infos: tuple[ToolInfo, ...] = ()
        self._tools: tuple[types.Tool, ...] = ()
        self._schemas: dict[str, Mapping[str, Any]] = {}

    def tools(self) -> list[types.Tool]:
        """The tools as ``tools/list`` answers (a fresh list; the models are shared, never mutated)."""
        self._refresh(self._surface.tool_infos())
        return list(self._tools)

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of the listed tool ``name`` (``None`` if it is not listed)."""
        self._refresh(self._surface.tool_infos())
        return self._schemas.get(name)

    def _refresh(self, infos: Sequence[ToolInfo]) -> None:
        old = self._infos
        if len(infos) == len(old) and all(a is b for a, b in zip(infos, old, strict=True)):
            return
        if len(infos) == len(old) and infos == old:  # equal but fresh objects: keep the models
            self._infos = tuple(infos)
            return
        known = {info.name: (info, tool) for info, tool in zip(old, self._tools, strict=True)}
        tools = []
        for info in infos:
            kept = known.get(info.name)
            tools.append(kept[1] if kept is not None and (kept[0] is info or kept[0] == info) else wire_tool(info))
        self._schemas = {info.name: info.input_schema for info in infos}
        self._infos, self._tools = tuple(infos), tuple(tools)
