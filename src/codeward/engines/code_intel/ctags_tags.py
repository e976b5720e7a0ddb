"""Definitions from universal-ctags: the quick tier of a cold index build.

Tree-sitter parses the Python standard library in about 3.4 CPU-seconds and ``/usr/include``
in about 30; universal-ctags tags them in about 0.8 and 3.4. Writing hundreds of thousands of
definitions into SQLite costs as much again. So when an empty index is asked only about
definitions (``find_symbol``), it runs ctags on chunks of files in parallel and keeps what
ctags writes — sorted tag files, read by binary search (:mod:`codeward.engines.code_intel.tags_file`) —
as the index's definitions until the tree-sitter pass that builds references replaces them
(see :mod:`codeward.engines.code_intel.symbol_index`). Definitions from this tier differ from the exact
ones in two ways a reader should know: a range starts at the name's line (decorators and
``template<>`` headers are not included), and the signature is the name's line, read from
the file when a definition is shown.

Safety: ctags runs with ``--options=NONE`` (a repository's ``.ctags.d`` must not configure
it: an option file could redirect its output), from a neutral directory, without the
``CTAGS`` variable, on files the workspace gate already vetted, with a time limit. A chunk
that fails is reported back so the caller tags those files with tree-sitter instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from codeward.engines.code_intel.tags_file import TagLine

CTAGS_NAMES = ("ctags-universal", "universal-ctags", "ctags")
"""Executable names universal-ctags is installed under (Debian, Homebrew, upstream)."""
VERSION_TIMEOUT = 5.0
CHUNKS_PER_WORKER = 2
"""Each chunk is one ctags process and one sorted tag file, which every lookup searches: a
few chunks per worker balance the load without making lookups search many files."""
MIN_CHUNK_FILES = 32
SECONDS_PER_MB = 20.0
"""A chunk's time limit grows with its size: ctags reads about 30 MB/s on slow machines."""
MIN_CHUNK_SECONDS = 30.0
POLL_SECONDS = 0.05
"""How often a running ctags is checked for the build being cancelled."""

LANGUAGE_NAMES: Mapping[str, str] = MappingProxyType({
    "python": "Python", "c": "C", "cpp": "C++", "javascript": "JavaScript", "typescript": "TypeScript",
    "go": "Go", "rust": "Rust", "java": "Java", "csharp": "C#", "ruby": "Ruby", "php": "PHP",
    "kotlin": "Kotlin", "lua": "Lua", "bash": "Sh",
})
"""The index's languages ctags knows, by ctags' name for them (TSX and Swift it does not)."""

KINDS: Mapping[str, str] = MappingProxyType({
    "class": "class", "function": "function", "func": "function", "method": "method",
    "singletonMethod": "method", "struct": "struct", "union": "union", "enum": "enum",
    "enumerator": "enumerator", "typedef": "typedef", "macro": "macro", "prototype": "prototype",
    "namespace": "namespace", "interface": "interface", "trait": "trait", "module": "module",
    "implementation": "impl", "type": "type", "talias": "type", "typealias": "type", "alias": "type",
    "object": "object", "const": "constant", "var": "variable", "variable": "variable",
})
"""ctags kind (long name) -> the index's kind; kinds not listed (fields, properties, locals,
imports, headers) are not definitions the index keeps."""
VARIABLE_LANGUAGES = frozenset({"python", "c", "cpp", "go"})
"""Languages whose top-level variables the index keeps (as the tree-sitter pass does)."""
CLASS_LIKE = frozenset({"class", "struct", "interface", "trait", "impl", "object", "protocol", "extension",
                        "enum", "union", "module", "record"})
_KIND_OPTIONS = ("--kinds-Python=cfmv", "--kinds-C=-m-h+p", "--kinds-C++=-m-h+p")
_ANONYMOUS = re.compile(r"(?:^|\.)__anon\w*")

SizedJob = tuple[str, str, int, int]
"""(path, language, file id, size in bytes)."""


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """One chunk's fate: its jobs, and whether their definitions are in the tag files."""

    jobs: list[SizedJob]
    tagged: bool


