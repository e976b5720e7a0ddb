"""Tracked files in the agent: the allowlist built from them, and the synthetic context refresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeward.apps.agent.conversation import FILES_UPDATED, Conversation
from codeward.apps.agent.loop import ToolLoop
from codeward.apps.agent.tracked import TrackedFiles
from codeward.config.model_profile import ModelProfile
from codeward.engines.llm.client import ModelClient
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.surface import CatalogSurface
from codeward.kernel.workspace import Workspace
from tests.fake_openai import FakeOpenAI, text, tool_calls
from tests.test_agent_loop import Recorder

pytestmark = pytest.mark.anyio


def _blocks(messages: list[dict[str, object]]) -> list[str]:
    return [str(m["content"]) for m in messages if FILES_UPDATED in str(m.get("content") or "")]


async def test_refresh_reports_tool_and_outside_edits_and_prunes_old_blocks(root: Path, catalog: Catalog) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "b.txt").write_text("bee\n")
    tracked = TrackedFiles(Workspace.create([root]))
    added, problems = tracked.add(["a.txt"])
    assert added == ["a.txt"] and not problems

    def outside_edit() -> None:
        (root / "a.txt").write_text("ONE\nTWO\nthree\nfour\n")

    replies = [
        tool_calls(("edit_file", json.dumps({"path": "a.txt", "old_string": "one", "new_string": "ONE"}))),
        tool_calls(("read_file", '{"path": "b.txt"}')),
        tool_calls(("read_file", '{"path": "b.txt"}')),
        tool_calls(("read_file", '{"path": "b.txt"}')),
        text("done"),
    ]
    replies[1].before = outside_edit
    state = {"workspace": tracked.workspace()}

    def rebuild() -> None:
        state["workspace"] = tracked.workspace()

    with FakeOpenAI(replies) as fake:
        client = ModelClient(ModelProfile(name="fake", base_url=fake.base_url, model="m"), environ={})
        loop = ToolLoop(client, CatalogSurface(catalog), Conversation("s"), Recorder(),
                        lambda: ToolContext(state["workspace"]), before_request=rebuild, after_tools=tracked.refresh)
        result = await loop.run("edit a.txt")
        await client.close()
    assert result.ok
    second, third, fourth, fifth = (fake.messages(i) for i in range(1, 5))
    [first_block] = _blocks(second)
    assert "-one\n+ONE" in first_block and "--- a/a.txt" in first_block
    [outside_block] = _blocks(third)
    assert "-two\n+TWO" in outside_block and "+four" in outside_block and "-ONE" not in outside_block
    assert _blocks(fourth) == [outside_block] and _blocks(fifth) == [outside_block]
    assert not any("+ONE" in b for b in _blocks(fifth)), "two rounds later the older block is gone"
    assert loop.conversation.turns[2].content.count(FILES_UPDATED) == 1, "the history keeps every block"


def test_deleted_and_renamed_files_are_reported(root: Path) -> None:
    (root / "keep.txt").write_text("stays\n")
    (root / "old.txt").write_text("moving content\n")
    (root / "gone.txt").write_text("bye\n")
    tracked = TrackedFiles(Workspace.create([root]))
    tracked.add(["*.txt"])
    (root / "old.txt").rename(root / "new.txt")
    (root / "gone.txt").unlink()
    report = tracked.refresh()
    assert "old.txt: renamed to new.txt" in report and "gone.txt: deleted" in report
    assert sorted(tracked.paths()) == ["keep.txt", "new.txt"]
    assert tracked.refresh() == ""


def test_very_large_diffs_are_bounded_and_say_how_to_see_them(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(3000)))
    tracked = TrackedFiles(Workspace.create([root]))
    tracked.add(["big.txt"])
    (root / "big.txt").write_text("".join(f"LINE {i}\n" for i in range(3000)))
    report = tracked.refresh()
    assert "diff of big.txt cut" in report and "read_file" in report and len(report) < 6000


async def test_a_session_narrowed_to_tracked_files_refuses_other_paths(root: Path, catalog: Catalog) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    (root / "notes.md").write_text("tracked\n")
    (root / "secret_plan.txt").write_text("not for the model\n")
    tracked = TrackedFiles(Workspace.create([root]), base_dirs=((root / "src").resolve(),))
    tracked.add(["notes.md"])
    ctx = ToolContext(tracked.workspace())
    assert catalog.call("read_file", {"path": "notes.md"}, ctx).text == "tracked\n"
    assert catalog.call("read_file", {"path": "src/app.py"}, ctx).text == "x = 1\n"
    refused = catalog.call("read_file", {"path": "secret_plan.txt"}, ctx)
    assert refused.is_error and "outside the workspace" in refused.text and "tracked files" in refused.text
    only_files = ToolContext(TrackedFiles(Workspace.create([root]), base_dirs=()).workspace())
    assert catalog.call("read_file", {"path": "src/app.py"}, only_files).is_error


def test_adding_refuses_paths_outside_and_missing_files(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("x")
    tracked = TrackedFiles(Workspace.create([root]))
    added, problems = tracked.add(["../outside.txt", "missing.txt", "nothing-*.md"])
    assert added == [] and len(problems) == 3
    assert "outside the workspace" in problems[0] and "no such file" in problems[1]


def test_listing_and_token_estimates(root: Path) -> None:
    (root / "a.py").write_text("x" * 400)
    tracked = TrackedFiles(Workspace.create([root]))
    tracked.add(["a.py"])
    assert tracked.listing() == [("a.py", 400, 100)] and tracked.tokens() == 100
    assert "[FILE: a.py]" in tracked.context_block(["a.py"])
    assert tracked.drop(["*.py"]) == ["a.py"] and tracked.listing() == []


def test_a_tracked_file_turned_into_a_symlink_outside_is_not_read(root: Path, tmp_path: Path,
                                                                   catalog: Catalog) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_key").write_text("PRIVATE KEY MATERIAL\n")
    (root / "notes.txt").write_text("notes\n")
    tracked = TrackedFiles(Workspace.create([root]))
    tracked.add(["notes.txt"])
    (root / "notes.txt").unlink()
    (root / "notes.txt").symlink_to(outside / "id_key")  # e.g. by a script the model ran
    assert (outside / "id_key").resolve() not in tracked.workspace().allowed_files
    read = catalog.call("read_file", {"path": "notes.txt"}, ToolContext(tracked.workspace()))
    assert read.is_error and "outside the workspace" in read.text
    report = tracked.refresh()
    assert "PRIVATE KEY" not in report and "notes.txt: changed and can no longer be read" in report
