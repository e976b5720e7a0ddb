"""The navigation tools through a real ``codeward serve`` and the official client: not listed by default, listed
when the operator names the toolset, and the servers' answers accepted against each tool's output schema."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.lsp_support import located_or_skip

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("lsp-mcp")]
NAVIGATION = {"find_definition", "find_references", "rename_symbol", "symbol_info", "get_diagnostics"}


def serve(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)], cwd=str(root),
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})


def c_project(root: Path) -> None:
    (root / "ring.c").write_text("int ring_size(int n) { return n; }\n\n"
                                 "int twice(int n) { return ring_size(n) * 2; }\n")
    (root / "main.c").write_text("int ring_size(int n);\n\nint main(void) { return ring_size(3); }\n")
    (root / "compile_commands.json").write_text(json.dumps([
        {"directory": str(root), "file": str(root / name), "arguments": ["cc", "-c", name]}
        for name in ("ring.c", "main.c")]))


async def test_the_default_listing_leaves_the_navigation_tools_out(root: Path) -> None:
    async with Client(serve(root)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert not names & NAVIGATION and {"toolsets", "call_tool"} <= names  # the lean default: reachable, not listed


async def test_server_answers_are_accepted_by_the_official_client(root: Path) -> None:
    located_or_skip("c")
    c_project(root)
    (root / "codeward.toml").write_text('[server]\ntoolsets = ["all"]\n\n[lsp]\nstartup_wait_s = 240\n')
    async with Client(serve(root)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) >= NAVIGATION and all(tools[name].output_schema for name in NAVIGATION)
        calls = {
            "find_references": {"path": "ring.c", "name": "ring_size"},
            "find_definition": {"path": "main.c", "line": 3, "column": 25},
            "symbol_info": {"path": "ring.c", "name": "twice"},
            "get_diagnostics": {"path": "main.c"},
            "rename_symbol": {"path": "ring.c", "name": "ring_size", "new_name": "ring_count"},
        }
        answers = {name: await client.call_tool(name, arguments) for name, arguments in calls.items()}
        applied = await client.call_tool("rename_symbol", {**calls["rename_symbol"], "apply": True})
    for name, answer in answers.items():
        assert not answer.is_error and answer.structured_content is not None, (name, answer)
        assert answer.structured_content["engine"].startswith("clangd"), (name, answer.structured_content)
    assert answers["find_references"].structured_content["total"] == 4
    assert "ring_count" in answers["rename_symbol"].structured_content["diff"]
    assert not applied.is_error and applied.structured_content is not None and applied.structured_content["applied"]
    assert "ring_count(3)" in (root / "main.c").read_text() and "int ring_count(int n)" in (root / "ring.c").read_text()


def test_codeward_call_reaches_the_navigation_tools_and_waits_for_the_server(root: Path) -> None:
    """One call and the process ends: there is no calling again, so ``codeward call`` waits for the server."""
    import subprocess

    located_or_skip("c")
    c_project(root)
    done = subprocess.run([sys.executable, "-m", "codeward", "call", "--json", "find_references", "path=ring.c",
                           "name=ring_size"], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["structured"]["engine"].startswith("clangd") and answer["structured"]["total"] == 4, answer
