"""File operations, patches and undo through real MCP sessions (`codeward serve` over stdio, the official client)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import every_tool_env, snapshot

pytestmark = pytest.mark.anyio

TOOLS = {"move_path", "make_directory", "delete_path", "apply_patch", "list_checkpoints", "undo"}


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _server(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                 env=every_tool_env(PYTHONUNBUFFERED="1"))


def _tree(root: Path) -> dict[str, bytes]:
    return {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward")}


async def test_file_operations_and_undo_over_stdio(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "src").mkdir()
    (root / "src/app.py").write_text("def main():\n    return 1\n")
    (root / "notes.md").write_text("# notes\n")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    start = _tree(root)
    async with Client(_server(root)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= TOOLS
        assert tools["delete_path"].annotations is not None and tools["delete_path"].annotations.destructive_hint
        assert tools["list_checkpoints"].annotations is not None
        assert tools["list_checkpoints"].annotations.read_only_hint

        made = await client.call_tool("make_directory", {"path": "docs/guide"})
        assert not made.is_error, _text(made)
        moved = await client.call_tool("move_path", {"source": "notes.md", "destination": "docs/guide/notes.md"})
        assert not moved.is_error, _text(moved)
        patched = await client.call_tool("apply_patch", {"patch": (
            "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def main():\n-    return 1\n+    return 2\n")})
        assert not patched.is_error and patched.structured_content is not None, _text(patched)
        deleted = await client.call_tool("delete_path", {"path": "src", "recursive": True})
        assert not deleted.is_error and "undo restores it" in _text(deleted)
        assert not (root / "src").exists() and (root / "docs/guide/notes.md").exists()

        for name, arguments, words in [
            ("apply_patch", {"patch": "--- a/docs/guide/notes.md\n+++ b/docs/guide/notes.md\n@@ -1 +1 @@\n"
                                      "-# other\n+# changed\n"}, "does not apply"),
            ("apply_patch", {"patch": "--- /dev/null\n+++ b/escape/planted.txt\n@@ -0,0 +1 @@\n+x\n"},
             "outside the workspace"),
            ("move_path", {"source": "docs", "destination": "escape/docs"}, "outside the workspace"),
            ("delete_path", {"path": "escape"}, "outside the workspace"),
            ("make_directory", {"path": ".git/hooks"}, ".git"),
            ("undo", {"checkpoint": 99}, "no checkpoint 99"),
        ]:
            refused = await client.call_tool(name, arguments)
            assert refused.is_error and words in _text(refused), (name, _text(refused))
        assert not any(outside.iterdir())

        listed = await client.call_tool("list_checkpoints", {})
        assert listed.structured_content is not None
        assert [c["tool"] for c in listed.structured_content["checkpoints"]] == [
            "delete_path", "apply_patch", "move_path", "make_directory"]

        undone = await client.call_tool("undo", {"steps": 4})
        assert not undone.is_error, _text(undone)
        assert undone.structured_content is not None and undone.structured_content["reverted"] == [1, 2, 3, 4]
    assert _tree(root) == start and not (root / "docs").exists()


async def test_undo_asks_the_user_before_overwriting_outside_changes(root: Path) -> None:
    (root / "a.txt").write_text("one\n")
    asked: list[str] = []
    answer = {"overwrite": False}

    async def elicit(context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        asked.append(params.message)
        return ElicitResult(action="accept", content=dict(answer))

    async with Client(_server(root), elicitation_callback=elicit) as client:
        edited = await client.call_tool("edit_file", {"path": "a.txt", "old_string": "one", "new_string": "two"})
        assert not edited.is_error
        (root / "a.txt").write_text("typed by hand\n")
        declined = await client.call_tool("undo", {})
        assert declined.is_error and "changed outside codeward" in _text(declined)
        assert (root / "a.txt").read_text() == "typed by hand\n"
        answer["overwrite"] = True
        accepted = await client.call_tool("undo", {})
        assert not accepted.is_error, _text(accepted)
    assert (root / "a.txt").read_text() == "one\n"
    assert len(asked) == 2 and "a.txt" in asked[0] and "Overwrite" in asked[0]
