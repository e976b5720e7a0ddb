"""The Beads tools through a real MCP session (stdio) with the built-in store."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.engines.beads import beads_init
from tests.conftest import every_tool_env

pytestmark = pytest.mark.anyio


def _server(root: Path) -> StdioServerParameters:
    # keep a locally installed bd out of the server's PATH, so the built-in store is what is tested
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.path.exists(os.path.join(d, "bd")))
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                 env=every_tool_env(PATH=path, PYTHONUNBUFFERED="1"))


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_create_ready_update_list_over_mcp(root: Path) -> None:
    beads_init(root, prefix="web")
    async with Client(_server(root)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"bd_list", "bd_create", "bd_update", "bd_ready"} <= names

        first = await client.call_tool("bd_create", {"title": "Login form", "priority": 1, "issue_type": "feature"})
        assert not first.is_error, _text(first)
        login = first.structured_content["bead"]["id"]
        second = await client.call_tool("bd_create", {"title": "Password reset", "dependencies": [login]})
        assert not second.is_error, _text(second)
        reset = second.structured_content["bead"]["id"]

        ready = await client.call_tool("bd_ready", {})
        assert _text(ready) == f"ID: {login}, Status: open, Title: Login form"
        assert [b["id"] for b in ready.structured_content["beads"]] == [login]

        done = await client.call_tool("bd_update", {"bead_id": login, "status": "closed"})
        assert not done.is_error and done.structured_content["bead"]["status"] == "closed"
        ready = await client.call_tool("bd_ready", {})
        assert _text(ready) == f"ID: {reset}, Status: open, Title: Password reset"

        listing = await client.call_tool("bd_list", {})
        assert _text(listing).splitlines() == [f"ID: {login}, Status: closed, Title: Login form",
                                               f"ID: {reset}, Status: open, Title: Password reset"]
        bad = await client.call_tool("bd_update", {"bead_id": login, "status": "finished"})
        assert bad.is_error and "status" in _text(bad)

    stored = [json.loads(line) for line in (root / ".beads" / "issues.jsonl").read_text().splitlines()]
    assert [(b["id"], b["status"]) for b in stored] == [(login, "closed"), (reset, "open")]


async def test_no_workspace_error_over_mcp(root: Path) -> None:
    async with Client(_server(root)) as client:
        result = await client.call_tool("bd_list", {})
        assert result.is_error and "no active workspace to run beads tools." in _text(result)
    assert not (root / ".beads").exists()