@dataclass(frozen=True, slots=True)
class QuickDefinition:
    """A ctags definition in the index's terms (lines 1-based, inclusive)."""

    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    parent: str
    bases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Ctags:
    """An installed universal-ctags."""

    executable: str

    @classmethod
    def find(cls) -> Ctags | None:
        """Universal-ctags on ``PATH`` (Exuberant ctags lacks what this needs), else ``None``."""
        for name in CTAGS_NAMES:
            executable = shutil.which(name)
            if executable is None:
                continue
            try:
                done = subprocess.run([executable, "--options=NONE", "--version"], capture_output=True,
                                      timeout=VERSION_TIMEOUT, check=False, cwd="/", env=_clean_env())
            except (OSError, subprocess.SubprocessError):
                continue
            first = done.stdout.decode("utf-8", "replace").splitlines()[:1]
            if done.returncode == 0 and first and first[0].startswith("Universal Ctags"):
                return cls(executable)
        return None

    def write_tags(
        self, jobs: list[SizedJob], directory: Path, workers: int, cancelled: threading.Event | None = None
    ) -> Iterator[ChunkResult]:
        """Tag ``jobs`` into sorted tag files in ``directory``, a chunk per ctags process.

        Each language's files are dealt into ``CHUNKS_PER_WORKER * workers`` chunks of about
        equal bytes, run biggest first, so the workers finish together. Jobs ctags cannot
        take (a language it lacks, a path that does not fit on a line) come back at once
        with ``tagged=False``.
        """
        listable = [job for job in jobs if _listable(job)]
        if len(listable) < len(jobs):
            yield ChunkResult([job for job in jobs if not _listable(job)], tagged=False)
        chunks = _deal(listable, CHUNKS_PER_WORKER * max(1, workers))
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="ctags") as pool:
            pending = {pool.submit(self._run, chunk, directory / f"chunk-{number:04d}.tags", cancelled):
                       chunk.jobs for number, chunk in enumerate(chunks, 1)}
            try:
                while pending:
                    yield from _finished(pending)
                    if cancelled is not None and cancelled.is_set():
                        return
            finally:
                for future in pending:
                    future.cancel()

    def _run(self, chunk: _Chunk, target: Path, cancelled: threading.Event | None) -> bool:
        """Write one chunk's sorted tag file (all its files in one language); False if ctags failed,
        ran past its time limit, or was stopped because the build was cancelled."""
        language = LANGUAGE_NAMES[chunk.jobs[0][1]]
        listing = target.with_suffix(".list")
        listing.write_bytes(b"".join(job[0].encode("utf-8") + b"\n" for job in chunk.jobs))
        command = [self.executable, "--options=NONE", "--sort=yes", "--extras=-p", "--excmd=number",
                   "--fields=NFKsei", f"--language-force={language}", *_KIND_OPTIONS, "-f", str(target),
                   "-L", str(listing)]
        deadline = time.monotonic() + max(MIN_CHUNK_SECONDS, SECONDS_PER_MB * chunk.size / 1e6)
        status = -1
        try:
            with subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, cwd="/", env=_clean_env()) as process:
                while True:
                    try:
                        status = process.wait(timeout=POLL_SECONDS)
                        break
                    except subprocess.TimeoutExpired:
                        if (cancelled is not None and cancelled.is_set()) or time.monotonic() > deadline:
                            process.kill()
                            process.wait()
                            break
        except OSError:
            pass
        finally:
            listing.unlink(missing_ok=True)
        if status != 0:
            target.unlink(missing_ok=True)
        return status == 0


def definition_of(tag: TagLine, language: str) -> QuickDefinition | None:
    """A tag line as the index's definition, or ``None`` for kinds the index does not keep.

    Names are made as the exact (tree-sitter) pass makes them: Go's package and PHP's
    namespace are not part of a qualified name, and a method outside any class (a Ruby or
    Kotlin top-level ``def``/``fun``, as ctags calls it) is a function.
    """
    kind = _kind(tag.kind, tag.scope_kind, language)
    if kind is None or tag.name.startswith("__anon") or (kind == "namespace" and language == "php"):
        return None
    parent = parent_of(tag.scope_kind, tag.scope, language)
    if kind == "method" and not parent:
        kind = "function"
    bases = tuple(split_bases(tag.inherits)) if tag.inherits else ()
    return QuickDefinition(tag.name, f"{parent}.{tag.name}" if parent else tag.name, kind, tag.line,
                           max(tag.line, tag.end), parent, bases)


