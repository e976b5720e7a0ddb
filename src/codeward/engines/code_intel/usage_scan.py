"""Finding a name's exact uses in code, at query time, in files the index points to.

The index stores, per file, where each identifier occurs in code and how many newlines
precede every 4 KiB; this module turns that into usages (line, column, line text), reading
each file for the text only. A file changed since it was indexed, or a dotted name, is
scanned instead: the name is matched as a whole identifier and matches inside comments and
strings are dropped. Nothing here parses a file on disk.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

from codeward.engines.code_intel.tags import LINE_CHECKPOINT, Extractors, unpack_offsets
from codeward.kernel.workspace import Workspace

WORD_CHARS = rb"A-Za-z0-9_\x80-\xff"
NOT_BEFORE_NAME = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_\\" + bytes(range(0x80, 0x100)))


class LineTable:
    """Byte offset -> (line, column, line text) for one file's bytes."""

    __slots__ = ("source", "starts")

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.starts = [0]
        self.starts.extend(m.end() for m in re.finditer(b"\n", source))

    def locate(self, offset: int) -> tuple[int, int, str]:
        index = bisect_right(self.starts, offset) - 1
        begin = self.starts[index]
        end = self.source.find(b"\n", begin)
        line = self.source[begin : end if end != -1 else len(self.source)]
        column = len(self.source[begin:offset].decode("utf-8", "replace")) + 1
        return index + 1, column, line.decode("utf-8", "replace").rstrip("\r")

    def offset(self, line: int) -> int:
        """The byte offset where a 1-based line starts (the end of the file past the last)."""
        return self.starts[line - 1] if 0 < line <= len(self.starts) else len(self.source)


class SpanTable:
    """Sorted, non-overlapping byte spans (comments and strings) with a fast membership test."""

    __slots__ = ("ends", "starts")

    def __init__(self, starts: array[int], ends: array[int]) -> None:
        self.starts = starts
        self.ends = ends

    @classmethod
    def unpack(cls, packed: bytes) -> SpanTable:
        flat = array("I")
        flat.frombytes(packed)
        return cls(flat[0::2], flat[1::2])

    def covers(self, offset: int) -> bool:
        at = bisect_right(self.starts, offset) - 1
        return at >= 0 and self.ends[at] > offset

    def uncovered(self, offsets: list[int]) -> list[int]:
        """The offsets outside every span (``offsets`` ascending)."""
        starts, ends = self.starts, self.ends
        if not starts:
            return offsets
        kept: list[int] = []
        at = 0
        for offset in offsets:
            at = bisect_right(starts, offset, at)
            if not at or ends[at - 1] <= offset:
                kept.append(offset)
        return kept


class Match(NamedTuple):
    offset: int
    line: int
    column: int
    text: str
    masked: bool


def positions(source: bytes, offsets: list[int], checkpoints: array[int] | None = None
              ) -> list[tuple[int, int, str]]:
    """(1-based line, 1-based character column, line text) of each of the ascending ``offsets``.

    Lines are counted from one offset to the next, never tabled; with ``checkpoints`` (the
    newlines before every ``LINE_CHECKPOINT``-th byte) the count starts at the nearest one.
    A line's text is decoded once however many offsets fall on it. (A plain loop building a
    list: this runs once per usage, tens of thousands of times for a common name.)
    """
    found: list[tuple[int, int, str]] = []
    append = found.append
    line = 1
    counted = 0
    begin = -1
    line_end = -1  # where the current line ends: offsets before it need no counting
    text = ""
    plain = True
    count, find, rfind = source.count, source.find, source.rfind
    blocks = len(checkpoints) if checkpoints is not None else 0
    for offset in offsets:
        if offset >= line_end or begin < 0:
            block = offset // LINE_CHECKPOINT
            if block < blocks and block * LINE_CHECKPOINT > counted:
                line, counted = checkpoints[block] + 1, block * LINE_CHECKPOINT  # type: ignore[index]
            line += count(b"\n", counted, offset)
            counted = offset
            begin = rfind(b"\n", 0, offset) + 1
            line_end = find(b"\n", offset)
            if line_end == -1:
                line_end = len(source)
            text = source[begin:line_end].decode("utf-8", "replace").rstrip("\r")
            plain = text.isascii()
        if plain:
            append((line, offset - begin + 1, text))
        else:
            append((line, len(source[begin:offset].decode("utf-8", "replace")) + 1, text))
    return found


