"""The Python tools through a real MCP session (stdio): schemas, structured output, a refused edit."""

from __future__ import annotations

import codecs
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import every_tool_env, snapshot

pytestmark = pytest.mark.anyio

PY_TOOLS = {
    "py_get_skeleton", "py_get_code_outline", "py_get_definition", "py_update_definition", "py_get_signature",
    "py_set_signature", "py_get_class_summary", "py_get_var_declaration", "py_set_var_declaration",
    "py_get_docstring", "py_get_imports", "py_check_syntax", "py_remove_def", "py_add_def", "py_move_def",
    "py_region_wrap",
}


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_python_tools_over_stdio(root: Path) -> None:
    source = "class Shape:\n    def area(self) -> float:\n        return 0.0\n"
    (root / "shapes.py").write_bytes(codecs.BOM_UTF8 + source.replace("\n", "\r\n").encode())
    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env=every_tool_env(PYTHONUNBUFFERED="1"))
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= PY_TOOLS
        assert tools["py_get_definition"].output_schema is not None
        assert tools["py_get_code_outline"].annotations is not None
        assert tools["py_get_code_outline"].annotations.read_only_hint is True

        outline = await client.call_tool("py_get_code_outline", {"path": "shapes.py"})
        assert not outline.is_error, _text(outline)
        assert _text(outline) == "[Class] Shape (Lines 1-3)\n  [Method] area (Lines 2-3)"
        assert outline.structured_content["entries"][1]["qualname"] == "Shape.area"

        definition = await client.call_tool("py_get_definition", {"path": "shapes.py", "name": "Shape.area"})
        assert _text(definition) == "    def area(self) -> float:\n        return 0.0\n"

        before = snapshot(root)
        broken = await client.call_tool("py_set_signature", {"path": "shapes.py", "name": "Shape.area",
                                                             "new_signature": "def area(self, -> float:"})
        assert broken.is_error and "new_signature" in _text(broken)
        assert snapshot(root) == before

        added = await client.call_tool("py_add_def", {"path": "shapes.py", "name": "Shape.scale",
                                                      "new_content": "def scale(self, k):\n    return self"})
        assert not added.is_error, _text(added)
    expected = source + "\n    def scale(self, k):\n        return self\n"
    assert (root / "shapes.py").read_bytes() == codecs.BOM_UTF8 + expected.replace("\n", "\r\n").encode()
