"""Checkpoints and undo through the catalog: every write recorded, undo exact, never over outside changes."""

from __future__ import annotations

import codecs
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.config.checkpoints import CheckpointSettings
from codeward.engines.checkpoints import journal as journal_module
from codeward.engines.checkpoints import store as store_module
from codeward.engines.checkpoints.store import store_for
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]


def _tree(root: Path) -> dict[str, bytes]:
    return {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward")}


def test_every_writing_tool_records_a_checkpoint(root: Path, call: Call) -> None:
    (root / "a.py").write_text("def f():\n    return 1\n")
    (root / "b.c").write_text("int g(void) { return 1; }\n")
    calls = [
        ("write_file", {"path": "new.txt", "content": "hello\n"}),
        ("edit_file", {"path": "a.py", "old_string": "return 1", "new_string": "return 2"}),
        ("set_file_slice", {"path": "new.txt", "start_line": 1, "end_line": 1, "new_content": "bye"}),
        ("py_update_definition", {"path": "a.py", "name": "f", "new_content": "def f():\n    return 3\n"}),
        ("code_update_definition", {"path": "b.c", "name": "g", "new_content": "int g(void) { return 2; }"}),
        ("make_directory", {"path": "d"}),
    ]
    ids = []
    for name, arguments in calls:
        outcome = call(name, **arguments)
        assert not outcome.is_error and outcome.checkpoint is not None, (name, outcome.text)
        ids.append(outcome.checkpoint)
    assert ids == sorted(set(ids))
    listed = call("list_checkpoints")
    assert listed.structured is not None and [c["tool"] for c in listed.structured["checkpoints"]] == [
        name for name, _ in reversed(calls)]
    assert "edit_file a.py" in listed.text and "[in effect]" in listed.text


def test_calls_that_change_nothing_leave_no_trace(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("x = 1\n")
    before = snapshot(root)
    for name, arguments in [("edit_file", {"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2",
                                           "dry_run": True}),
                            ("edit_file", {"path": "a.txt", "old_string": "absent", "new_string": "y"}),
                            ("write_file", {"path": "a.txt", "content": "z"}),
                            ("read_file", {"path": "a.txt"}),
                            ("delete_path", {"path": "missing"})]:
        outcome = call(name, **arguments)
        assert outcome.checkpoint is None, name
    assert snapshot(root) == before and not (root / ".codeward").exists()
    assert call("undo").errors[0].kind is ErrorKind.NOT_FOUND


def test_undo_restores_bytes_encoding_and_mode(root: Path, call: Call) -> None:
    original = codecs.BOM_UTF8 + "línea uno\r\nlínea dos\r\n".encode()
    (root / "w.txt").write_bytes(original)
    os.chmod(root / "w.txt", 0o640)
    assert not call("edit_file", path="w.txt", old_string="dos", new_string="tres").is_error
    assert not call("write_file", path="created.txt", content="new\n").is_error
    assert not call("undo", steps=2).is_error
    assert (root / "w.txt").read_bytes() == original and (root / "w.txt").stat().st_mode & 0o777 == 0o640
    assert not (root / "created.txt").exists()


def test_undo_refuses_over_changes_made_outside_codeward_and_force_is_recoverable(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("bee\n")
    assert not call("apply_patch", patch="--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
                                         "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-bee\n+BEE\n").is_error
    (root / "a.txt").write_text("my own edit\n")  # a person, an editor, a build
    before = snapshot(root)
    refused = call("undo")
    assert refused.is_error and refused.errors[0].kind is ErrorKind.CONFLICT
    assert "a.txt: now a file of 12 bytes, codeward left a file of 4 bytes" in refused.text
    assert "b.txt" not in refused.text and "force=true" in refused.errors[0].hint
    assert snapshot(root) == before
    preview = call("undo", dry_run=True)
    assert not preview.is_error and "Would undo" in preview.text and snapshot(root) == before
    forced = call("undo", force=True)
    assert not forced.is_error and "overwrote changes made outside codeward" in forced.text
    assert _tree(root) == {"a.txt": b"one\n", "b.txt": b"bee\n"}
    assert not call("undo", checkpoint=forced.checkpoint).is_error  # the forced undo was recorded: undoing it
    assert _tree(root) == {"a.txt": b"my own edit\n", "b.txt": b"BEE\n"}


def test_steps_checkpoints_redo_and_clear_errors(root: Path, call: Call) -> None:
    (root / "f.txt").write_text("0\n")
    ids = [call("write_file", path="f.txt", content=f"{n}\n", overwrite=True).checkpoint for n in (1, 2, 3, 4)]
    assert not call("undo").is_error and (root / "f.txt").read_text() == "3\n"
    assert not call("undo").is_error and (root / "f.txt").read_text() == "2\n"  # the next one back, not a redo
    back = call("undo", checkpoint=ids[0])
    assert not back.is_error and (root / "f.txt").read_text() == "0\n"
    undo_id = back.checkpoint
    again = call("undo", checkpoint=ids[1])
    assert again.is_error and f"already undone (by {undo_id})" in again.text and f"checkpoint={undo_id}" in again.text
    redo = call("undo", checkpoint=undo_id)
    assert not redo.is_error and (root / "f.txt").read_text() == "2\n"
    unknown = call("undo", checkpoint=999)
    assert unknown.is_error and unknown.errors[0].kind is ErrorKind.NOT_FOUND and "list_checkpoints" in unknown.text
    listed = call("list_checkpoints").text
    assert f"#{ids[3]}" in listed and "undone by" in listed and "reverted" in listed


def test_contents_too_big_to_keep_are_not_restored_without_force(root: Path, call: Call,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "MAX_FILE_BYTES", 10)
    (root / "big.txt").write_text("a long line of text\n")
    assert not call("write_file", path="big.txt", content="short\n", overwrite=True).is_error
    refused = call("undo")
    assert refused.is_error and "too big to keep" in refused.text and (root / "big.txt").read_text() == "short\n"


def test_the_store_is_bounded(root: Path, workspace: Workspace, catalog: Catalog,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "BLOB_GRACE_SECONDS", 0.0)
    ctx = ToolContext(workspace, services=Services(CheckpointSettings(keep=3)))
    (root / "gone").mkdir()
    assert not catalog.call("delete_path", {"path": "gone"}, ctx).is_error
    assert len(list((root / ".codeward/checkpoints/trash").iterdir())) == 1
    for n in range(8):
        catalog.call("write_file", {"path": "f.txt", "content": f"version {n}\n" * 50, "overwrite": True}, ctx)
    records = store_for(root, CheckpointSettings(keep=3)).records()
    assert [r.id for r in records] == [7, 8, 9]
    objects = [p for p in (root / ".codeward/checkpoints/objects").rglob("*") if p.is_file()]
    assert len(objects) == 3  # the earlier contents records 7, 8 and 9 replaced; the rest is collected
    assert not list((root / ".codeward/checkpoints/trash").iterdir())  # the pruned deletion's trash too
    assert not catalog.call("undo", {"steps": 3}, ctx).is_error
    assert (root / "f.txt").read_text() == "version 4\n" * 50
    ctx_off = ToolContext(workspace, services=Services(CheckpointSettings(enabled=False)))
    outcome = catalog.call("write_file", {"path": "g.txt", "content": "x"}, ctx_off)
    assert not outcome.is_error and outcome.checkpoint is None


def test_a_planted_store_link_is_never_written_through(root: Path, tmp_path: Path, call: Call) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "checkpoints").mkdir(parents=True)
    (root / ".codeward").mkdir()
    (root / ".codeward/checkpoints").symlink_to(elsewhere / "checkpoints", target_is_directory=True)
    (root / "a.txt").write_text("a\n")
    edited = call("edit_file", path="a.txt", old_string="a", new_string="b")
    assert not edited.is_error and (root / "a.txt").read_text() == "b\n"
    assert "no complete checkpoint" in edited.text and "link" in edited.text
    assert not any((elsewhere / "checkpoints").iterdir())


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_checkpoints_stay_out_of_git(root: Path, call: Call) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.txt").write_text("a\n")
    call("edit_file", path="a.txt", old_string="a", new_string="b")
    call("delete_path", path="a.txt")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    assert status.strip() == "?? .codeward/.gitignore"


def test_concurrent_calls_get_their_own_checkpoints(root: Path, call: Call) -> None:
    for n in range(8):
        (root / f"f{n}.txt").write_text("old\n")
    results: list[ToolOutcome] = []
    threads = [threading.Thread(target=lambda n=n: results.append(
        call("edit_file", path=f"f{n}.txt", old_string="old", new_string=f"new {n}"))) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.checkpoint for r in results if r.checkpoint) == list(range(1, 9))
    assert not call("undo", steps=8).is_error
    assert all((root / f"f{n}.txt").read_text() == "old\n" for n in range(8))


def test_undo_follows_files_through_moves_and_deletions_of_their_folders(root: Path, call: Call) -> None:
    (root / "pkg").mkdir()
    (root / "pkg/m.py").write_text("x = 1\n")
    assert not call("edit_file", path="pkg/m.py", old_string="x = 1", new_string="x = 2").is_error
    assert not call("move_path", source="pkg", destination="lib").is_error
    (root / "lib/m.py").write_text("x = 3  # by hand\n")
    refused = call("undo", steps=2)
    assert refused.is_error and "lib/m.py: now a file of 17 bytes" in refused.text
    assert not call("undo").is_error  # only the move: the hand edit travels back with the folder
    assert (root / "pkg/m.py").read_text() == "x = 3  # by hand\n"
    assert not call("write_file", path="pkg/m.py", content="x = 2\n", overwrite=True).is_error
    assert not call("delete_path", path="pkg", recursive=True).is_error
    assert not call("undo", steps=2).is_error  # the deletion, then the write, with no outside change between
    assert (root / "pkg/m.py").read_text() == "x = 3  # by hand\n"


def test_a_shell_runs_writes_come_back_as_a_checkpoint(root: Path, call: Call) -> None:
    (root / "keep.txt").write_text("precious\n")
    (root / "edit.txt").write_text("before\n")
    ran = call("run_shell", script="echo after > edit.txt && rm keep.txt && mkdir out && echo new > out/n.txt")
    assert not ran.is_error and ran.checkpoint is not None, ran.text
    assert not (root / "keep.txt").exists() and (root / "out/n.txt").read_text() == "new\n"
    undone = call("undo")
    assert not undone.is_error, undone.text
    assert _tree(root) == {"keep.txt": b"precious\n", "edit.txt": b"before\n"} and not (root / "out").exists()
