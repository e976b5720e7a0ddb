"""The symbol index's records: one file's rows as tagging makes them (often in a worker
process), and a definition as questions return it.

Kept apart from :mod:`codeward.engines.code_intel.symbol_index` so that worker processes and the ctags
tier use them without importing the index itself.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from codeward.engines.code_intel.tags import Extractors, FileTags

OFFSET_BYTES = array("I").itemsize


@dataclass(frozen=True, slots=True)
class Symbol:
    """A definition as the index knows it; ``path`` is relative to the index root."""

    id: int
    name: str
    qualname: str
    kind: str
    path: str
    line: int
    end_line: int
    name_line: int
    language: str
    parent: str
    bases: tuple[str, ...]
    signature: str

    @classmethod
    def from_row(cls, row: Sequence[object]) -> Symbol:
        bases = str(row[10])
        return cls(int(str(row[0])), str(row[1]), str(row[2]), str(row[3]), str(row[4]), int(str(row[5])),
                   int(str(row[6])), int(str(row[7])), str(row[8]), str(row[9]),
                   tuple(bases.split("\x1f")) if bases else (), str(row[11]))

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}-{self.end_line}" if self.end_line > self.line else f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class TaggedFile:
    """One file's rows, built where it was parsed (a worker), ready for ``executemany``."""

    path: str
    file_id: int
    language: str
    error: str
    symbols: list[tuple[object, ...]]
    bases: list[tuple[object, ...]]
    refs: list[tuple[object, ...]]
    masks: bytes
    lines: bytes = b""


def tag_files(batch: list[tuple[str, str, int]], extractors: Extractors | None = None) -> list[TaggedFile]:
    """Read and tag ``(path, language, file_id)`` files into rows (the process pool's unit of work)."""
    extractors = extractors or Extractors()
    results: list[TaggedFile] = []
    for path, language, file_id in batch:
        try:
            with open(path, "rb") as handle:
                tags = extractors.extract(language, handle.read())
        except OSError as exc:
            tags = FileTags(language, error=f"cannot read: {exc.strerror}")
        symbols: list[tuple[object, ...]] = [
            (file_id, d.name, d.qualname, d.kind, d.line, d.end_line, d.name_line, d.parent, "\x1f".join(d.bases),
             d.signature) for d in tags.definitions]
        bases: list[tuple[object, ...]] = [
            (file_id, d.qualname, base_key(base)) for d in tags.definitions for base in d.bases]
        refs: list[tuple[object, ...]] = [(file_id, name, len(offsets) // OFFSET_BYTES, offsets)
                                          for name, offsets in tags.identifiers.items()]
        results.append(TaggedFile(path, file_id, tags.language, tags.error, symbols, bases, refs, tags.masked,
                                  tags.lines))
    return results


def base_key(base: str) -> str:
    """The name a base class is looked up by: ``pkg.mod.Base[T]`` / ``ns::Base<T>`` -> ``Base``."""
    text = re.sub(r"<[^<>]*>|\[[^\[\]]*\]|\([^()]*\)", "", base)
    text = text.replace("::", ".").strip()
    return text.rsplit(".", 1)[-1].strip()
