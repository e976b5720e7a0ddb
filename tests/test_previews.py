"""Approval previews: the diff an edit would make (run on copies, the project untouched), the command a call runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.approval.desk import ask_data
from codeward.approval.policy import Approval, ApprovalPolicy, ApprovalRequest
from codeward.approval.previews import command_preview, preview_call
from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import chain
from codeward.kernel.context import ToolContext
from codeward.kernel.surface import CatalogSurface
from tests.conftest import snapshot

pytestmark = pytest.mark.anyio


def test_edits_are_previewed_as_diffs_without_touching_the_project(root: Path, catalog: Catalog,
                                                                   ctx: ToolContext) -> None:
    (root / "src").mkdir()
    (root / "src/app.py").write_text("def main():\n    return 1\n")
    before = snapshot(root)
    edit = preview_call(catalog, "edit_file", {"path": "src/app.py", "old_string": "return 1",
                                               "new_string": "return 2"}, ctx)
    assert edit is not None and edit.kind == "diff"
    assert "-    return 1" in edit.text and "+    return 2" in edit.text and "a/src/app.py" in edit.text
    created = preview_call(catalog, "write_file", {"path": "src/new.py", "content": "X = 1\n"}, ctx)
    assert created is not None and "/dev/null" in created.text and "+X = 1" in created.text
    ast_edit = preview_call(catalog, "py_update_definition", {"path": "src/app.py", "name": "main",
                                                               "new_content": "def main():\n    return 3\n"}, ctx)
    assert ast_edit is not None and "+    return 3" in ast_edit.text
    assert snapshot(root) == before


def test_commands_patches_and_refusals(root: Path, catalog: Catalog, ctx: ToolContext) -> None:
    shell = preview_call(catalog, "run_shell", {"script": "rm -rf build && make"}, ctx)
    assert shell is not None and (shell.kind, shell.text) == ("command", "rm -rf build && make")
    patch = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert preview_call(catalog, "apply_patch", {"patch": patch}, ctx) == command_preview({"patch": patch})
    assert preview_call(catalog, "edit_file", {"path": "../outside.py", "old_string": "a", "new_string": "b"},
                        ctx) is None
    assert preview_call(None, "git__commit", {"command": "git commit -m x"}, None) is not None


async def test_the_agent_asks_with_the_diff_and_a_denial_changes_nothing(root: Path, catalog: Catalog,
                                                                         ctx: ToolContext) -> None:
    (root / "a.txt").write_text("old\n")
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    surface = chain(CatalogSurface(catalog), [Approval(ApprovalPolicy(), deny, catalog=catalog)])
    outcome = await surface.call("edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"}, ctx)
    assert outcome.is_error and (root / "a.txt").read_text() == "old\n"
    request = asked[0]
    assert request.preview is not None and "+new" in request.preview.text
    assert "the change it would make" in request.details()
    data: dict[str, Any] = ask_data(request)
    assert data["preview"] == {"kind": "diff", "text": request.preview.text}


def test_moves_deletions_folders_and_the_executable_bit_are_previewed(root: Path, catalog: Catalog,
                                                                      ctx: ToolContext) -> None:
    (root / "tools").mkdir()
    (root / "tools/check.sh").write_text("#!/bin/sh\necho checking\n")
    (root / "tools/check.sh").chmod(0o755)
    (root / "tools/notes.txt").write_text("a note\n")
    (root / "tools/latest").symlink_to("check.sh")
    before = snapshot(root)
    moved = preview_call(catalog, "move_path", {"source": "tools/check.sh", "destination": ".githooks/pre-push"}, ctx)
    assert moved is not None and moved.kind == "diff"
    assert "deleted file mode 100755\n--- a/tools/check.sh" in moved.text
    assert "new file mode 100755\n--- /dev/null\n+++ b/.githooks/pre-push" in moved.text
    folder = preview_call(catalog, "move_path", {"source": "tools", "destination": "scripts"}, ctx)
    assert folder is not None and "+++ b/scripts/notes.txt" in folder.text and "--- a/tools/notes.txt" in folder.text
    assert "new file mode 120000\n--- /dev/null\n+++ b/scripts/latest\n@@ -0,0 +1 @@\n+check.sh" in folder.text
    deleted = preview_call(catalog, "delete_path", {"path": "tools", "recursive": True}, ctx)
    assert deleted is not None and "-a note" in deleted.text and "+++ /dev/null" in deleted.text
    assert snapshot(root) == before


def test_a_mode_change_alone_is_named_as_git_names_it(tmp_path: Path) -> None:
    from codeward.engines.files.tree_diff import tree_diff

    old, new = tmp_path / "old", tmp_path / "new"
    old.write_text("same\n")
    new.write_text("same\n")
    new.chmod(0o755)
    old.chmod(0o644)
    assert tree_diff(old, new, "hook") == "diff --git a/hook b/hook\nold mode 100644\nnew mode 100755\n"
    assert tree_diff(old, old, "hook") == ""
    (tmp_path / "blob").write_bytes(b"\x00\x01binary")
    assert "(binary file blob would change)" in tree_diff(tmp_path / "missing", tmp_path / "blob", "blob")
