"""A change to several text files, planned whole, shown as one diff, written all or nothing.

Renames (``py_rename_symbol``, ``rename_symbol``) plan the new text of every file first; only
when every file may be written (each through the workspace's write gate, and all of them
together) are they written, each atomically and keeping its encoding, BOM and line endings,
recorded in the call's checkpoint (``undo`` reverts them as one change). A write that still fails
puts back the files already written.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.code.textfile import PathChanged, TextFile, atomic_write, read_text, write_text
from codeward.result import ErrorKind, Result
from codeward.workspace import POLICY_HINT, Access, Workspace

if TYPE_CHECKING:
    from codeward.checkpoints.journal import Journal


@dataclass(frozen=True)
class PlannedFile:
    """One file's new text, with what it held when planned."""

    real: Path
    display: str
    original: TextFile
    new_text: str


def load_for_writing(workspace: Workspace, real: Path, what: str) -> Result[tuple[Path, str, TextFile]]:
    """A file a change will write: resolved for writing, read (its encoding remembered), or why not.

    ``what`` says which change it is, for the refusal ("the rename").
    """
    display = workspace.display(real)
    resolved = workspace.resolve(str(real), Access.WRITE)
    if not resolved.ok:
        return Result.fail(ErrorKind.PERMISSION, f"{what} would change {display}, which may not be written: "
                           f"{resolved.errors[0].message}", "Nothing was changed.")
    loaded = read_text(resolved.data, display, workspace)
    if not loaded.ok:
        failed: Result[Any] = loaded.cast(None)
        return failed
    return Result.success((resolved.data, display, loaded.data))


def joint_refusal(workspace: Workspace, planned: Iterable[PlannedFile]) -> Result[None]:
    """Why the files may not be written together (see :meth:`Workspace.joint_write_protection`)."""
    joint = workspace.joint_write_protection(step.real for step in planned)
    if joint:
        return Result.fail(ErrorKind.PERMISSION, f"the change's files together are {joint}; tools may not write it",
                           POLICY_HINT)
    return Result.success(None)


def unified_diff(planned: Iterable[PlannedFile]) -> str:
    """The change as one unified diff (``a/``/``b/`` paths as shown to the caller)."""
    return "".join("".join(difflib.unified_diff(step.original.text.splitlines(keepends=True),
                                                step.new_text.splitlines(keepends=True),
                                                f"a/{step.display}", f"b/{step.display}"))
                   for step in planned)


def write_all(workspace: Workspace, planned: list[PlannedFile], journal: Journal | None) -> Result[None]:
    """Write every file; on a failure put back those already written (all or nothing)."""
    done: list[tuple[Path, bytes]] = []
    for step in planned:
        before = step.original.encode()
        written = write_text(step.real, step.original, step.new_text, step.display, workspace, journal=journal)
        if not written.ok:
            for path, data in reversed(done):
                with contextlib.suppress(OSError, PathChanged):
                    atomic_write(path, data, workspace)
            return Result.fail(written.errors[0].kind, f"cannot write {step.display}: {written.errors[0].message}",
                               "Nothing was changed: the files already written were put back.")
        done.append((step.real, before))
    return Result.success(None)
