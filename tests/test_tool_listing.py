"""The ``tools/list`` answer is built once and rebuilt only when the served tools change."""

from __future__ import annotations

from dataclasses import replace

from codeward.surface import CatalogSurface, CompositeSurface, ToolInfo
from codeward.tool_listing import ToolListing, wire_tool
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
