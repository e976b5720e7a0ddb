"""``apply_patch``: a unified diff across several files, all of it or none of it.

The whole patch is checked before a byte is written: every path through the gate for
writing, every file readable as text, every hunk applying exactly where it should (see
:mod:`codeward.engines.files.unified_diff`), every file added absent and every file deleted matching.
Only then are the files written, each atomically, keeping its encoding, BOM and line endings;
if a write still fails (a permission), the files already written are put back, so the patch is
applied whole or not at all. The changes form one checkpoint: ``undo`` reverts the patch.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from codeward.engines.checkpoints.states import state_of
from codeward.engines.files import unified_diff
from codeward.engines.files.textfile import PathChanged, TextFile, atomic_write, checked_dir, read_checked, read_text
from codeward.engines.files.unified_diff import FilePatch
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.repository_guard import COMPLETED, RepositoryGuard
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import POLICY_HINT, Access

MAX_PATCH_FILES = 500


class PatchedFile(BaseModel):
    path: str
    action: str = Field(description="modify, add, delete or rename.")
    added: int
    removed: int
    renamed_from: str = ""


class PatchReport(BaseModel):
    applied: bool
    files: list[PatchedFile]

    def render(self) -> str:
        verb = "Applied" if self.applied else "The patch applies cleanly (dry run, nothing written)"
        head = f"{verb}: {len(self.files)} file{'s' if len(self.files) != 1 else ''}" if self.applied else verb + ":"
        lines = [head]
        for entry in self.files:
            moved = f" (from {entry.renamed_from})" if entry.renamed_from else ""
            lines.append(f"  {entry.action:<7} {entry.path}{moved}  +{entry.added} -{entry.removed}")
        return "\n".join(lines)


@dataclass
class _Planned:
    """One file's outcome, computed before anything is written."""

    patch: FilePatch
    target: Path
    source: Path | None
    original: TextFile | None
    new_text: str | None


@tool(toolset="files", destructive=True, title="Apply a unified diff", output=PatchReport,
      examples=[{"patch": "--- a/README.md\n+++ b/README.md\n@@ -11,3 +11,4 @@\n"
                          " - `native/` — a ring buffer in C and a matrix in C++\n"
                          " - `web/` — the shop's cart in JavaScript\n - `tests/` — the store's tests (pytest)\n"
                          "+- `notes/` — the to-do list and the suppliers\n"
                          "--- /dev/null\n+++ b/notes/suppliers.md\n@@ -0,0 +1,2 @@\n+# Suppliers\n"
                          "+- the bakery delivers on Mondays\n"}])
def apply_patch(
    ctx: ToolContext,
    patch: Annotated[str, Field(description="As git diff prints it; /dev/null as the old name adds a file, as the "
                                            "new one deletes it.")],
    dry_run: bool = False,
) -> Result[PatchReport | None]:
    """Apply a unified diff to one or more files, all or nothing: a hunk whose context does not match
    refuses the whole patch, saying which. For several edits in one call."""
    parsed = unified_diff.parse(patch)
    if not parsed.ok:
        return parsed.cast(None)
    if len(parsed.data) > MAX_PATCH_FILES:
        return Result.fail(ErrorKind.TOO_LARGE, f"the patch changes {len(parsed.data)} files; the most is "
                           f"{MAX_PATCH_FILES}", "Split it into several patches.")
    planned: list[_Planned] = []
    seen: set[Path] = set()
    for file_patch in parsed.data:
        step = _plan(ctx, file_patch)
        if not step.ok:
            return step.cast(None)
        for path in (step.data.target, step.data.source):
            if path is not None:
                if path in seen:
                    return Result.fail(ErrorKind.INVALID_INPUT, f"the patch changes {ctx.workspace.display(path)} "
                                       "more than once", "Give each file one header with all of its hunks.")
                seen.add(path)
        planned.append(step.data)
    # the joint check and the writes, with no repository-making write between (in any codeward process)
    with ctx.call.hold_writes(seen, workspace=ctx.workspace) as guard:
        return _apply_planned(ctx, planned, dry_run, guard)


def _apply_planned(ctx: ToolContext, planned: list[_Planned], dry_run: bool, guard: RepositoryGuard | None
                   ) -> Result[PatchReport | None]:
    joint = ctx.workspace.joint_write_protection(step.target for step in planned)
    if joint:
        return Result.fail(ErrorKind.PERMISSION, f"the patch's files together are {joint}; tools may not write it",
                           POLICY_HINT)
    report = PatchReport(applied=not dry_run, files=[
        PatchedFile(path=ctx.workspace.display(step.target), action=step.patch.action, added=step.patch.added,
                    removed=step.patch.removed,
                    renamed_from=ctx.workspace.display(step.source) if step.source is not None else "")
        for step in planned])
    if dry_run:
        return Result.success(report)
    written = _write_all(ctx, planned, guard)
    if not written.ok:
        return written.cast(None)
    return Result.success(report)


