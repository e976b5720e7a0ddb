"""Questions about definitions answered from the ctags tier of an index.

After a quick cold build (see :mod:`codeward.engines.code_intel.ctags_tags`), files whose row in the
``files`` table says ``complete = 0`` have their definitions only in the sorted tag files
next to the database. This module answers :meth:`SymbolIndex.find` and the "did you mean"
hints for those files. A tag line whose file is gone, or was tagged exactly since (a refresh
re-tags a changed file exactly), is ignored, so the two tiers never answer for one file.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.code_intel.ctags_tags import definition_of, parent_of
from codeward.engines.code_intel.index_rows import Symbol
from codeward.engines.code_intel.tags_file import SortedTags, TagLine


@dataclass(frozen=True, slots=True)
class _FileRow:
    file_id: int
    rel: str
    language: str


@dataclass
class QuickTier:
    """The tag files of one index, read against its ``files`` table."""

    db: sqlite3.Connection
    root: str
    """The root as it was when ctags ran: tag files name files by absolute path."""
    directory: Path
    _files: dict[str, _FileRow | None] = field(default_factory=dict)

    def find(self, text: str, mode: str, *, kinds: Iterable[str], under: str, language: str) -> list[Symbol]:
        """Definitions in incomplete files matching ``text`` (already normalised to dots)."""
        wanted_kinds = set(kinds)
        under = under.rstrip("/")
        with SortedTags.in_directory(self.directory) as tags:
            if mode == "exact":
                found: Iterable[TagLine] = tags.lookup(text.rsplit(".", 1)[-1])
            elif mode == "glob" and "." not in text:
                prefix = re.split(r"[*?\[]", text, maxsplit=1)[0]
                if prefix:  # the lines sharing the literal start, by binary search, then the whole glob
                    name_glob = _glob(text)
                    found = (tag for tag in tags.starting_with(prefix.encode("utf-8", "surrogateescape"))
                             if name_glob.fullmatch(tag.name))
                else:
                    found = tags.matching(glob_line_pattern(text))
            elif mode == "glob":
                found = tags.where(self._qualified(_glob(text).fullmatch))
            else:
                found = tags.where(self._qualified(re.compile(text).search))
            # The scans above test raw tag lines; the qualified name as the index names it decides.
            qualified: Callable[[str], object] | None = None
            if mode == "exact" and "." in text:
                qualified = text.__eq__
            elif mode == "glob" and "." in text:
                qualified = _glob(text).fullmatch
            elif mode == "regex":
                qualified = re.compile(text).search
            symbols = []
            for symbol in self._symbols(found):
                if qualified is not None and not qualified(symbol.qualname):
                    continue
                if wanted_kinds and symbol.kind not in wanted_kinds:
                    continue
                if under and under != "." and not (symbol.path == under or symbol.path.startswith(under + "/")):
                    continue
                if language and symbol.language != language:
                    continue
                symbols.append(symbol)
        return symbols

    def names(self, language: str = "") -> set[str]:
        """Every name defined in a file this tier answers for (in ``language``, when given)."""
        with SortedTags.in_directory(self.directory) as tags:
            pairs = tags.names()
        return {name for name, path in pairs
                if (row := self._file(path)) is not None and (not language or row.language == language)}

    def qualnames(self, words: Iterable[str], language: str) -> set[str]:
        """Qualified names of the definitions named ``words``."""
        with SortedTags.in_directory(self.directory) as tags:
            return {symbol.qualname for word in words for symbol in self._symbols(tags.lookup(word))
                    if not language or symbol.language == language}

    def count(self) -> int:
        """Definitions this tier answers for (tag lines of files it still holds)."""
        with SortedTags.in_directory(self.directory) as tags:
            by_path = tags.lines_by_path()
        return sum(count for path, count in by_path.items() if self._file(path) is not None)

    def _qualified(self, accept: Callable[[str], object]) -> Callable[[re.Match[bytes]], bool]:
        """A test of a tag line: does ``accept`` take its qualified name (as the index names it)?"""

        def test(match: re.Match[bytes]) -> bool:
            row = self._file(match.group(2).decode("utf-8", "surrogateescape"))
            if row is None:
                return False
            name, scope = match.group(1).decode("utf-8", "replace"), match.group(6)
            if scope:
                parent = parent_of((match.group(5) or b"").decode("ascii"), scope.decode("utf-8", "replace"),
                                   row.language)
                name = f"{parent}.{name}" if parent else name
            return bool(accept(name))

        return test

    def _symbols(self, tags: Iterable[TagLine]) -> Iterator[Symbol]:
        for tag in tags:
            row = self._file(tag.path)
            if row is None:
                continue
            definition = definition_of(tag, row.language)
            if definition is None:
                continue
            yield Symbol(0, definition.name, definition.qualname, definition.kind, row.rel, definition.line,
                         definition.end_line, definition.line, row.language, definition.parent, definition.bases, "")

    def _file(self, path: str) -> _FileRow | None:
        """The incomplete file a tag line belongs to (``None``: gone, or tagged exactly since)."""
        if path in self._files:
            return self._files[path]
        prefix = self.root.rstrip("/") + "/"
        row = None
        if path.startswith(prefix):
            found = self.db.execute("SELECT id, language, complete FROM files WHERE path = ?",
                                    (path[len(prefix):],)).fetchone()
            if found is not None and not found[2]:
                row = _FileRow(int(found[0]), path[len(prefix):], str(found[1]))
        self._files[path] = row
        return row


def glob_line_pattern(glob: str) -> re.Pattern[bytes]:
    """A tag-file line whose name matches ``glob`` (``*``, ``?``, ``[...]``; case-sensitive, as SQLite's GLOB)."""
    return re.compile(b"^" + _glob_body(glob).encode("utf-8", "surrogateescape") + b"\t", re.M)


def _glob(glob: str) -> re.Pattern[str]:
    return re.compile(_glob_body(glob))


def _glob_body(glob: str) -> str:
    parts: list[str] = []
    at = 0
    while at < len(glob):
        char = glob[at]
        if char == "*":
            parts.append("[^\\t\\n]*")
        elif char == "?":
            parts.append("[^\\t\\n]")
        elif char == "[" and "]" in glob[at + 2 :]:
            end = glob.index("]", at + 2)
            body = glob[at + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            parts.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            at = end
        else:
            parts.append(re.escape(char))
        at += 1
    return "".join(parts)
