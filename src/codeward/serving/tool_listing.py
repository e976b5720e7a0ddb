"""The ``tools/list`` answer, built once per tool list instead of once per request.

Turning ~60 tool definitions into wire ``Tool`` models (lean schemas, hints, pydantic models)
costs milliseconds. Over streamable HTTP in the 2026-07-28 era every ``tools/call`` request
stands alone, and the SDK checks its ``Mcp-Param-*`` headers against the called tool's input
schema: without a direct answer (``get_tool_input_schema``) it runs the whole ``tools/list``
handler for every call. So the wire listing is kept and rebuilt only when the surface's list
changes (a gateway's upstream added a tool). A tool whose :class:`~codeward.kernel.surface.ToolInfo`
is the same object as last time, or an equal one (a renaming middleware makes fresh ones),
keeps its wire model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mcp_types as types

from codeward.kernel.surface import ToolInfo, ToolSurface
from codeward.kernel.wire_schema import wire_hints, wire_output_schema


def wire_tool(info: ToolInfo) -> types.Tool:
    """One tool as ``tools/list`` sends it: lean output schema, only meaningful hints (an upstream's tool
    as its server published it)."""
    if info.wire is not None:
        return types.Tool.model_validate(wire_entry(info), by_name=False)
    hints = wire_hints(info.annotations)
    return types.Tool(
        name=info.name,
        title=info.title,
        description=info.description,
        input_schema=info.input_schema,
        output_schema=wire_output_schema(info.output_schema),
        annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
    )


def wire_entry(info: ToolInfo) -> dict[str, Any]:
    """:func:`wire_tool` as the JSON the SDK sends, made without building the pydantic model.

    An upstream's tool (:attr:`ToolInfo.wire`) goes out as its server published it — full output
    schema, every annotation, ``_meta``, ``icons``, ``execution`` — under the gateway's name for it:
    the client and its model should see what the upstream wrote, not codeward's lean form of it."""
    if info.wire is not None:
        return {"name": info.name, **{key: value for key, value in info.wire.items() if key != "name"}}
    entry: dict[str, Any] = {"name": info.name}
    if info.title is not None:
        entry["title"] = info.title
    entry["description"] = info.description
    entry["inputSchema"] = info.input_schema
    output = wire_output_schema(info.output_schema)
    if output is not None:
        entry["outputSchema"] = output
    hints = wire_hints(info.annotations)
    if hints:
        entry["annotations"] = hints
    return entry


class ToolListing:
    """The wire listing of a surface and its input schemas by name, rebuilt when its tools change.

    The server answers ``tools/list`` with :meth:`result` (the JSON a ``ListToolsResult`` of the
    models dumps to, which the SDK checks against the session's protocol version and dumps as it
    would the model): the first answer of a session builds no ``Tool`` model of its own.
    :meth:`tools` gives the models, built on first ask."""

    def __init__(self, surface: ToolSurface) -> None:
        self._surface = surface
        # What an empty result dumps to: the fields a 2026-07-28 result requires (resultType, and
        # ttlMs and cacheScope at their defaults: codeward's server sets no cache hints).
        self._envelope = types.ListToolsResult(tools=[]).model_dump(by_alias=True, mode="json", exclude_none=True)
        self._infos: tuple[ToolInfo, ...] = ()
        self._entries: tuple[dict[str, Any], ...] = ()
        self._models: list[types.Tool | None] = []
        self._schemas: dict[str, Mapping[str, Any]] = {}

    def wire(self, shown: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
        """The tools as ``tools/list`` sends them, those ``shown`` by name (all by default): a fresh list;
        the entries are shared, never mutated."""
        self._refresh(self._surface.tool_infos())
        if shown is None:
            return list(self._entries)
        return [entry for entry in self._entries if shown(entry["name"])]

    def result(self, shown: Callable[[str], bool] | None = None) -> dict[str, Any]:
        """The ``tools/list`` result as JSON: ``ListToolsResult(tools=self.tools())``, dumped (a lean
        session's: only the tools ``shown`` by name)."""
        return {**self._envelope, "tools": self.wire(shown)}

    def tools(self) -> list[types.Tool]:
        """The tools as ``tools/list`` models (a fresh list; the models are shared, never mutated)."""
        self._refresh(self._surface.tool_infos())
        models = self._models
        for index, model in enumerate(models):
            if model is None:
                models[index] = wire_tool(self._infos[index])
        return [model for model in models if model is not None]

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of the tool ``name``, listed to a lean session or not (``None`` if the surface has
        no such tool)."""
        self._refresh(self._surface.tool_infos())
        return self._schemas.get(name)

    def _refresh(self, infos: Sequence[ToolInfo]) -> None:
        old = self._infos
        if len(infos) == len(old) and all(a is b for a, b in zip(infos, old, strict=True)):
            return
        if len(infos) == len(old) and infos == old:  # equal but fresh objects: keep what was built
            self._infos = tuple(infos)
            return
        known = {info.name: (info, entry, model)
                 for info, entry, model in zip(old, self._entries, self._models, strict=True)}
        entries: list[dict[str, Any]] = []
        models: list[types.Tool | None] = []
        for info in infos:
            kept = known.get(info.name)
            if kept is not None and (kept[0] is info or kept[0] == info):
                entries.append(kept[1])
                models.append(kept[2])
            else:
                entries.append(wire_entry(info))
                models.append(None)
        self._schemas = {info.name: info.input_schema for info in infos}
        self._infos, self._entries, self._models = tuple(infos), tuple(entries), models
