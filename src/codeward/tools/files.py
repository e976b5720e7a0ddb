"""File tools: read, list, search, slice, edit and tree — every path through the Workspace."""

from __future__ import annotations

import contextlib
import difflib
import itertools
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, TypeVar

import pathspec
from pydantic import Field

from codeward.engines.files.textfile import TextFile, read_text, read_text_plain, split_lines, write_text
from codeward.engines.files.walk import Entry, walk
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result, quoted
from codeward.kernel.workspace import Access, Workspace

MAX_LISTED = 2000
MAX_MATCHES = 1000
NOTE_ROOM = 400
"""Characters of the output cap kept for a page's notes (where to continue, the encoding)."""
IncludeIgnored = Annotated[bool, Field(description="Also what .gitignore excludes.")]
T = TypeVar("T")


def _resolve_file(ctx: ToolContext, path: str, access: Access = Access.READ) -> Result[tuple[Path, TextFile]]:
    if access is Access.READ and (plain := read_text_plain(ctx.workspace, path)) is not None:
        return Result.success(plain)  # the common case, checked on the open descriptor
    resolved = ctx.workspace.resolve(path, access)
    if not resolved.ok:
        return resolved.cast((resolved.data, TextFile("")))
    loaded = read_text(resolved.data, ctx.workspace.display(resolved.data), ctx.workspace)
    return loaded.cast((resolved.data, loaded.data)) if not loaded.ok else Result.success(
        (resolved.data, loaded.data))


def _resolve_dir(ctx: ToolContext, path: str) -> Result[Path]:
    resolved = ctx.workspace.resolve(path)
    if not resolved.ok:
        return resolved
    display = ctx.workspace.display(resolved.data)
    if not resolved.data.exists():
        return Result.fail(ErrorKind.NOT_FOUND, f"directory not found: {display}",
                           "List the parent directory to see what exists.", data=resolved.data)
    if not resolved.data.is_dir():
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a file, not a directory",
                           "Use read_file for files.", data=resolved.data)
    return resolved


def _line_range_error(start: int, end: int, total: int, display: str) -> Result[str] | None:
    if start < 1:
        return Result.fail(ErrorKind.INVALID_INPUT, f"start_line must be 1 or more, got {start}", data="")
    if end < start - 1:
        return Result.fail(ErrorKind.INVALID_INPUT, f"end_line ({end}) is before start_line ({start})",
                           "Give end_line >= start_line (or start_line - 1 to insert without replacing).",
                           data="")
    if start > total + 1 or end > total:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"lines {start}-{end} are past the end of {display}, which has {total} lines",
                           f"Use line numbers between 1 and {total}.", data="")
    return None


@tool(toolset="files", read_only=True, quick=True, title="Read a file",
      examples=[{"path": "README.md", "limit": 20}])
def read_file(
    ctx: ToolContext,
    path: str,
    offset: Annotated[int, Field(ge=1)] = 1,
    limit: Annotated[int | None, Field(ge=1)] = None,
) -> Result[str]:
    """Read a text file (any encoding, named in a note); a long one comes in pages: offset (first line) and
    limit (lines), and the result says where to continue."""
    loaded = _resolve_file(ctx, path)
    if not loaded.ok:
        return loaded.cast("")
    _real, text_file = loaded.data
    notes = [note] if (note := text_file.encoding_note()) else []
    budget = _page_budget(ctx)
    if offset == 1 and limit is None and len(text_file.text) <= budget:
        return Result.success(text_file.text, *notes)
    lines = split_lines(text_file.text)
    total = len(lines)
    if offset > max(total, 1):
        return Result.fail(ErrorKind.INVALID_INPUT, f"offset {offset} is past the end ({total} lines)",
                           f"Use an offset between 1 and {total}.", data="")
    stop = total if limit is None else min(total, offset - 1 + limit)
    body, end, cut = _page(lines, offset - 1, stop, budget)
    if cut:
        notes.append(cut + f" Continue with offset={end + 1}.]")
    elif end < total:
        capped = "; the page stops at the output cap" if end < stop else ""
        notes.append(f"[lines {offset}-{end} of {total}{capped}; continue with offset={end + 1}]")
    return Result.success(body, *notes)