def match_offsets(source: bytes, pattern: re.Pattern[bytes]) -> list[int]:
    """Where :func:`usage_pattern` matches a whole identifier: not the tail of a longer one,
    nor an escape such as ``\\n``."""
    return [start for start in (found.start() for found in pattern.finditer(source))
            if not (start and source[start - 1] in NOT_BEFORE_NAME)]


def locate_matches(source: bytes, pattern: re.Pattern[bytes], spans: SpanTable) -> list[Match]:
    """Every match of ``pattern`` with its 1-based line and column and line text; ``masked``
    tells those inside a comment or string."""
    offsets = match_offsets(source, pattern)
    return [Match(offset, line, column, text, spans.covers(offset))
            for offset, (line, column, text) in zip(offsets, positions(source, offsets), strict=True)]


def usage_pattern(name: str) -> re.Pattern[bytes]:
    """A name as a whole identifier (a dotted name matches with optional spaces around dots).

    The pattern starts with the name itself, so the regex engine can skip ahead to it; the
    byte before a match is checked by :func:`match_offsets` (a look-behind here would make
    the engine try every position of the file).
    """
    parts = [re.escape(part.encode("utf-8")) for part in name.split(".")]
    body = rb"\s*\.\s*".join(parts)
    return re.compile(body + rb"(?![" + WORD_CHARS + rb"])")


class Usage(NamedTuple):
    """One occurrence of a name in code: 1-based line and (character) column."""

    path: str
    line: int
    column: int
    text: str
    definition: bool = False


_new_usage = tuple.__new__
"""Builds a :class:`Usage` from a ready tuple, without the keyword handling of its constructor."""


class IndexedFile(NamedTuple):
    """What the index knows of a file that uses a name."""

    file_id: int
    rel: str
    mtime_ns: int
    size: int
    language: str
    uses: int
    """Occurrences of the name's last part in the file's code, when it was indexed."""
    spans: bytes | None
    """The packed comment and string spans, as :mod:`codeward.engines.code_intel.tags` stores them."""
    offsets: bytes | None = None
    """Where the name's last part occurs in the file's code, packed (``None``: not stored)."""
    lines: bytes | None = None
    """The file's packed newline checkpoints (see :func:`codeward.engines.code_intel.tags.line_checkpoints`)."""


def scan_usages(
    workspace: Workspace,
    root: Path,
    files: list[IndexedFile],
    name: str,
    definitions: set[tuple[int, int]],
    limit: int,
) -> tuple[list[Usage], int]:
    """Uses of ``name`` in ``files`` (in the given order): the first ``limit``, and the total.

    ``definitions`` holds the (file id, line) pairs where the name is defined, so that those
    uses are marked. Files the workspace hides now are skipped.
    """
    pattern = usage_pattern(name)
    word = name.encode("utf-8")
    found: list[Usage] = []
    total = 0
    with workspace.reader(root) as reader:
        for file in files:
            if len(found) >= limit:
                total += file.uses if "." not in name else 0
                continue
            read = reader.read(file.rel)
            if read is None:
                continue
            source, info = read
            unchanged = (file.mtime_ns, file.size) == (info.st_mtime_ns, info.st_size) and len(source) == file.size
            offsets = _indexed_offsets(source, file, word) if unchanged and "." not in name else None
            checkpoints = unpack_offsets(file.lines) if unchanged and file.lines else None
            if offsets is None:  # a dotted name, an index without offsets, or a file changed since
                spans = file.spans if unchanged and file.spans is not None else \
                    Extractors().extract(file.language, source).masked
                offsets = SpanTable.unpack(spans or b"").uncovered(match_offsets(source, pattern))
            total += len(offsets)
            rel, file_id = file.rel, file.file_id
            found.extend(_new_usage(Usage, (rel, line, column, text, (file_id, line) in definitions))
                         for line, column, text in positions(source, offsets[: limit - len(found)], checkpoints))
    return found, max(total, len(found))


def _indexed_offsets(source: bytes, file: IndexedFile, word: bytes) -> list[int] | None:
    """The offsets the index stored for the name in this (unchanged) file, when they still hold."""
    if file.offsets is None:
        return None
    offsets = unpack_offsets(file.offsets).tolist()
    if offsets and not source.startswith(word, offsets[-1]):  # same size and time, other bytes
        return None
    return offsets
