"""Reading sorted ctags files: the definitions tier of an index whose references are not built yet.

universal-ctags writes tag files sorted by name (byte order), one definition per line::

    name<TAB>path<TAB>line;"<TAB>kind<TAB>scopeKind:scope<TAB>inherits:...<TAB>end:N

(with ``--excmd=number --fields=NFKsei``; the optional fields appear only when they apply).
A name is found by binary search over the memory-mapped file, as ``readtags`` does, so a
lookup costs microseconds however big the repository is. Patterns (globs, regular
expressions) scan the files with one regular expression in C.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

TAG_LINE = re.compile(
    rb'^([^\t\n]+)\t([^\t\n]+)\t(\d+);"\t([A-Za-z]+)'
    rb"(?:\t(?!inherits:|end:)([A-Za-z]+):([^\t\n]*))?(?:\tinherits:([^\t\n]*))?(?:\tend:(\d+))?\r?$",
    re.M,
)
"""One line of a tag file written with ``--excmd=number --fields=NFKsei``."""
_NAMES = re.compile(rb"^([^\t\n]+)\t([^\t\n]+)\t", re.M)
_PATHS = re.compile(rb"^[^\t\n]+\t([^\t\n]+)\t", re.M)


@dataclass(frozen=True, slots=True)
class TagLine:
    """One definition as ctags reports it (``scope`` uses the language's own separator)."""

    name: str
    path: str
    line: int
    kind: str
    scope_kind: str
    scope: str
    inherits: str
    end: int


class SortedTags:
    """The tag files of one ctags pass, opened for reading (missing files count as empty)."""

    def __init__(self, files: list[Path]) -> None:
        self._maps: list[mmap.mmap] = []
        for file in files:
            with suppress(OSError, ValueError), open(file, "rb") as handle:  # an empty file cannot be mapped
                self._maps.append(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))

    @classmethod
    def in_directory(cls, directory: Path) -> SortedTags:
        try:
            files = sorted(directory.glob("*.tags"))
        except OSError:
            files = []
        return cls(files)

    def close(self) -> None:
        for mapped in self._maps:
            mapped.close()
        self._maps.clear()

    def __enter__(self) -> SortedTags:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def lookup(self, name: str) -> list[TagLine]:
        """Every definition named exactly ``name``."""
        return list(self.starting_with(name.encode("utf-8", "surrogateescape") + b"\t"))

    def starting_with(self, prefix: bytes) -> Iterator[TagLine]:
        """Definitions on lines that start with ``prefix`` (found by binary search)."""
        for mapped in self._maps:
            at = _first_at_or_after(mapped, prefix)
            while at < len(mapped) and mapped[at : at + len(prefix)] == prefix:
                end = mapped.find(b"\n", at)
                end = len(mapped) if end == -1 else end
                parsed = parse_line(mapped[at:end])
                if parsed is not None:
                    yield parsed
                at = end + 1

    def matching(self, pattern: re.Pattern[bytes]) -> Iterator[TagLine]:
        """Definitions on lines ``pattern`` matches (it should be anchored with ``^`` and ``re.M``)."""
        for mapped in self._maps:
            for match in pattern.finditer(mapped):
                begin = mapped.rfind(b"\n", 0, match.start()) + 1
                end = mapped.find(b"\n", match.start())
                parsed = parse_line(mapped[begin : len(mapped) if end == -1 else end])
                if parsed is not None:
                    yield parsed

    def where(self, test: Callable[[re.Match[bytes]], bool]) -> Iterator[TagLine]:
        """Definitions on lines whose match of :data:`TAG_LINE` passes ``test``.

        Only lines that pass are decoded whole: a regular expression over every qualified
        name of a large repository stays a scan, not a parse.
        """
        for mapped in self._maps:
            for match in TAG_LINE.finditer(mapped):
                if test(match):
                    yield _from_match(match)

    def names(self) -> set[tuple[str, str]]:
        """Every distinct (name, path) pair."""
        found: set[tuple[bytes, bytes]] = set()
        for mapped in self._maps:
            found.update(_NAMES.findall(mapped))
        return {(name.decode("utf-8", "replace"), path.decode("utf-8", "surrogateescape")) for name, path in found}

    def lines_by_path(self) -> dict[str, int]:
        """How many definitions each path has."""
        counts: dict[bytes, int] = {}
        for mapped in self._maps:
            for path in _PATHS.findall(mapped):
                counts[path] = counts.get(path, 0) + 1
        return {path.decode("utf-8", "surrogateescape"): count for path, count in counts.items()}


def parse_line(line: bytes) -> TagLine | None:
    match = TAG_LINE.match(line)
    return _from_match(match) if match else None


def _from_match(match: re.Match[bytes]) -> TagLine:
    name, path, line, kind, scope_kind, scope, inherits, end = match.groups()
    return TagLine(
        name.decode("utf-8", "replace"), path.decode("utf-8", "surrogateescape"), int(line),
        kind.decode("ascii"), (scope_kind or b"").decode("ascii"), (scope or b"").decode("utf-8", "replace"),
        (inherits or b"").decode("utf-8", "replace"), int(end) if end else 0)


def _first_at_or_after(mapped: mmap.mmap, key: bytes) -> int:
    """The offset of the first line that sorts at or after ``key`` (byte order, as ctags sorts)."""
    low, high = 0, len(mapped)
    while low < high:
        middle = (low + high) // 2
        start = mapped.rfind(b"\n", 0, middle) + 1
        if mapped[start : start + len(key)] < key:
            end = mapped.find(b"\n", middle)
            low = len(mapped) if end == -1 else end + 1
        else:
            high = start
    return low