def _page_budget(ctx: ToolContext) -> int:
    """Characters of file text one answer may hold: the output cap, less room for the notes."""
    cap = ctx.settings.output_cap_chars
    return max(cap - NOTE_ROOM, cap // 2)


def _page(lines: list[str], first: int, stop: int, budget: int) -> tuple[str, int, str]:
    """The lines ``first``..``stop``-1 that fit in ``budget`` characters, cut after a whole line.

    Returns the text, the index after the last line given, and a note (unclosed, "" when none)
    for the one case a line cannot be given whole: the first line alone is longer than the page.
    """
    size, end = 0, first
    while end < stop and size + len(lines[end]) <= budget:
        size += len(lines[end])
        end += 1
    if end > first or stop <= first:
        return "".join(lines[first:end]), end, ""
    line = lines[first]
    return line[:budget], first + 1, (f"[line {first + 1} is {len(line):,} characters, more than one answer holds: "
                                      f"showing its first {budget:,} (search_text finds text inside it).")


@tool(toolset="files", write_paths=("path",), title="Create or overwrite a file",
      examples=[{"path": "notes/ideas.md", "content": "# Ideas\n- a barcode scanner for the stock count\n"}])
def write_file(
    ctx: ToolContext,
    path: str,
    content: str,
    overwrite: bool = False,
) -> Result[str]:
    """Create a file (and its folders). An existing file is replaced only with overwrite; to change part of
    one, use edit_file."""
    resolved = ctx.workspace.resolve(path, Access.WRITE)
    if not resolved.ok:
        return resolved.cast("")
    real = resolved.data
    display = ctx.workspace.display(real)
    original = TextFile("")
    if real.exists():
        if real.is_dir():
            return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is a directory", data="")
        if not overwrite:
            return Result.fail(ErrorKind.CONFLICT, f"{display} already exists",
                               "Use edit_file or set_file_slice to change it, or pass overwrite=true.", data="")
        loaded = read_text(real, display)
        if loaded.ok:
            original = loaded.data
    created = [folder for folder in (real.parent, *real.parent.parents) if not folder.exists()]
    if ctx.call.journal is not None:
        for folder in reversed(created):  # undo removes the folders this call made, as it removes the file
            ctx.call.journal.before(folder)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_folders(created)
        return Result.fail(ErrorKind.PERMISSION, f"cannot create the folder for {display}: {exc.strerror}",
                           "Check that no file stands where a folder of the path should be, and the permissions.",
                           data="")
    written = write_text(real, original, content, display, ctx.workspace)
    if not written.ok:
        _remove_folders(created)  # a refused write leaves the disk as it was
        return written.cast("")
    return Result.success(f"Wrote {display} ({len(split_lines(content))} lines).")


@tool(toolset="files", read_only=True, title="List a directory",
      examples=[{"path": "src/inventory"}])
def list_directory(ctx: ToolContext, path: str = ".") -> Result[str]:
    """One folder's entries: [dir]/[file]/[link] name size, with what .gitignore excludes marked (get_tree shows
    several levels)."""
    resolved = _resolve_dir(ctx, path)
    if not resolved.ok:
        return resolved.cast("")
    entries, more = _at_most(walk(ctx.workspace, resolved.data, max_depth=1, mark_ignored=True), MAX_LISTED)
    rows = [_row(ctx.workspace, entry) for entry in entries]
    display = ctx.workspace.display(resolved.data)
    if not rows:
        return Result.success(f"{display}/ is empty")
    head = f"{display}/ ({'more than ' if more else ''}{len(rows)} entries)"
    if more:
        rows.append(f"[... more than {MAX_LISTED} entries; use search_files with a pattern to narrow ...]")
    return Result.success("\n".join([head, *rows]))


def _row(workspace: Workspace, entry: Entry) -> str:
    """One listing row: ``[dir]  name/``, ``[file] name  size``, ``[link] name -> target``."""
    mark = "  (ignored)" if entry.ignored else ""
    if entry.is_link:
        target = entry.path.resolve(strict=False)
        if not os.path.lexists(target):
            return f"[link] {entry.rel} -> {workspace.display(target)}  (missing){mark}"
        return f"[link] {entry.rel} -> {workspace.display(target)}{'/' if entry.is_dir else ''}{mark}"
    if entry.is_dir:
        return f"[dir]  {entry.rel}/{mark}"
    try:
        size = entry.path.stat().st_size
    except OSError:
        size = 0
    return f"[file] {entry.rel}  {size}{mark}"


def _at_most(items: Iterable[T], limit: int) -> tuple[list[T], bool]:
    """The first ``limit`` items, and whether there were more (one more is read to know)."""
    taken = list(itertools.islice(items, limit + 1))
    return taken[:limit], len(taken) > limit


@tool(toolset="files", read_only=True, title="Find files by glob",
      examples=[{"path": ".", "pattern": "*.py"}])
def search_files(
    ctx: ToolContext,
    path: str,
    pattern: Annotated[str, Field(description="* within a name, ** across "
                                              "folders; a pattern without / matches names at any depth.")],
    include_ignored: IncludeIgnored = False,
) -> Result[str]:
    """Find files below path by a glob of their path (.gitignore honoured)."""
    resolved = _resolve_dir(ctx, path)
    if not resolved.ok:
        return resolved.cast("")
    if not pattern.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "pattern is empty", "Give a glob such as '*.py'.", data="")
    spec = pathspec.PathSpec.from_lines("gitignore", [pattern])
    entries = walk(ctx.workspace, resolved.data, gitignore=not include_ignored, include_dirs=False)
    matches, more = _at_most(_matching(ctx, entries, spec), MAX_MATCHES)
    if not matches:
        return Result.success(f"no files match {quoted(pattern)} under {ctx.workspace.display(resolved.data)}")
    if more:
        return Result.success("\n".join(matches), f"[stopped at {MAX_MATCHES} matches; use a narrower pattern or path]")
    return Result.success("\n".join(matches))


