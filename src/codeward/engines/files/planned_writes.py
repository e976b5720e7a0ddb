"""Several text files changed as one edit: shown as a diff, or written all or nothing as one checkpoint.

A rename or a move across files plans every file's new text first (nothing touches the disk
while planning); :func:`write_all` then takes the write locks of all of them, refuses when
together they would be something no tool may write, records each in the call's checkpoint
journal and writes them one by one, putting back those already written if a later one fails.
``undo`` reverts the whole change.
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.engines.files.textfile import PathChanged, TextFile, atomic_write, read_text, write_text
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import POLICY_HINT, Access, Workspace


@dataclass(frozen=True)
class PlannedWrite:
    """One file's new text, planned before anything is written."""

    real: Path
    original: TextFile | None
    """How the file was read (its encoding, BOM and line endings are kept); ``None`` for a new file."""
    new_text: str
    display: str
    template: TextFile | None = None
    """For a new file: whose encoding and line endings to use (default UTF-8, ``\\n``)."""


def load_for_writing(workspace: Workspace, real: Path, what: str) -> Result[tuple[Path, str, TextFile]]:
    """A file a change will write: resolved for writing and read (its encoding remembered), or why not.

    ``what`` names the change for the refusal ("the rename"). A host-run file's refusal keeps its
    ``source``, so the approval layer can still ask a person and run the call again.
    """
    display = workspace.display(real)
    resolved = workspace.resolve(str(real), Access.WRITE)
    if not resolved.ok:
        error = resolved.errors[0]
        return Result.fail(ErrorKind.PERMISSION, f"{what} would change {display}, which may not be written: "
                           f"{error.message}", f"Nothing was changed. {error.hint}".strip(), source=error.source)
    loaded = read_text(resolved.data, display, workspace)
    if not loaded.ok:
        failed: Result[Any] = loaded.cast(None)
        return failed
    return Result.success((resolved.data, display, loaded.data))


def unified_diff(planned: Sequence[PlannedWrite]) -> str:
    """One unified diff of every planned file (``/dev/null`` as the old name of a new one)."""
    parts: list[str] = []
    for step in planned:
        before = step.original.text if step.original is not None else ""
        old_name = f"a/{step.display}" if step.original is not None else "/dev/null"
        parts.append("".join(difflib.unified_diff(before.splitlines(keepends=True),
                                                  step.new_text.splitlines(keepends=True),
                                                  old_name, f"b/{step.display}")))
    return "".join(parts)


def write_all(ctx: ToolContext, planned: Sequence[PlannedWrite], *, held: Collection[Path] = ()) -> Result[None]:
    """Write every planned file, all or nothing, each recorded in the call's checkpoint.

    ``held``: the files whose write locks the call holds already (those its path arguments name).
    """
    changed = [step for step in planned if step.original is None or step.new_text != step.original.text]
    with ctx.call.hold_writes((step.real for step in changed if step.real not in held), workspace=ctx.workspace):
        joint = ctx.workspace.joint_write_protection(step.real for step in changed)
        if joint:
            return Result.fail(ErrorKind.PERMISSION, f"the files of this change together are {joint}; tools may "
                               "not write it", POLICY_HINT)
        return _write_in_order(ctx, changed)


def _write_in_order(ctx: ToolContext, planned: Sequence[PlannedWrite]) -> Result[None]:
    journal = ctx.call.journal
    done: list[tuple[Path, bytes | None]] = []
    for step in planned:
        created: list[Path] = []
        if step.original is None:
            created = [folder for folder in step.real.parents if not os.path.lexists(folder)]
            try:
                for folder in reversed(created):
                    if journal is not None:
                        journal.before(folder)
                    os.mkdir(folder)
            except OSError as exc:
                _put_back(ctx, done, created)
                return Result.fail(ErrorKind.PERMISSION, f"cannot create the folder for {step.display}: "
                                   f"{exc.strerror or exc}", "Nothing was changed.")
        template = step.original or step.template or TextFile("")
        written = write_text(step.real, template, step.new_text, step.display, ctx.workspace, journal=journal)
        if not written.ok:
            _put_back(ctx, done, created)
            return Result.fail(written.errors[0].kind, written.errors[0].message,
                               "Nothing was changed: the files already written were put back.")
        done.extend((folder, None) for folder in reversed(created))  # undone after the file, nearest first
        done.append((step.real, step.original.encode() if step.original is not None else None))
    return Result.success(None)


def _put_back(ctx: ToolContext, done: list[tuple[Path, bytes | None]], created: list[Path]) -> None:
    """Restore the files already written (remove those that were new, and their new folders)."""
    for folder in created:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    for path, data in reversed(done):
        with contextlib.suppress(OSError, PathChanged):
            if data is not None:
                atomic_write(path, data, ctx.workspace)
            elif os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            elif os.path.lexists(path):
                os.unlink(path)
