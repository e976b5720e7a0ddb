"""File operations: move, make a folder, delete — through the gate, recorded, recoverable.

Every path passes the workspace gate for writing (a move writes both ends; a deletion writes
every entry of the tree it removes, so a folder holding a protected or blacklisted file, or git
metadata, is refused whole). Each operation works relative to descriptors of the folders it
changes, checked once open, so a folder swapped for a link meanwhile cannot redirect it.

Nothing is ever unlinked: ``delete_path`` moves what it deletes into the checkpoint store's
trash (a rename, instant for any size) and records it, so ``undo`` puts it back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Annotated

from pydantic import Field

from codeward.engines.checkpoints.journal import Journal, journal_of, trash_size
from codeward.engines.checkpoints.states import state_of
from codeward.engines.files.links import host_readlink, kernel_resolve, link_refusal
from codeward.engines.files.textfile import PathChanged, checked_dir
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.host_run import NEEDS_PERSON
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import HOST_RUN_HINT, Access, Workspace

MAX_TREE_ENTRIES = 200_000
"""A deletion checks every entry of the tree; past this many it asks for a narrower path."""



def operand(workspace: Workspace, raw: str, param: str) -> Result[Path]:
    """The path an operation acts on: resolved through the gate for writing; a link at the end of
    the path (whose target the gate accepted) is the link itself, not what it points to."""
    resolved = workspace.resolve(raw, Access.WRITE, param=param)
    if not resolved.ok:
        return resolved
    lexical = Path(os.path.normpath(raw if os.path.isabs(raw) else workspace.primary / raw))
    if os.path.islink(lexical):
        parent = workspace.resolve(str(lexical.parent), Access.WRITE, param=param)
        if not parent.ok:
            return parent
        return Result.success(parent.data / lexical.name)
    return resolved


def _journal(ctx: ToolContext, action: str) -> Result[Journal]:
    journal = journal_of(ctx)
    if journal is None:
        return Result.fail(ErrorKind.UNAVAILABLE, f"checkpoints are off, and {action} keeps a recoverable copy in one",
                           "Turn checkpoints on (they are on by default), or use run_shell.")
    return Result.success(journal)


def _in_root(workspace: Workspace, path: Path) -> bool:
    return path in workspace.roots


@tool(toolset="files", idempotent=True, title="Make a folder", write_paths=("path",),
      examples=[{"path": "src/inventory/reports"}])
def make_directory(
    ctx: ToolContext,
    path: str,
    parents: bool = True,
) -> Result[str]:
    """Create a folder (and its missing parents unless parents=false); one that exists already is fine."""
    resolved = ctx.workspace.resolve(path, Access.WRITE)
    if not resolved.ok:
        return resolved.cast("")
    real = resolved.data
    display = ctx.workspace.display(real)
    if os.path.isdir(real):
        return Result.success(f"{display}/ already exists")
    if os.path.lexists(real):
        return Result.fail(ErrorKind.CONFLICT, f"{display} exists and is not a folder",
                           "Pick another name, or move/delete the file first.", data="")
    missing = [folder for folder in (real, *real.parents) if not os.path.lexists(folder)]
    missing.reverse()
    if len(missing) > 1 and not parents:
        return Result.fail(ErrorKind.NOT_FOUND, f"the parent folder {ctx.workspace.display(missing[0])} does not exist",
                           "Pass parents=true to create it too.", data="")
    for folder in missing:
        gated = ctx.workspace.resolve(str(folder), Access.WRITE)
        if not gated.ok:
            return gated.cast("")
    made: list[Path] = []
    try:
        for folder in missing:
            if ctx.call.journal is not None:
                ctx.call.journal.before(folder)
            with checked_dir(folder.parent, ctx.workspace, folder.name) as fd:
                os.mkdir(folder.name, dir_fd=fd)
            made.append(folder)
    except (OSError, PathChanged) as exc:
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        return Result.fail(ErrorKind.PERMISSION, f"cannot create {display}: {exc.strerror or exc}",
                           "Check that no file stands where a folder should be, and the permissions.", data="")
    return Result.success(f"Created {display}/" + (f" ({len(made)} folders)" if len(made) > 1 else ""))


@tool(toolset="files", destructive=True, title="Move or rename", write_paths=("source", "destination"),
      examples=[{"source": "notes/ideas.md", "destination": "docs/ideas.md"}])
def move_path(
    ctx: ToolContext,
    source: str,
    destination: Annotated[str, Field(description="Its new path, not the folder to move it into.")],
    overwrite: bool = False,
) -> Result[str]:
    """Move or rename a file or folder (missing folders are made); overwrite replaces a file at destination,
    recoverably. undo moves it back."""
    journal = _journal(ctx, "move_path")
    if not journal.ok:
        return journal.cast("")
    found = operand(ctx.workspace, source, "source")
    if not found.ok:
        return found.cast("")
    src = found.data
    target = ctx.workspace.resolve(destination, Access.WRITE, param="destination")
    if not target.ok:
        return target.cast("")
    dst = target.data
    shown_src, shown_dst = ctx.workspace.display(src), ctx.workspace.display(dst)
    problem = _move_problem(ctx.workspace, src, dst, shown_src, shown_dst, overwrite)
    if problem is not None:
        return problem
    if os.path.isdir(src) and not os.path.islink(src):
        blocked = _protected_inside(ctx.workspace, src, dst)
    elif os.path.islink(src):
        link_problem = _moved_link_problem(ctx.workspace, src, dst, src, dst)
        blocked = Result.fail(ErrorKind.PERMISSION, f"moving the link {shown_src} to {shown_dst} would make it "
                              f"{link_problem}", "Nothing was moved. Point it elsewhere first, or move it where it "
                              "resolves inside the workspace.", data="") if link_problem else None
    else:
        blocked = None
    if blocked is not None:
        return blocked
    state = state_of(src)
    missing = [folder for folder in dst.parents if not os.path.lexists(folder)]
    try:
        for folder in reversed(missing):
            journal.data.before(folder)
            os.mkdir(folder)
        if os.path.lexists(dst):
            journal.data.before(dst)
        with checked_dir(src.parent, ctx.workspace, src.name) as src_fd, \
                checked_dir(dst.parent, ctx.workspace, dst.name) as dst_fd:
            os.rename(src.name, dst.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except (OSError, PathChanged) as exc:
        for folder in missing:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        if getattr(exc, "errno", None) == errno.EXDEV:
            return Result.fail(ErrorKind.UNAVAILABLE, f"{shown_src} and {shown_dst} are on different file systems",
                               "Nothing was moved. Copy it with write_file or run_shell instead.", data="")
        return Result.fail(ErrorKind.PERMISSION, f"cannot move {shown_src} to {shown_dst}: {exc.strerror or exc}",
                           "Nothing was moved. Check the permissions of both folders.", data="")
    journal.data.moved(src, dst, state)
    what = "folder" if state.kind == "dir" else "file" if state.kind == "file" else "link"
    return Result.success(f"Moved {what} {shown_src} to {shown_dst}.")


def _move_problem(workspace: Workspace, src: Path, dst: Path, shown_src: str, shown_dst: str, overwrite: bool
                  ) -> Result[str] | None:
    if not os.path.lexists(src):
        return Result.fail(ErrorKind.NOT_FOUND, f"source {shown_src!r} does not exist",
                           "List the folder (list_directory) to see what exists.", data="")
    if _in_root(workspace, src):
        return Result.fail(ErrorKind.PERMISSION, f"{shown_src} is a workspace root", "Move something inside it.",
                           data="")
    if src == dst:
        return Result.fail(ErrorKind.INVALID_INPUT, "source and destination are the same path",
                           "Give the new path as destination.", data="")
    if dst.is_relative_to(src) and os.path.isdir(src) and not os.path.islink(src):
        return Result.fail(ErrorKind.INVALID_INPUT, f"cannot move the folder {shown_src} into itself ({shown_dst})",
                           "Pick a destination outside it.", data="")
    if os.path.lexists(dst):
        if os.path.isdir(dst) and not os.path.islink(dst):
            return Result.fail(ErrorKind.CONFLICT, f"destination {shown_dst} is an existing folder",
                               f"Give the full new path, e.g. {shown_dst}/{src.name}, to move it into that folder.",
                               data="")
        if not overwrite:
            return Result.fail(ErrorKind.CONFLICT, f"destination {shown_dst} already exists",
                               "Pass overwrite=true to replace it (undo brings it back), or pick another name.",
                               data="")
        if os.path.isdir(src) and not os.path.islink(src):
            return Result.fail(ErrorKind.CONFLICT, f"cannot replace the file {shown_dst} with the folder {shown_src}",
                               "Delete the file first (delete_path), or pick another name.", data="")
    for parent in dst.parents:
        if os.path.lexists(parent) and not os.path.isdir(parent):
            return Result.fail(ErrorKind.CONFLICT, f"{workspace.display(parent)} is a file, so {shown_dst} cannot be "
                               "made", "Pick a destination whose folders are folders.", data="")
    return None


@tool(toolset="files", destructive=True, title="Delete (recoverably)", write_paths=("path",),
      examples=[{"path": "src/inventory/reports"}, {"path": "docs", "recursive": True}])
def delete_path(
    ctx: ToolContext,
    path: str,
    recursive: Annotated[bool, Field(description="Also a folder that is not empty.")] = False,
) -> Result[str]:
    """Delete a file or folder: it goes to the checkpoint trash, and undo puts it back."""
    journal = _journal(ctx, "delete_path")
    if not journal.ok:
        return journal.cast("")
    found = operand(ctx.workspace, path, "path")
    if not found.ok:
        return found.cast("")
    real = found.data
    display = ctx.workspace.display(real)
    if not os.path.lexists(real):
        return Result.fail(ErrorKind.NOT_FOUND, f"{display} does not exist",
                           "List the folder (list_directory) to see what exists.", data="")
    if _in_root(ctx.workspace, real):
        return Result.fail(ErrorKind.PERMISSION, f"{display} is a workspace root and cannot be deleted",
                           "Delete what is inside it, one path at a time.", data="")
    is_dir = os.path.isdir(real) and not os.path.islink(real)
    if is_dir:
        entries = os.listdir(real)
        if entries and not recursive:
            return Result.fail(ErrorKind.CONFLICT, f"{display} is a folder holding {len(entries)} "
                               f"entr{'y' if len(entries) == 1 else 'ies'}",
                               "Pass recursive=true to delete it with everything in it (undo restores it all).",
                               data="")
        blocked = _protected_inside(ctx.workspace, real)
        if blocked is not None:
            return blocked
    state = state_of(real)
    try:
        slot = journal.data.trash_slot(real)
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot keep a recoverable copy of {display}: {exc.strerror or exc}",
                           "Nothing was deleted. The checkpoint store (.codeward/checkpoints) must be writable.",
                           data="")
    item = slot / real.name
    try:
        with checked_dir(real.parent, ctx.workspace, real.name) as fd:
            os.rename(real.name, item, src_dir_fd=fd)
    except (OSError, PathChanged) as exc:
        with contextlib.suppress(OSError):
            os.rmdir(slot)
        if getattr(exc, "errno", None) == errno.EXDEV:
            return Result.fail(ErrorKind.UNAVAILABLE, f"{display} is on another file system than the checkpoint trash",
                               "Nothing was deleted; delete it with run_shell if you are sure.", data="")
        return Result.fail(ErrorKind.PERMISSION, f"cannot delete {display}: {exc.strerror or exc}",
                           "Nothing was deleted. Check the permissions of its folder.", data="")
    size = trash_size(item)
    journal.data.trashed(real, item, state, size)
    files = _count(item) if is_dir else 0
    what = (f"{display} ({size:,} bytes)" if not is_dir else f"folder {display}/ (empty)" if not files
            else f"folder {display}/ ({files} file{'s' if files != 1 else ''}, {size:,} bytes)")
    return Result.success(f"Deleted {what}; undo restores it.")


def _protected_inside(workspace: Workspace, top: Path, destination: Path | None = None) -> Result[str] | None:
    """An error when the tree under ``top`` holds anything no tool may write (checked entry by entry),
    else when it holds a host-run path — or would, moved to ``destination`` — that needs a person's
    approval (the error says so: ``source = "needs-person"``), else when a relative link in it would
    lead elsewhere from there (out of the roots, or onto a protected path)."""
    seen = 0
    needs: tuple[Path, str] | None = None
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            seen += 1
            if seen > MAX_TREE_ENTRIES:
                return Result.fail(ErrorKind.TOO_LARGE, f"{workspace.display(top)} holds more than "
                                   f"{MAX_TREE_ENTRIES:,} entries", "Work on a smaller folder.", data="")
            entry = Path(folder) / name
            info = os.lstat(entry)
            checked = (workspace.resolve(str(entry.parent), Access.WRITE) if stat.S_ISLNK(info.st_mode)
                       else workspace.resolve(str(entry), Access.WRITE))
            error = checked.errors[0] if not checked.ok else None
            if error is not None and error.source == NEEDS_PERSON:
                needs = needs or (entry, error.message)
                error = None
            reason = error.message if error is not None else workspace.blacklist_reason(entry)
            if reason:
                return Result.fail(ErrorKind.PERMISSION, f"{workspace.display(top)} holds "
                                   f"{workspace.display(entry)}, which no tool may change ({reason})",
                                   "Nothing was changed. Move or delete the other entries one by one.", data="")
            if destination is None:
                continue
            moved = destination / entry.relative_to(top)
            verdict = workspace.write_verdict(moved)
            if verdict.needs_person and not verdict.refused:
                needs = needs or (moved, verdict.needs_person)
            if stat.S_ISLNK(info.st_mode):
                problem = _moved_link_problem(workspace, entry, moved, top, destination)
                if problem:
                    return Result.fail(ErrorKind.PERMISSION, f"moving {workspace.display(top)} would make "
                                       f"{workspace.display(moved)} {problem}", "Nothing was moved. Move the link on "
                                       "its own, or change it first.", data="")
    if needs is not None:
        path, reason = needs
        return Result.fail(ErrorKind.PERMISSION, f"{workspace.display(top)} holds {workspace.display(path)}, which is "
                           f"{reason.removeprefix(f'path {str(path)!r} is ')}; changing it needs a person's approval",
                           HOST_RUN_HINT, data="", source=NEEDS_PERSON)
    return None


def _moved_link_problem(workspace: Workspace, link: Path, moved: Path, top: Path, destination: Path) -> str:
    """Why the link ``link``, moved with its folder ``top`` to ``destination`` (so to ``moved``), may
    not go there ("" when it may): a relative link resolves from its new folder, as the kernel does —
    through the tree as it will be — and must still land where links may (:func:`link_refusal`),
    unless it leads exactly where it led before."""
    pointed = os.readlink(link)
    if pointed.startswith("/"):
        return ""  # leads where it did, wherever it lies

    def after_move(path: str) -> str | None:
        if path == str(destination) or path.startswith(f"{destination}/"):
            return host_readlink(str(top) + path[len(str(destination)):])
        if path == str(top) or path.startswith(f"{top}/"):
            return None  # gone from there
        return host_readlink(path)

    reason = link_refusal(workspace, moved, pointed, after_move)
    if reason and kernel_resolve(os.path.join(moved.parent, pointed), after_move) != kernel_resolve(
            os.path.join(link.parent, pointed)):
        return reason
    return ""


def _count(path: Path) -> int:
    return sum(len(files) for _folder, _dirs, files in os.walk(path))