def parent_of(scope_kind: str, scope: str, language: str) -> str:
    """The owner's qualified name from a tag's scope, with ``.`` between parts."""
    if language == "go":  # "package:main" or "struct:main.Server": the package is not part of the name
        return "" if scope_kind == "package" else scope.partition(".")[2]
    if language == "php":  # "namespace:App\\Http" or "class:App\\Http\\Ctl": ctags escapes backslashes
        return "" if scope_kind == "namespace" else scope.replace("\\\\", "\\").rpartition("\\")[2]
    parent = scope.replace("::", ".")
    if "__anon" in parent:
        parent = _ANONYMOUS.sub("", parent).strip(".")
    return parent


def split_bases(text: str) -> list[str]:
    """``A, ns::B<int, C>`` -> [``A``, ``ns::B<int, C>``]: commas inside brackets stay."""
    found: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char in "<([":
            depth += 1
        elif char in ">)]":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            found.append("".join(current))
            current = []
        else:
            current.append(char)
    found.append("".join(current))
    cleaned = [re.sub(r"^(?:public|protected|private|virtual)\s+", "", part.strip()) for part in found]
    return [part for part in cleaned if part]


def _kind(kind: str, scope_kind: str, language: str) -> str | None:
    if kind == "member":
        return "method" if language == "python" else None
    mapped = KINDS.get(kind)
    if mapped == "variable" and language not in VARIABLE_LANGUAGES:
        return None
    if mapped == "function" and KINDS.get(scope_kind, scope_kind) in CLASS_LIKE:
        return "method"
    return mapped


def _finished(pending: dict[Future[bool], list[SizedJob]]) -> Iterator[ChunkResult]:
    """Results of the chunks that are done (waiting a little for one)."""
    done, _rest = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
    for future in done:
        try:
            tagged = future.result()
        except OSError:  # the file list could not be written (disk full): tagged exactly instead
            tagged = False
        yield ChunkResult(pending.pop(future), tagged=tagged)


@dataclass(slots=True)
class _Chunk:
    """Jobs of one language waiting to go to ctags together."""

    jobs: list[SizedJob] = field(default_factory=list)
    size: int = 0


def _deal(jobs: list[SizedJob], per_language: int) -> list[_Chunk]:
    """Each language's jobs in up to ``per_language`` chunks of about equal bytes, biggest chunk first."""
    by_language: dict[str, list[SizedJob]] = {}
    for job in jobs:
        by_language.setdefault(job[1], []).append(job)
    chunks: list[_Chunk] = []
    for group in by_language.values():
        count = max(1, min(per_language, len(group) // MIN_CHUNK_FILES))
        mine = [_Chunk() for _ in range(count)]
        for job in sorted(group, key=lambda job: -job[3]):  # biggest first, each to the lightest chunk
            lightest = min(mine, key=lambda chunk: chunk.size)
            lightest.jobs.append(job)
            lightest.size += job[3]
        chunks.extend(mine)
    return sorted(chunks, key=lambda chunk: -chunk.size)


def _listable(job: SizedJob) -> bool:
    """Whether ctags can take the job: a language it knows, a UTF-8 path that fits on a line."""
    path = job[0]
    if job[1] not in LANGUAGE_NAMES or any(char in path for char in "\n\r\t\\"):
        return False  # ctags escapes a backslash in the paths it writes: such a file would not be found again
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes (surrogate escapes) would not read back the same
        return False
    return True


def _clean_env() -> dict[str, str]:
    """The environment without variables ctags would read options from, in the C locale: tag
    files must be sorted in byte order, which the binary search in
    :mod:`codeward.engines.code_intel.tags_file` assumes."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("CTAGS", "ETAGS") and not key.startswith("LC_")}
    environment["LC_ALL"] = "C"
    return environment