def _matching(ctx: ToolContext, entries: Iterator[Entry], spec: pathspec.PathSpec) -> Iterator[str]:  # type: ignore[type-arg]
    for scanned, entry in enumerate(entries, 1):
        if scanned % 1000 == 0:
            ctx.progress(scanned, None, f"scanned {scanned} files")
        if spec.match_file(entry.rel):
            yield ctx.workspace.display(entry.path)


@tool(toolset="files", read_only=True, quick=True, title="Read a line range",
      examples=[{"path": "src/inventory/models.py", "start_line": 12, "end_line": 18}])
def get_file_slice(
    ctx: ToolContext,
    path: str,
    start_line: int,
    end_line: int,
) -> Result[str]:
    """Lines start_line..end_line of a text file (1-based, inclusive)."""
    loaded = _resolve_file(ctx, path)
    if not loaded.ok:
        return loaded.cast("")
    real, text_file = loaded.data
    lines = split_lines(text_file.text)
    problem = _line_range_error(start_line, end_line, len(lines), ctx.workspace.display(real))
    if problem:
        return problem
    notes = [note] if (note := text_file.encoding_note()) else []
    body, end, cut = _page(lines, start_line - 1, end_line, _page_budget(ctx))
    if cut:
        notes.append(cut + (f" Continue with start_line={end + 1}.]" if end < end_line else "]"))
    elif end < end_line:
        notes.append(f"[lines {start_line}-{end} of the {start_line}-{end_line} asked: the answer stops at the output "
                     f"cap; continue with start_line={end + 1}]")
    return Result.success(body, *notes)


@tool(toolset="files", title="Replace a line range",
      examples=[
          {
              "path": "notes/todo.md",
              "start_line": 2,
              "end_line": 2,
              "new_content": "- [x] count the stock before the audit",
          },
      ])
def set_file_slice(
    ctx: ToolContext,
    path: str,
    start_line: int,
    end_line: int,
    new_content: str,
) -> Result[str]:
    """Replace lines start_line..end_line (1-based, inclusive) with new_content; end_line = start_line - 1
    inserts before start_line."""
    loaded = _resolve_file(ctx, path, Access.WRITE)
    if not loaded.ok:
        return loaded.cast("")
    real, text_file = loaded.data
    display = ctx.workspace.display(real)
    lines = split_lines(text_file.text)
    problem = _line_range_error(start_line, end_line, len(lines), display)
    if problem:
        return problem
    replacement = _as_typed(text_file, new_content)
    rest = "".join(lines[end_line:])
    head = "".join(lines[: start_line - 1])
    # New lines end like the ones they replace: with a newline before more text, and, at the
    # end of the file, as its last line ended (a final newline stays; a file without one stays without).
    replaced_last = lines[end_line - 1] if start_line <= end_line else head[-1:]
    if replacement and not replacement.endswith("\n") and (rest or replaced_last.endswith("\n")):
        replacement += "\n"
    if replacement and head and not head.endswith("\n"):
        head += "\n"  # inserting after a last line without a newline: keep it a line of its own
    new_text = head + replacement + rest
    written = write_text(real, text_file, new_text, display, ctx.workspace)
    if not written.ok:
        return written.cast("")
    added = len(split_lines(replacement))
    return Result.success(f"Replaced lines {start_line}-{end_line} of {display} with {added} lines.")


@tool(toolset="files", title="Replace exact text",
      examples=[
          {
              "path": "notes/todo.md",
              "old_string": "- [ ] print the price labels",
              "new_string": "- [ ] print the price labels (tax included)",
          },
      ])
