"""search_text through a real MCP session: a `codeward serve` subprocess and the official Python client."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.engines.files import ripgrep
from tests.conftest import snapshot

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(ripgrep.find_binary() is None, reason="ripgrep is not installed")]


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _server(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})


async def test_search_text_over_stdio(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle from outside\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    needle = os.getcwd()\n")
    (root / ".env").write_text("needle=hunter2\n")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "many.txt").write_text("needle\n" * 5000)
    (root / "blob.bin").write_bytes(b"needle\x00" * 100)
    before = snapshot(root)
    async with Client(_server(root)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "search_text" in tools and tools["search_text"].output_schema is not None
        assert tools["search_text"].annotations is not None and tools["search_text"].annotations.read_only_hint

        found = await client.call_tool("search_text", {"pattern": "needle", "path": "src", "context": 1})
        assert not found.is_error, _text(found)
        assert found.structured_content is not None
        match = found.structured_content["matches"][0]
        assert (match["path"], match["line"], match["before"]) == ("src/app.py", 4, ["def main():"])

        everything = await client.call_tool("search_text", {"pattern": "needle", "limit": 20})
        body = _text(everything)
        assert not everything.is_error and "hunter2" not in body and "outside" not in body
        assert everything.structured_content is not None
        assert everything.structured_content["total"] == 5001
        assert everything.structured_content["next_offset"] == 20 and len(body) < 2000

        counts = await client.call_tool("search_text", {"pattern": "needle", "mode": "count"})
        assert counts.structured_content is not None
        assert [(f["path"], f["matches"]) for f in counts.structured_content["files"]] == [
            ("many.txt", 5000), ("src/app.py", 1)]

        for arguments, words in [({"pattern": "(unclosed"}, "not a valid regular expression"),
                                 ({"pattern": "x", "path": "escape.txt"}, "outside the workspace"),
                                 ({"pattern": "x", "path": ".env"}, "blacklisted"),
                                 ({"pattern": "needle", "path": "blob.bin"}, "binary file"),
                                 ({"pattern": "x", "context": 99}, "context")]:
            refused = await client.call_tool("search_text", arguments)
            assert refused.is_error and words in _text(refused), (arguments, _text(refused))
    assert snapshot(root) == before
