"""LSP positions as codeward shows them, and text edits applied to a file's text.

LSP counts lines from 0 and characters in the encoding the server chose when it started
(``positionEncoding``: UTF-16 code units unless both sides agreed on UTF-32 or UTF-8); codeward's
tools count both from 1, characters as Python counts them (code points). Every conversion goes
through one :class:`Encoding`, so a line with an emoji or a CJK name lands on the same column
whichever server answered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Encoding(StrEnum):
    """How a server counts characters on a line (LSP ``PositionEncodingKind``)."""

    UTF16 = "utf-16"
    UTF32 = "utf-32"
    UTF8 = "utf-8"

    @classmethod
    def of(cls, value: object) -> Encoding:
        """The server's choice from its capabilities; LSP's default (UTF-16) when it named none."""
        try:
            return cls(str(value)) if value else cls.UTF16
        except ValueError:
            return cls.UTF16

    def units(self, text: str) -> int:
        """How many of this encoding's units ``text`` takes."""
        if self is Encoding.UTF32:
            return len(text)
        if self is Encoding.UTF8:
            return len(text.encode("utf-8", "surrogatepass"))
        return len(text.encode("utf-16-le", "surrogatepass")) // 2

    def to_index(self, line: str, units: int) -> int:
        """The code-point index on ``line`` at ``units`` of this encoding (clamped to the line)."""
        if self is Encoding.UTF32 or line.isascii():
            return max(0, min(units, len(line)))
        counted = 0
        for index, char in enumerate(line):
            if counted >= units:
                return index
            counted += self.units(char)
        return len(line)

    def from_index(self, line: str, index: int) -> int:
        """This encoding's units before code-point ``index`` of ``line``."""
        before = line[:max(0, index)]
        return len(before) if before.isascii() else self.units(before)


@dataclass(frozen=True)
class Span:
    """A range in a file, 0-based lines and code-point columns (end exclusive)."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int


def lines_of(text: str) -> list[str]:
    """A file's lines as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` all end a line), without endings."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def span_of(raw: Mapping[str, Any], lines: list[str], encoding: Encoding) -> Span:
    """An LSP ``Range`` (as received) on ``lines``, in code points."""
    start, end = raw["start"], raw["end"]
    return Span(_line(start), _column(start, lines, encoding), _line(end), _column(end, lines, encoding))


def position(line: int, column: int, lines: list[str], encoding: Encoding) -> dict[str, int]:
    """The LSP ``Position`` of 0-based ``line`` and code-point ``column``."""
    text = lines[line] if 0 <= line < len(lines) else ""
    return {"line": line, "character": encoding.from_index(text, column)}


def _line(raw: Mapping[str, Any]) -> int:
    return max(0, int(raw.get("line", 0)))


def _column(raw: Mapping[str, Any], lines: list[str], encoding: Encoding) -> int:
    line = _line(raw)
    text = lines[line] if line < len(lines) else ""
    return encoding.to_index(text, max(0, int(raw.get("character", 0))))


@dataclass(frozen=True)
class TextEdit:
    """Replace ``span`` of a file with ``new_text`` (LSP ``TextEdit``, converted to code points)."""

    span: Span
    new_text: str


class EditConflict(ValueError):
    """Edits that overlap, or reach past the end of the file they are for."""


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """``text`` with every edit applied at once (positions refer to the original text).

    Lines are counted as LSP counts them; the file's own line endings are kept around the edits
    (an edit's new text is inserted as the server sent it).
    """
    offsets = _line_offsets(text)
    ordered = sorted(edits, key=lambda e: (e.span.start_line, e.span.start_column, e.span.end_line,
                                           e.span.end_column))
    pieces: list[str] = []
    cursor = 0
    for edit in ordered:
        start = _offset(offsets, text, edit.span.start_line, edit.span.start_column)
        end = _offset(offsets, text, edit.span.end_line, edit.span.end_column)
        if end < start:
            raise EditConflict(f"an edit ends before it starts (line {edit.span.start_line + 1})")
        if start < cursor:
            raise EditConflict(f"two edits overlap at line {edit.span.start_line + 1}")
        pieces.append(text[cursor:start])
        pieces.append(edit.new_text)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _line_offsets(text: str) -> list[int]:
    """Where each line starts in ``text`` (line breaks as LSP counts them)."""
    offsets = [0]
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char == "\r":
            if index + 1 < length and text[index + 1] == "\n":
                index += 1
            offsets.append(index + 1)
        elif char == "\n":
            offsets.append(index + 1)
        index += 1
    return offsets


def _offset(offsets: list[int], text: str, line: int, column: int) -> int:
    if line >= len(offsets):
        if line == len(offsets) and column == 0:
            return len(text)
        raise EditConflict(f"an edit reaches line {line + 1}, past the end of the file ({len(offsets)} lines)")
    start = offsets[line]
    end = offsets[line + 1] if line + 1 < len(offsets) else len(text)
    content = text[start:end].rstrip("\r\n") if line + 1 < len(offsets) else text[start:end]
    return start + min(column, len(content))