def _plan(ctx: ToolContext, file_patch: FilePatch) -> Result[_Planned]:
    workspace = ctx.workspace
    name = file_patch.path
    if not name:
        return Result.fail(ErrorKind.INVALID_INPUT, "a file of the patch has /dev/null as both names",
                           "Each file needs a real old or new name.")
    resolved = workspace.resolve(name, Access.WRITE, param=f"patch path {name!r}")
    if not resolved.ok:
        return _failed(resolved)
    target = resolved.data
    shown = workspace.display(target)
    source: Path | None = None
    if file_patch.action == "modify" and file_patch.only_inserts_at_start and not os.path.lexists(target):
        file_patch = replace(file_patch, action="add")
    if file_patch.action == "add":
        if os.path.lexists(target):
            return Result.fail(ErrorKind.CONFLICT, f"the patch adds {shown}, which already exists",
                               "Make the diff against the current file (a modification), or pick another name.")
        text = "".join(line for hunk in file_patch.hunks for line in hunk.new)
        return Result.success(_Planned(file_patch, target, None, None, text))
    base = target
    if file_patch.action == "rename":
        moved_from = workspace.resolve(file_patch.source, Access.WRITE, param=f"patch path {file_patch.source!r}")
        if not moved_from.ok:
            return _failed(moved_from)
        source = base = moved_from.data
        if os.path.lexists(target):
            return Result.fail(ErrorKind.CONFLICT, f"the patch renames {workspace.display(source)} to {shown}, "
                               "which already exists", "Pick a new name that is free.")
    loaded = read_text(base, workspace.display(base), workspace)
    if not loaded.ok:
        return _failed(loaded)
    original = loaded.data
    # The file's bytes as they are, for a patch whose lines carry their endings (git diff's); a file whose
    # lines all end CRLF is also read as LF text, for a patch that lost its CRs (typed, or sent as JSON).
    exact = original if original.newline == "\n" else replace(
        original, text=original.text.replace("\n", original.newline), newline="\n")
    readings = [(exact, file_patch.hunks)]
    if exact is not original:
        readings.append((original, [hunk.without_cr() for hunk in file_patch.hunks]))
    if file_patch.action == "delete":
        for template, hunks in readings:
            if not file_patch.hunks or "".join(line for hunk in hunks for line in hunk.old) == template.text:
                return Result.success(_Planned(file_patch, target, None, original, None))
        return Result.fail(ErrorKind.CONFLICT, f"the patch deletes {shown}, but its contents differ from the "
                           "patch's", "Read the file again and make the diff against what it holds now.")
    first_failure: Result[str] | None = None
    for template, hunks in readings:
        applied = unified_diff.apply(template.text, hunks, workspace.display(base))
        if applied.ok:
            return Result.success(_Planned(file_patch, target, source, template, applied.data))
        first_failure = first_failure or applied
    assert first_failure is not None
    return _failed(first_failure if _carries_cr(file_patch) else applied)


def _carries_cr(file_patch: FilePatch) -> bool:
    """Whether the patch's lines end CRLF (then the exact reading's failure is the one to tell)."""
    return any(line.endswith("\r\n") for hunk in file_patch.hunks for line in (*hunk.old, *hunk.new))


def _failed(result: Result[Any]) -> Result[Any]:
    """A failed result, retyped for the caller (its data is never read)."""
    return result.cast(None)


def _write_all(ctx: ToolContext, planned: list[_Planned], guard: RepositoryGuard | None = None) -> Result[None]:
    """Write every planned file; on a failure — or when the files, with another writer's, made a
    repository (``guard``) — put back what was already written."""
    journal = ctx.call.journal
    undo: list[tuple[Path, bytes | None]] = []  # (path, bytes before; None: did not exist)
    for step in planned:
        touched = [step.target] if step.source is None else [step.source, step.target]
        for path in touched:
            if journal is not None:
                journal.before(path)
            before = read_checked(path, str(path), ctx.workspace, limit=1 << 31, reader="apply_patch", hint="")
            undo.append((path, before.data if before.ok else None))
        try:
            for folder in reversed([parent for parent in step.target.parents if not os.path.lexists(parent)]):
                if journal is not None:
                    journal.before(folder)
                undo.append((folder, None))
                os.mkdir(folder)
            _write_one(ctx, step)
        except (OSError, PathChanged) as exc:
            _roll_back(ctx, undo)
            shown = ctx.workspace.display(step.target)
            return Result.fail(ErrorKind.PERMISSION, f"cannot write {shown}: {exc.strerror or exc}",
                               "Nothing was changed: the files already written were put back. Check permissions.")
    completed = guard.completed() if guard is not None else None
    if completed is not None:
        _roll_back(ctx, undo)
        return Result.fail(ErrorKind.PERMISSION, f"{COMPLETED} ({ctx.workspace.git_dir_text(completed)}); the patch "
                           "was taken back whole", POLICY_HINT)
    return Result.success(None)


def _write_one(ctx: ToolContext, step: _Planned) -> None:
    action = step.patch.action
    if action == "delete":
        with checked_dir(step.target.parent, ctx.workspace, step.target.name) as fd:
            os.unlink(step.target.name, dir_fd=fd)  # its bytes are in the checkpoint (journal.before)
        return
    assert step.new_text is not None
    template = step.original or TextFile("")
    atomic_write(step.target, template.encode(step.new_text), ctx.workspace)
    if step.source is not None:
        mode = state_of(step.source).mode
        os.chmod(step.target, mode)
        with checked_dir(step.source.parent, ctx.workspace, step.source.name) as fd:
            os.unlink(step.source.name, dir_fd=fd)


def _roll_back(ctx: ToolContext, undo: list[tuple[Path, bytes | None]]) -> None:
    for path, data in reversed(undo):
        with contextlib.suppress(OSError, PathChanged):
            if data is None:
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                elif os.path.lexists(path):
                    os.unlink(path)
            else:
                atomic_write(path, data, ctx.workspace)
