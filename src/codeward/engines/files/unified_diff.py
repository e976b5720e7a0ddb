"""Unified diffs: parsed with ``unidiff``, applied to text exactly (no fuzz), or refused with why.

A hunk applies where its old lines (context and removals) match the file exactly: first at the
line its header names (shifted by what earlier hunks added or removed), then at the nearest
line above or below — the offset ``git apply`` allows — but never overlapping an earlier hunk.
As in ``git apply``, a hunk whose header starts at line 0 or 1 must match at the start of the
file, and one without context lines after its change must match at its end (so a hunk that
appends cannot land in the middle). A hunk with no old lines at all (an insertion made with
``-U0``) has nothing to check its place against: it goes where its header says or is refused
(``git apply`` would move it to the end of the file). A context line that differs is a
conflict: the hunk does not apply, and the error says which line was expected and what the file
has there.

Line endings are compared byte for byte, as ``git apply`` does: a hunk line keeps the ``\\r``
the patch gave it, so a file that mixes LF and CRLF lines is patched exactly.
:meth:`Hunk.without_cr` is for files whose every line ends CRLF, which edits see with plain
``\\n`` endings (and get back as CRLF on writing), matched by a patch with either ending.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from unidiff.constants import LINE_TYPE_EMPTY, LINE_TYPE_NO_NEWLINE
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as DiffHunk
from unidiff.patch import PatchSet

from codeward.engines.files.textfile import split_lines
from codeward.kernel.result import ErrorKind, Result

Action = Literal["modify", "add", "delete", "rename"]


@dataclass(frozen=True)
class Hunk:
    header: str
    source_start: int
    old: list[str]
    new: list[str]
    trailing: int = 0
    """Context lines after the last change (none: the hunk must end at the end of the file)."""

    def without_cr(self) -> Hunk:
        """This hunk with CRLF line endings made LF (for a file whose lines all end CRLF)."""
        return replace(self, old=[_lf(line) for line in self.old], new=[_lf(line) for line in self.new])


def _lf(line: str) -> str:
    return line[:-2] + "\n" if line.endswith("\r\n") else line


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

    @property
    def only_inserts_at_start(self) -> bool:
        """One hunk adding lines to an empty file (``@@ -0,0 +1,n @@``): a creation when the file is missing.

        ``git apply`` (and ``patch``) read a traditional diff so; with ``/dev/null`` as the old
        name it is a creation whatever is there, and an existing file refuses it.
        """
        return len(self.hunks) == 1 and self.hunks[0].source_start == 0 and not self.hunks[0].old


def parse(text: str) -> Result[list[FilePatch]]:
    """The files of a unified (or git) diff, or an error naming what is malformed."""
    if not text.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "patch is empty",
                           "Give a unified diff: '--- a/path' and '+++ b/path' lines, then '@@' hunks.", data=[])
    try:
        parsed = PatchSet(text.replace("\r\n", "\n"))  # headers and hunk lines parsed without CRs...
    except UnidiffParseError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT, f"patch is not a valid unified diff: {exc}",
                           "Each file needs '--- a/path' and '+++ b/path' lines, and each hunk an '@@ -l,n +l,n @@' "
                           "header whose line counts match its lines.", data=[])
    if not parsed:
        return Result.fail(ErrorKind.INVALID_INPUT, "patch names no files",
                           "A unified diff starts each file with '--- a/path' and '+++ b/path' lines.", data=[])
    raw_lines = text.split("\n")  # ...which hunk lines then get back from the text as given
    strip = all(_prefixed(f.source_file, "a/") and _prefixed(f.target_file, "b/") for f in parsed)
    files: list[FilePatch] = []
    for patched in parsed:
        source, target = _name(patched.source_file, strip), _name(patched.target_file, strip)
        if patched.is_binary_file:
            return Result.fail(ErrorKind.INVALID_INPUT, f"the patch changes {target or source} as a binary file",
                               "apply_patch applies text changes only; write binary files another way.", data=[])
        # /dev/null names a creation or a deletion; unidiff's guess from a -0,0 or +0,0 hunk does not
        # (a file emptied stays, as git leaves it; an empty file gains lines).
        if patched.source_file == "/dev/null":
            action: Action = "add"
        elif patched.target_file == "/dev/null":
            action = "delete"
        elif patched.is_rename or source != target:
            action = "rename"
        else:
            action = "modify"
        hunks = [_hunk(hunk, raw_lines) for hunk in patched]
        if action == "modify" and not hunks:
            return Result.fail(ErrorKind.INVALID_INPUT, f"the patch names {target} but changes nothing in it",
                               "Remove that file's header lines, or add its hunks.", data=[])
        files.append(FilePatch(action, source, target, hunks, patched.added, patched.removed))
    return Result.success(files)


def apply(text: str, hunks: list[Hunk], name: str) -> Result[str]:
    """``text`` with every hunk applied, or the first hunk that does not apply and why."""
    lines = split_lines(text)
    out: list[str] = []
    position = 0  # lines of the original consumed
    shift = 0
    for number, hunk in enumerate(hunks, 1):
        expected = max(hunk.source_start - 1, 0) + shift if hunk.old else hunk.source_start + shift
        found, problem = _place(lines, hunk, expected, position)
        if found is None:
            return Result.fail(ErrorKind.CONFLICT, f"hunk {number} ({hunk.header}) does not apply to {name}: "
                               f"{problem}", "Read the file again (read_file or get_file_slice) and make the diff "
                               "(with context lines, as diff -u makes it) against what it holds now; nothing was "
                               "changed.", data="")
        out.extend(lines[position:found])
        out.extend(hunk.new)
        position = found + len(hunk.old)
        shift += len(hunk.new) - len(hunk.old) + (found - expected)
    out.extend(lines[position:])
    return Result.success("".join(out))


def _place(lines: list[str], hunk: Hunk, expected: int, floor: int) -> tuple[int | None, str]:
    """Where the hunk goes (git apply's rules), or None and why not."""
    span = len(hunk.old)
    at_start = hunk.source_start <= 1
    at_end = hunk.trailing == 0
    if not (at_start or at_end):
        found = _locate(lines, hunk.old, expected, floor)
        return found, "" if found is not None else _mismatch(lines, hunk.old, max(expected, floor))
    forced = 0 if at_start else len(lines) - span
    if at_start and at_end and span != len(lines):
        return None, (f"it starts at the top and has no context lines after its change, so (as in git apply) its "
                      f"{span} old lines must be the whole file, which has {len(lines)}" if span else
                      f"it adds lines to an empty file (@@ -0,0), and this one has {len(lines)} lines")
    if not span and forced != expected:
        return None, (f"the hunk only adds lines and has no context to check its place: its header says after line "
                      f"{expected}, the end of the file (where git apply would put it) is line {len(lines)}")
    if forced < floor or lines[forced:forced + span] != hunk.old:
        where = "start" if at_start else "end"
        why = "its header starts at line 0 or 1" if at_start else "it has no context lines after its change"
        detail = _mismatch(lines, hunk.old, max(forced, floor)) if forced >= 0 else "the file is shorter"
        return None, f"{why}, so (as in git apply) it must match at the {where} of the file: {detail}"
    return forced, ""


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
            where = f"line {at + offset + 1}"
            if have is None:
                return f"{where} should be {_shown(wanted)}, the file has the end of the file"
            if have.rstrip("\r\n") == wanted.rstrip("\r\n"):
                return f"{where} should end with {_ending(wanted)}, the file's ends with {_ending(have)}"
            return f"{where} should be {_shown(wanted)}, the file has {_shown(have)}"
    return "its lines are not where the header says, nor near"


def _shown(line: str) -> str:
    return repr(line.removesuffix("\n"))


def _ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "CRLF (\\r\\n)"
    return "a newline (\\n)" if line.endswith("\n") else "no newline"


def _hunk(hunk: DiffHunk, raw_lines: list[str]) -> Hunk:
    old: list[str] = []
    new: list[str] = []
    last: str | None = None
    trailing = 0
    for line in hunk:
        kind = line.line_type
        value = line.value
        number = line.diff_line_no
        if number is not None and value.endswith("\n") and raw_lines[number - 1].endswith("\r"):
            value = value[:-1] + "\r\n"
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
        trailing = trailing + 1 if kind == " " else 0
        last = kind
    header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
    return Hunk(header, hunk.source_start, old, new, trailing)


def _prefixed(name: str, prefix: str) -> bool:
    return name == "/dev/null" or name.startswith(prefix)


def _name(raw: str, strip: bool) -> str:
    if raw == "/dev/null":
        return ""
    return raw[2:] if strip else raw
