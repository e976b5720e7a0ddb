"""The analysis tools through a real MCP session over stdio: schemas, structured output, progress."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import every_tool_env

pytestmark = pytest.mark.anyio

TOOLS = {"find_symbol", "repo_map", "py_find_usages", "py_get_hierarchy", "derive_code_path", "get_file_summary",
         "get_git_diff"}


def _server(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                 env=every_tool_env(PYTHONUNBUFFERED="1"))


async def test_analysis_tools_over_stdio(root: Path) -> None:
    for number in range(70):  # enough files for the index to build in worker processes
        (root / f"m{number:02d}.py").write_text(
            f"class K{number}(Base):\n    def run(self):\n        return step{number}()\n\n\n"
            f"def step{number}():\n    return {number}\n", encoding="utf-8")
    (root / "base.py").write_text("class Base:\n    pass\n", encoding="utf-8")
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with Client(_server(root)) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) >= TOOLS
        assert listed["derive_code_path"].output_schema is not None

        found = await client.call_tool("find_symbol", {"name": "K7.run"}, progress_callback=on_progress)
        assert not found.is_error
        assert found.structured_content is not None
        assert found.structured_content["symbols"][0]["path"] == "m07.py"
        assert any(message.startswith("symbol index: indexing 71 files") for message in progress)

        traced = await client.call_tool("derive_code_path", {"target": "K7.run", "max_depth": 2})
        assert not traced.is_error
        assert traced.structured_content is not None
        assert [c["qualname"] for c in traced.structured_content["root"]["calls"]] == ["step7"]

        tree = await client.call_tool("py_get_hierarchy", {"path": ".", "class_name": "Base"})
        assert tree.structured_content is not None and len(tree.structured_content["subclasses"]) == 70

        refused = await client.call_tool("get_git_diff", {"path": ".", "base_rev": "--output=x"})
        assert refused.is_error
        assert not (root / "x").exists()
