"""Unified diffs: parsed with ``unidiff``, applied to text exactly (no fuzz), or refused with why.

A hunk applies where its old lines (context and removals) match the file exactly: first at the
line its header names (shifted by what earlier hunks added or removed), then at the nearest
line above or below — the offset ``patch`` allows — but never overlapping an earlier hunk. A
context line that differs is a conflict: the hunk does not apply, and the error says which line
was expected and what the file has there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from unidiff.constants import LINE_TYPE_EMPTY, LINE_TYPE_NO_NEWLINE
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as DiffHunk
from unidiff.patch import PatchSet

from codeward.kernel.result import ErrorKind, Result

Action = Literal["modify", "add", "delete", "rename"]


@dataclass(frozen=True)
class Hunk:
    header: str
    source_start: int
    old: list[str]
    new: list[str]


@dataclass(frozen=True)
class FilePatch:
    """One file's part of a patch, with paths as the patch names them (prefixes stripped)."""

    action: Action
    source: str
    target: str
    hunks: list[Hunk] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    @property
    def path(self) -> str:
        """The path the change lands on (the source for a deletion)."""
        return self.source if self.action == "delete" else self.target


def parse(text: str) -> Result[list[FilePatch]]:
    """The files of a unified (or git) diff, or an error naming what is malformed."""
    if not text.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "patch is empty",
                           "Give a unified diff: '--- a/path' and '+++ b/path' lines, then '@@' hunks.", data=[])
    try:
        parsed = PatchSet(text.replace("\r\n", "\n"))
    except UnidiffParseError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT, f"patch is not a valid unified diff: {exc}",
                           "Each file needs '--- a/path' and '+++ b/path' lines, and each hunk an '@@ -l,n +l,n @@' "
                           "header whose line counts match its lines.", data=[])
    if not parsed:
        return Result.fail(ErrorKind.INVALID_INPUT, "patch names no files",
                           "A unified diff starts each file with '--- a/path' and '+++ b/path' lines.", data=[])
    strip = all(_prefixed(f.source_file, "a/") and _prefixed(f.target_file, "b/") for f in parsed)
    files: list[FilePatch] = []
    for patched in parsed:
        source, target = _name(patched.source_file, strip), _name(patched.target_file, strip)
        if patched.is_binary_file:
            return Result.fail(ErrorKind.INVALID_INPUT, f"the patch changes {target or source} as a binary file",
                               "apply_patch applies text changes only; write binary files another way.", data=[])
        if patched.is_added_file:
            action: Action = "add"
        elif patched.is_removed_file:
            action = "delete"
        elif patched.is_rename or source != target:
            action = "rename"
        else:
            action = "modify"
        hunks = [_hunk(hunk) for hunk in patched]
        if action == "modify" and not hunks:
            return Result.fail(ErrorKind.INVALID_INPUT, f"the patch names {target} but changes nothing in it",
                               "Remove that file's header lines, or add its hunks.", data=[])
        files.append(FilePatch(action, source, target, hunks, patched.added, patched.removed))
    return Result.success(files)


def apply(text: str, hunks: list[Hunk], name: str) -> Result[str]:
    """``text`` with every hunk applied, or the first hunk that does not apply and why."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    position = 0  # lines of the original consumed
    shift = 0
    for number, hunk in enumerate(hunks, 1):
        expected = max(hunk.source_start - 1, 0) + shift if hunk.old else hunk.source_start + shift
        found = _locate(lines, hunk.old, expected, position)
        if found is None:
            return Result.fail(ErrorKind.CONFLICT, f"hunk {number} ({hunk.header}) does not apply to {name}: "
                               f"{_mismatch(lines, hunk.old, max(expected, position))}",
                               "Read the file again (read_file or get_file_slice) and make the diff against what "
                               "it holds now; nothing was changed.", data="")
        out.extend(lines[position:found])
        out.extend(hunk.new)
        position = found + len(hunk.old)
        shift += len(hunk.new) - len(hunk.old) + (found - expected)
    out.extend(lines[position:])
    return Result.success("".join(out))


def _locate(lines: list[str], old: list[str], expected: int, floor: int) -> int | None:
    """Where ``old`` matches, nearest to ``expected`` and not before ``floor``."""
    if not old:
        return min(max(expected, floor), len(lines))
    span = len(old)
    for distance in range(0, len(lines) + 1):
        for start in ((expected,) if distance == 0 else (expected - distance, expected + distance)):
            if floor <= start <= len(lines) - span and lines[start:start + span] == old:
                return start
        if expected - distance < floor and expected + distance > len(lines) - span:
            break
    return None


def _mismatch(lines: list[str], old: list[str], at: int) -> str:
    for offset, wanted in enumerate(old):
        have = lines[at + offset] if at + offset < len(lines) else None
        if have != wanted:
            shown = "the end of the file" if have is None else repr(have.rstrip("\n"))
            return f"line {at + offset + 1} should be {wanted.rstrip(chr(10))!r}, the file has {shown}"
    return "its lines are not where the header says, nor near"


def _hunk(hunk: DiffHunk) -> Hunk:
    old: list[str] = []
    new: list[str] = []
    last: str | None = None
    for line in hunk:
        kind = line.line_type
        value = line.value
        if kind == LINE_TYPE_NO_NEWLINE:
            if last in (" ", "-") and old:
                old[-1] = old[-1].removesuffix("\n")
            if last in (" ", "+") and new:
                new[-1] = new[-1].removesuffix("\n")
            continue
        if kind == LINE_TYPE_EMPTY:  # a blank context line whose leading space was lost
            kind, value = " ", "\n"
        if kind in (" ", "-"):
            old.append(value)
        if kind in (" ", "+"):
            new.append(value)
        last = kind
    header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
    return Hunk(header, hunk.source_start, old, new)


def _prefixed(name: str, prefix: str) -> bool:
    return name == "/dev/null" or name.startswith(prefix)


def _name(raw: str, strip: bool) -> str:
    if raw == "/dev/null":
        return ""
    return raw[2:] if strip else raw