def edit_file(
    ctx: ToolContext,
    path: str,
    old_string: str,
    new_string: str,
    replace_all: bool = False,
    dry_run: bool = False,
) -> Result[str]:
    """Replace old_string with new_string. old_string must match the file exactly, once (add surrounding
    lines to make it unique), unless replace_all."""
    loaded = _resolve_file(ctx, path, Access.WRITE)
    if not loaded.ok:
        return loaded.cast("")
    real, text_file = loaded.data
    display = ctx.workspace.display(real)
    old, new = _as_typed(text_file, old_string), _as_typed(text_file, new_string)
    if not old:
        return Result.fail(ErrorKind.INVALID_INPUT, "old_string is empty",
                           "Give the exact text to replace; to add text use set_file_slice.", data="")
    if old == new:
        return Result.fail(ErrorKind.INVALID_INPUT, "old_string and new_string are identical",
                           "Nothing would change.", data="")
    text = text_file.text
    count = text.count(old)
    if count == 0:
        mixed = " The file mixes LF and CRLF line endings: copy its text with the \\r characters it has." \
            if _mixed_endings(text_file) and "\n" in old else ""
        return Result.fail(ErrorKind.NOT_FOUND, f"old_string was not found in {display}",
                           _closest_hint(text, old) + mixed, data="")
    if count > 1 and not replace_all:
        lines = _occurrence_lines(text, old, 10)
        return Result.fail(ErrorKind.CONFLICT,
                           f"old_string occurs {count} times in {display} (lines {', '.join(map(str, lines))})",
                           "Include more surrounding text to make it unique, or pass replace_all=true.", data="")
    new_text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    if dry_run:
        diff = "".join(difflib.unified_diff(text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                            f"a/{display}", f"b/{display}"))
        return Result.success(diff or "(no change)", "[dry run: nothing was written]")
    written = write_text(real, text_file, new_text, display, ctx.workspace)
    if not written.ok:
        return written.cast("")
    first = _occurrence_lines(text, old, 1)[0]
    what = f"{count} occurrences" if replace_all and count > 1 else f"1 occurrence (line {first})"
    return Result.success(f"Replaced {what} in {display}.")


@tool(toolset="files", read_only=True, title="Directory tree",
      examples=[{"path": ".", "max_depth": 2}])
def get_tree(
    ctx: ToolContext,
    path: str = ".",
    max_depth: Annotated[int, Field(ge=1, le=20)] = 3,
    include_ignored: IncludeIgnored = False,
) -> Result[str]:
    """The folder tree to max_depth levels (.gitignore honoured)."""
    resolved = _resolve_dir(ctx, path)
    if not resolved.ok:
        return resolved.cast("")
    lines = [ctx.workspace.display(resolved.data) + "/"]
    entries, more = _at_most(walk(ctx.workspace, resolved.data, max_depth=max_depth, gitignore=not include_ignored),
                             MAX_LISTED)
    for entry in entries:
        lines.append(f"{'  ' * entry.depth}{entry.path.name}{'/' if entry.is_dir else ''}")
    if more:
        lines.append(f"[... stopped at {MAX_LISTED} entries; lower max_depth or pick a subfolder ...]")
    return Result.success("\n".join(lines))


def _as_typed(text_file: TextFile, typed: str) -> str:
    """Text a caller typed, with the file's line endings: edits see a file whose lines all end alike with
    ``\\n`` (written back as they were), so CRLF typed into it is CRLF made ``\\n``; a file that mixes
    endings is edited exactly as typed."""
    return typed if _mixed_endings(text_file) else typed.replace("\r\n", "\n")


def _mixed_endings(text_file: TextFile) -> bool:
    return text_file.newline == "\n" and "\r\n" in text_file.text


def _remove_folders(created: list[Path]) -> None:
    """Remove folders a failed write created (deepest first); ones that gained content stay."""
    for folder in created:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _occurrence_lines(text: str, needle: str, limit: int) -> list[int]:
    """Line numbers of the first ``limit`` occurrences, counting newlines once (not per match)."""
    lines: list[int] = []
    line, counted = 1, 0
    start = text.find(needle)
    while start != -1 and len(lines) < limit:
        line += text.count("\n", counted, start)
        counted = start
        lines.append(line)
        start = text.find(needle, start + 1)
    return lines


def _closest_hint(text: str, needle: str) -> str:
    first = needle.strip().split("\n")[0].strip() if needle.strip() else ""
    lines = text.split("\n")
    candidates = [line.strip() for line in lines if line.strip()]
    close = difflib.get_close_matches(first, candidates, n=1, cutoff=0.6) if first else []
    if close:
        line_no = next(number for number, line in enumerate(lines, 1) if line.strip() == close[0])
        return (f"The closest line is {line_no}: {close[0]!r}. Read the file (get_file_slice) and copy the "
                "text exactly, including whitespace.")
    return "Read the file first and copy the exact text, including whitespace and indentation."
