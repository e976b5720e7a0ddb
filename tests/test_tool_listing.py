"""The ``tools/list`` answer is built once and rebuilt only when the served tools change."""

from __future__ import annotations

from dataclasses import replace

from codeward.kernel.surface import CatalogSurface, CompositeSurface, ToolInfo
from codeward.serving.tool_listing import ToolListing, wire_tool
from codeward.tools import default_catalog


def _one_tool_surface(info: ToolInfo) -> CatalogSurface:
    surface = CatalogSurface(default_catalog(["files"]))
    surface._infos = [info]  # what a gateway upstream that lists a single tool would serve
    return surface


def test_the_listing_is_the_wire_form_of_every_tool_and_is_reused() -> None:
    surface = CatalogSurface(default_catalog())
    listing = ToolListing(surface)
    first = listing.tools()
    assert [t.model_dump() for t in first] == [wire_tool(info).model_dump() for info in surface.tool_infos()]
    second = listing.tools()
    assert second == first and all(a is b for a, b in zip(first, second, strict=True))
    second.clear()  # a caller's list is its own
    assert len(listing.tools()) == len(first)
    read = next(info for info in surface.tool_infos() if info.name == "read_file")
    assert listing.input_schema("read_file") == read.input_schema
    assert listing.input_schema("no_such_tool") is None


def test_a_changed_tool_list_is_rebuilt_and_unchanged_tools_keep_their_models() -> None:
    base = CatalogSurface(default_catalog(["files"]))
    composite = CompositeSurface([base])
    listing = ToolListing(composite)
    before = {t.name: t for t in listing.tools()}
    assert listing.input_schema("up__echo") is None

    echo = ToolInfo(name="up__echo", description="Echo.", input_schema={"type": "object", "properties": {
        "text": {"type": "string", "x-mcp-header": "Text"}}}, source="up")
    composite.surfaces.append(_one_tool_surface(echo))  # an upstream connected while serving
    after = {t.name: t for t in listing.tools()}
    assert set(after) == set(before) | {"up__echo"}
    assert all(after[name] is model for name, model in before.items())
    assert listing.input_schema("up__echo") == echo.input_schema

    changed = replace(echo, description="Echo, louder.")  # the upstream redefined its tool
    composite.surfaces[1] = _one_tool_surface(changed)
    assert next(t for t in listing.tools() if t.name == "up__echo").description == "Echo, louder."

    composite.surfaces.pop()  # and went away
    assert "up__echo" not in {t.name for t in listing.tools()}
    assert listing.input_schema("up__echo") is None


def test_fresh_but_equal_infos_keep_the_models() -> None:
    """A renaming middleware hands out new ToolInfo objects on every listing; nothing is rebuilt."""
    base = CatalogSurface(default_catalog(["files"]))
    infos = list(base.tool_infos())
    listing = ToolListing(base)
    first = listing.tools()
    base._infos = [replace(info) for info in infos]
    assert all(a is b for a, b in zip(first, listing.tools(), strict=True))


def test_the_wire_entries_are_what_the_sdk_sends_for_the_models_in_every_protocol_version() -> None:
    """``tools/list`` answers with the entries; the SDK validates them against the session's version of
    the result and dumps that: the JSON on the wire is the one the models gave, for every version."""
    import mcp_types as types
    from mcp_types import methods

    surface = CatalogSurface(default_catalog())
    titled = ToolInfo(name="up__echo", title="Echo", description="Echo.", source="up",
                      input_schema={"type": "object", "properties": {"text": {"type": "string", "default": None}}},
                      output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                      annotations={"readOnlyHint": True, "openWorldHint": False})
    surface._infos = [*surface.tool_infos(), titled]
    listing = ToolListing(surface)
    entries = listing.wire()
    models = listing.tools()
    assert len(entries) == len(models) > 50
    assert [entry["name"] for entry in entries] == [model.name for model in models]
    for entry, model in zip(entries, models, strict=True):
        assert entry == model.model_dump(by_alias=True, mode="json", exclude_none=True)
    dumped = types.ListToolsResult(tools=models).model_dump(by_alias=True, mode="json", exclude_none=True)
    versions = sorted(version for method, version in methods.SERVER_RESULTS if method == "tools/list")
    assert len(versions) >= 2
    assert listing.result() == dumped
    for version in versions:
        sent = methods.serialize_server_result("tools/list", version, listing.result())
        assert sent == methods.serialize_server_result("tools/list", version, dumped)
    assert listing.wire() == entries and all(a is b for a, b in zip(listing.wire(), entries, strict=True))
