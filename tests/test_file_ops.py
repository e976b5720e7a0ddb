"""move_path, make_directory, delete_path and apply_patch through the catalog: gated, whole or nothing, undoable."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]


def _tree(root: Path) -> dict[str, bytes]:
    """The project's files, without codeward's own state folder."""
    return {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward")}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


# -- make_directory ----------------------------------------------------------------------------


def test_make_directory_creates_parents_and_is_idempotent(root: Path, call: Call) -> None:
    made = call("make_directory", path="a/b/c")
    assert not made.is_error and (root / "a/b/c").is_dir() and "3 folders" in made.text
    assert call("make_directory", path="a/b/c").text == "a/b/c/ already exists"
    refused = call("make_directory", path="x/y", parents=False)
    assert refused.is_error and "parents=true" in refused.text and not (root / "x").exists()
    (root / "file").write_text("x")
    blocked = call("make_directory", path="file")
    assert blocked.is_error and blocked.errors[0].kind is ErrorKind.CONFLICT


@pytest.mark.parametrize("path", ["../outside", "/tmp", ".git/hooks", "sub/.git", "deep/.env"])
def test_make_directory_refuses_gated_paths(root: Path, call: Call, path: str) -> None:
    (root / ".git").mkdir()
    before = snapshot(root)
    outcome = call("make_directory", path=path)
    assert outcome.is_error and outcome.errors[0].kind is ErrorKind.PERMISSION, outcome.text
    assert snapshot(root) == before and sorted(p.name for p in root.iterdir()) == [".git"]


# -- move_path ---------------------------------------------------------------------------------


def test_move_file_and_folder_then_undo(root: Path, call: Call) -> None:
    _write(root, {"src/a.py": "A\n", "docs/x.md": "X\n"})
    os.chmod(root / "src/a.py", 0o750)
    moved = call("move_path", source="src/a.py", destination="lib/pkg/a.py")
    assert not moved.is_error, moved.text
    assert (root / "lib/pkg/a.py").read_text() == "A\n" and not (root / "src/a.py").exists()
    assert (root / "lib/pkg/a.py").stat().st_mode & 0o777 == 0o750
    assert not call("move_path", source="docs", destination="manual").is_error
    assert (root / "manual/x.md").read_text() == "X\n"
    assert not call("undo", steps=2).is_error
    assert _tree(root) == {"src/a.py": b"A\n", "docs/x.md": b"X\n"}
    assert not (root / "lib").exists() and not (root / "manual").exists()


def test_move_refusals_change_nothing(root: Path, tmp_path: Path, call: Call) -> None:
    _write(root, {"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n", ".env": "SECRET=1\n"})
    (root / ".git").mkdir()
    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    before = snapshot(root)
    cases = [
        ({"source": "missing", "destination": "x"}, ErrorKind.NOT_FOUND, "does not exist"),
        ({"source": "a.txt", "destination": "b.txt"}, ErrorKind.CONFLICT, "overwrite=true"),
        ({"source": "a.txt", "destination": "dir"}, ErrorKind.CONFLICT, "dir/a.txt"),
        ({"source": "dir", "destination": "dir/sub"}, ErrorKind.INVALID_INPUT, "into itself"),
        ({"source": "a.txt", "destination": "a.txt"}, ErrorKind.INVALID_INPUT, "same path"),
        ({"source": "a.txt", "destination": "../escaped.txt"}, ErrorKind.PERMISSION, "outside the workspace"),
        ({"source": "a.txt", "destination": "out/escaped.txt"}, ErrorKind.PERMISSION, "outside the workspace"),
        ({"source": ".env", "destination": "public.txt"}, ErrorKind.PERMISSION, "blacklisted"),
        ({"source": "a.txt", "destination": ".git/hooks/pre-commit"}, ErrorKind.PERMISSION, ".git"),
        ({"source": "a.txt", "destination": "a.txt/inside"}, ErrorKind.CONFLICT, "is a file"),
        ({"source": ".", "destination": "elsewhere"}, ErrorKind.PERMISSION, "workspace root"),
    ]
    for arguments, kind, words in cases:
        outcome = call("move_path", **arguments)
        assert outcome.is_error and outcome.errors[0].kind is kind, (arguments, outcome.text)
        assert words in outcome.text, (arguments, outcome.text)
    assert snapshot(root) == before
    assert not list(tmp_path.glob("escaped*"))


def test_move_with_overwrite_keeps_the_replaced_file_recoverable(root: Path, call: Call) -> None:
    _write(root, {"new.txt": "new\n", "old.txt": "old\n"})
    assert not call("move_path", source="new.txt", destination="old.txt", overwrite=True).is_error
    assert _tree(root) == {"old.txt": b"new\n"}
    assert not call("undo").is_error
    assert _tree(root) == {"new.txt": b"new\n", "old.txt": b"old\n"}


def test_a_folder_holding_protected_files_is_not_moved(root: Path, call: Call) -> None:
    _write(root, {"pkg/app.py": "x\n", "pkg/.env": "TOKEN=1\n", "repo/.git/config": "[core]\n"})
    before = snapshot(root)
    for source in ("pkg", "repo"):
        outcome = call("move_path", source=source, destination=f"{source}2")
        assert outcome.is_error and outcome.errors[0].kind is ErrorKind.PERMISSION, outcome.text
    assert snapshot(root) == before


# -- delete_path -------------------------------------------------------------------------------


def test_delete_moves_to_the_trash_and_undo_restores_it_exactly(root: Path, call: Call) -> None:
    _write(root, {"keep.txt": "k\n", "build/out.bin": "x" * 5000, "build/sub/deep.txt": "d\n"})
    (root / "build/link").symlink_to("sub/deep.txt")
    os.chmod(root / "build/out.bin", 0o700)
    before = _tree(root)
    refused = call("delete_path", path="build")
    assert refused.is_error and "recursive=true" in refused.text and _tree(root) == before
    deleted = call("delete_path", path="build", recursive=True)
    assert not deleted.is_error and "undo restores it" in deleted.text and deleted.checkpoint is not None
    assert not (root / "build").exists()
    assert not call("delete_path", path="keep.txt").is_error
    assert not call("undo", steps=2).is_error
    assert _tree(root) == before
    assert os.readlink(root / "build/link") == "sub/deep.txt"
    assert (root / "build/out.bin").stat().st_mode & 0o777 == 0o700


def test_delete_refuses_roots_protected_trees_and_links_out(root: Path, tmp_path: Path, call: Call) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    _write(root, {"proj/.git/HEAD": "ref\n", "cfg/credentials.toml": "k=1\n", "a.txt": "a\n"})
    (root / "escape").symlink_to(outside)
    (root / "inner").symlink_to(root / "a.txt")
    before = snapshot(root)
    for path, words in [(".", "workspace root"), ("proj", "no tool may change"), ("cfg", "no tool may change"),
                        ("escape", "outside the workspace"), ("missing", "does not exist"),
                        ("../outside.txt", "outside the workspace")]:
        outcome = call("delete_path", path=path, recursive=True)
        assert outcome.is_error and words in outcome.text, (path, outcome.text)
    assert snapshot(root) == before and outside.read_text() == "precious\n"
    assert not call("delete_path", path="inner").is_error  # a link inside: the link goes, not its target
    assert (root / "a.txt").read_text() == "a\n" and not os.path.lexists(root / "inner")


def test_delete_refuses_when_no_recoverable_copy_can_be_kept(root: Path, tmp_path: Path, call: Call) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".codeward").symlink_to(elsewhere, target_is_directory=True)  # a cloned repository can ship this
    (root / "a.txt").write_text("a\n")
    outcome = call("delete_path", path="a.txt")
    assert outcome.is_error and "Nothing was deleted" in outcome.text
    assert (root / "a.txt").read_text() == "a\n" and not any(elsewhere.iterdir())
    edited = call("edit_file", path="a.txt", old_string="a", new_string="b")
    assert not edited.is_error and "no complete checkpoint" in edited.text and not any(elsewhere.iterdir())


# -- apply_patch -------------------------------------------------------------------------------

PATCH = (
    "diff --git a/src/app.py b/src/app.py\n"
    "--- a/src/app.py\n"
    "+++ b/src/app.py\n"
    "@@ -1,4 +1,4 @@\n"
    " def main():\n"
    "-    return 1\n"
    "+    return 2\n"
    " \n"  # blank context lines keep their leading space
    "\n"  # ... or lose it, as some tools write them
    "@@ -8,2 +8,3 @@ def helper():\n"
    " def other():\n"
    "     pass\n"
    "+# end\n"
    "--- /dev/null\n"
    "+++ b/src/new/mod.py\n"
    "@@ -0,0 +1,2 @@\n"
    "+VALUE = 1\n"
    '+NAME = "x"\n'
    "--- a/old.txt\n"
    "+++ /dev/null\n"
    "@@ -1,2 +0,0 @@\n"
    "-one\n"
    "-two\n"
)
APP = "def main():\n    return 1\n\n\ndef helper():\n    pass\n\ndef other():\n    pass\n"


def test_apply_patch_across_files_then_undo(root: Path, call: Call) -> None:
    (root / "src").mkdir()
    (root / "src/app.py").write_bytes(codecs.BOM_UTF8 + APP.replace("\n", "\r\n").encode())
    (root / "old.txt").write_text("one\ntwo\n")
    before = _tree(root)
    checked = call("apply_patch", patch=PATCH, dry_run=True)
    assert not checked.is_error and "dry run" in checked.text and _tree(root) == before
    applied = call("apply_patch", patch=PATCH)
    assert not applied.is_error, applied.text
    expected = APP.replace("return 1", "return 2") + "# end\n"
    assert (root / "src/app.py").read_bytes() == codecs.BOM_UTF8 + expected.replace("\n", "\r\n").encode()
    assert (root / "src/new/mod.py").read_text() == 'VALUE = 1\nNAME = "x"\n' and not (root / "old.txt").exists()
    assert applied.structured is not None and [f["action"] for f in applied.structured["files"]] == [
        "modify", "add", "delete"]
    assert not call("undo").is_error
    assert _tree(root) == before and not (root / "src/new").exists()


def test_apply_patch_tolerates_shifted_lines_but_not_changed_context(root: Path, call: Call) -> None:
    (root / "src").mkdir()
    body = "".join(f"line {number}\n" for number in range(1, 21))
    (root / "src/long.txt").write_text(body)
    middle = ("--- a/src/long.txt\n+++ b/src/long.txt\n@@ -9,5 +9,5 @@\n line 9\n line 10\n-line 11\n+LINE 11\n"
              " line 12\n line 13\n")
    (root / "src/long.txt").write_text("added 1\nadded 2\n" + body)  # the hunk is found two lines lower
    assert not call("apply_patch", patch=middle).is_error
    assert (root / "src/long.txt").read_text() == "added 1\nadded 2\n" + body.replace("line 11\n", "LINE 11\n")
    (root / "src/app.py").write_text("# header\n# more\n" + APP)
    (root / "old.txt").write_text("one\ntwo\n")
    before = snapshot(root)
    # As in git apply: a hunk that starts at line 1 must match at the start of the file, one without
    # context after its change at its end; it does not wander off to where the same lines stand.
    shifted = call("apply_patch", patch=PATCH)
    assert shifted.is_error and "hunk 1" in shifted.text and "must match at the start of the file" in shifted.text
    assert "line 1 should be 'def main():', the file has '# header'" in shifted.text
    (root / "src/app.py").write_text(APP.replace("def other():", "def renamed():"))
    refused = call("apply_patch", patch=PATCH)
    assert refused.is_error and refused.errors[0].kind is ErrorKind.CONFLICT
    assert "hunk 2" in refused.text and "'def other():'" in refused.text and "def renamed():" in refused.text
    assert "must match at the end of the file" in refused.text
    (root / "src/app.py").write_text("# header\n# more\n" + APP)
    assert snapshot(root) == before  # the first hunk applied in memory, but nothing was written


def test_a_failed_write_puts_back_what_was_written(root: Path, call: Call) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    _write(root, {"a.txt": "a\n", "locked/b.txt": "b\n"})
    os.chmod(root / "locked", 0o555)
    try:
        before = _tree(root)
        outcome = call("apply_patch", patch="--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n"
                                            "--- a/locked/b.txt\n+++ b/locked/b.txt\n@@ -1 +1 @@\n-b\n+B\n")
        assert outcome.is_error and "put back" in outcome.text
        assert _tree(root) == before
    finally:
        os.chmod(root / "locked", 0o755)
