"""The repository symbol index: definitions and identifier use, in SQLite, kept up to date.

Parsing a repository on every question does not scale, so the index keeps, per file, the
tags of :mod:`codeward.engines.code_intel.tags` in ``<root>/.codeward/index.sqlite``:

* ``files``   — path (relative to the root), mtime, size, language;
* ``symbols`` — every definition with its kind, qualified name, line range, parent, bases;
* ``bases``   — class -> base name (the last component), for hierarchies;
* ``refs``    — identifier -> the files using it in code, with a count and the byte offsets;
* ``masks``   — the comment and string spans of each file, and its newline count every 4 KiB.

A usage question reads only the files that use the name and takes the positions from
``refs`` (a line number counts newlines from the nearest checkpoint); a file changed since
it was indexed is re-tagged in memory and scanned instead. Nothing is re-parsed on disk.

:meth:`SymbolIndex.refresh` walks the root through the workspace gate (``.gitignore``
honoured), compares (path, mtime, size) with the table and re-tags only what changed; a
cold build tags files in a process pool. SQLite runs in WAL mode so readers never wait for
a refresh; refreshes themselves take a file lock, so two of them never parse the same files.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.engines.code_intel.ctags_tags import Ctags
from codeward.engines.code_intel.index_rows import Symbol, TaggedFile, base_key, tag_files
from codeward.engines.code_intel.quick_tier import QuickTier
from codeward.engines.code_intel.tags import MAX_SIGNATURE_CHARS, Extractors, tagged_language, unpack_spans
from codeward.engines.code_intel.usage_scan import IndexedFile, Usage, scan_usages
from codeward.engines.files.walk import walk
from codeward.kernel import state_dir
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.state_dir import StateDir
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 5
MAX_FILE_BYTES = 4 * 1024 * 1024
"""Larger files (generated tables, amalgamations) are not indexed."""
POOL_MIN_FILES = 64
"""Below this many files to tag, starting worker processes costs more than it saves."""
BATCHES_PER_WORKER = 8
MIN_BATCH_FILES = 16
MAX_SUGGESTION_POOL = 20000
COMMIT_EVERY_SECONDS = 1.0
FLUSH_ROWS = 10_000
CALLABLE_KINDS = ("function", "method", "prototype", "macro", "class", "struct")
CLASS_KINDS = ("class", "struct", "interface", "trait", "protocol", "record", "object", "enum", "union")

ProgressFn = Callable[[int, int | None, str], None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    language TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', complete INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS symbols (
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, name TEXT NOT NULL, qualname TEXT NOT NULL,
    kind TEXT NOT NULL, line INTEGER NOT NULL, end_line INTEGER NOT NULL, name_line INTEGER NOT NULL,
    parent TEXT NOT NULL, bases TEXT NOT NULL, signature TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bases (file_id INTEGER NOT NULL, qualname TEXT NOT NULL, base TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refs (
    file_id INTEGER NOT NULL, name TEXT NOT NULL, count INTEGER NOT NULL, offsets BLOB,
    PRIMARY KEY (file_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS masks (file_id INTEGER PRIMARY KEY, lines BLOB, spans BLOB NOT NULL);
"""
_LOOKUP_INDEXES = """
CREATE INDEX IF NOT EXISTS symbols_name ON symbols (name);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols (file_id);
CREATE INDEX IF NOT EXISTS bases_base ON bases (base);
CREATE INDEX IF NOT EXISTS bases_file ON bases (file_id);
CREATE INDEX IF NOT EXISTS refs_name ON refs (name, file_id);
"""
_DROP_LOOKUP_INDEXES = """
DROP INDEX IF EXISTS symbols_name; DROP INDEX IF EXISTS symbols_file;
DROP INDEX IF EXISTS bases_base; DROP INDEX IF EXISTS bases_file; DROP INDEX IF EXISTS refs_name;
"""
_SYMBOL_COLUMNS = ("s.id, s.name, s.qualname, s.kind, f.path, s.line, s.end_line, s.name_line, f.language, "
                   "s.parent, s.bases, s.signature")


@dataclass
class RefreshStats:
    """What a refresh did."""

    scanned: int = 0
    parsed: int = 0
    removed: int = 0
    skipped: int = 0
    definitions_only: int = 0
    """Files whose definitions came from ctags; their references are still to be built."""
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cancelled: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.parsed or self.removed)

    def describe(self) -> str:
        files = "source file" if self.scanned == 1 else "source files"
        text = (f"{self.scanned} {files}, {self.parsed} (re)indexed, {self.removed} removed "
                f"in {self.seconds:.2f}s")
        if self.definitions_only:
            text += f" ({self.definitions_only} by universal-ctags: definitions only, references pending)"
        if self.skipped:
            text += f"; {self.skipped} skipped (over {MAX_FILE_BYTES // (1024 * 1024)} MB)"
        if self.failed:
            text += f"; {len(self.failed)} could not be read or parsed"
        if self.cancelled:
            text += " (cancelled: the index holds what was finished)"
        return text


@dataclass(frozen=True, slots=True)
class _Plan:
    """How a refresh tags what changed."""

    progress: ProgressFn | None
    cancelled: threading.Event | None
    workers: int | None
    references: bool


@dataclass(frozen=True, slots=True)
class _Seen:
    path: Path
    mtime_ns: int
    size: int
    language: str


@dataclass
class _Rows:
    """Rows waiting to be written in one batch of ``executemany`` calls."""

    files: list[tuple[object, ...]] = field(default_factory=list)
    symbols: list[tuple[object, ...]] = field(default_factory=list)
    bases: list[tuple[object, ...]] = field(default_factory=list)
    refs: list[tuple[object, ...]] = field(default_factory=list)
    masks: list[tuple[object, ...]] = field(default_factory=list)

    def add(self, rel: str, info: _Seen, tagged: TaggedFile) -> None:
        self.files.append((tagged.file_id, rel, info.mtime_ns, info.size, tagged.language, tagged.error, 1))
        self.symbols.extend(tagged.symbols)
        self.bases.extend(tagged.bases)
        self.refs.extend(tagged.refs)
        if tagged.masks or tagged.lines:
            self.masks.append((tagged.file_id, tagged.lines, tagged.masks))

    def flush(self, db: sqlite3.Connection) -> None:
        db.executemany("INSERT OR REPLACE INTO files (id, path, mtime_ns, size, language, error, complete)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)", self.files)
        db.executemany("INSERT INTO symbols (file_id, name, qualname, kind, line, end_line, name_line, parent,"
                       " bases, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self.symbols)
        db.executemany("INSERT INTO bases (file_id, qualname, base) VALUES (?, ?, ?)", self.bases)
        db.executemany("INSERT INTO refs (file_id, name, count, offsets) VALUES (?, ?, ?, ?)", self.refs)
        # lines before spans: a usage question reads the small lines without paging through the spans
        db.executemany("INSERT INTO masks (file_id, lines, spans) VALUES (?, ?, ?)", self.masks)
        for rows in (self.files, self.symbols, self.bases, self.refs, self.masks):
            rows.clear()


def index_root_for(workspace: Workspace, real: Path) -> Path:
    """The workspace root whose index covers a resolved path (the primary one otherwise)."""
    for root in workspace.roots:
        if real == root or real.is_relative_to(root):
            return root
    return workspace.primary


def default_index_path(root: Path) -> Path:
    return StateDir(root).index


def _fallback_index_path(root: Path) -> Path:
    """Where the index of a read-only root lives: the user's cache directory."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return cache / "codeward" / "index" / f"{digest}.sqlite"


class SymbolIndex:
    """The index of one root. Open one per call or thread (a connection is not shared)."""

    def __init__(self, workspace: Workspace, root: Path, db_path: Path, connection: sqlite3.Connection) -> None:
        self.workspace = workspace
        self.root = root
        self.db_path = db_path
        self._db = connection

    # -- opening --------------------------------------------------------------------------

    @classmethod
    def open(cls, workspace: Workspace, root: Path | None = None, db_path: Path | None = None) -> Result[SymbolIndex]:
        """Open (creating if needed) the index of ``root`` (default: the primary root).

        The database goes to ``<root>/.codeward/index.sqlite`` unless ``db_path`` is given;
        a root that cannot be written to gets its index in the user's cache directory.
        """
        root = root or workspace.primary
        notes: list[str] = []
        if db_path is None:
            if not workspace.contains(root):
                return Result.fail(ErrorKind.PERMISSION, f"{root} is not a root of this workspace",
                                   f"Index one of {', '.join(map(str, workspace.roots))}.", data=None)
            db_path = default_index_path(root)
            try:
                db_path = StateDir(root).database(state_dir.INDEX)
            except state_dir.StateDirError as exc:
                return Result.fail(ErrorKind.PERMISSION, str(exc), "Remove it; codeward recreates the folder.",
                                   data=None)
            except OSError:
                pass  # a read-only root: the fallback below
            if not _can_create(db_path):
                db_path = _fallback_index_path(root)
                notes.append(f"[{root} is not writable: the index is kept in {db_path}]")
        try:
            if db_path != default_index_path(root):
                db_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                connection = _connect(db_path)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError):
                    raise
                # Not a database, or a damaged one: the index is a cache, so start it over.
                with _exclusive_lock(db_path):
                    _remove_database(db_path)
                connection = _connect(db_path)
                notes.append(f"[the symbol index at {db_path} was unreadable ({exc}); it is rebuilt]")
        except (OSError, sqlite3.Error) as exc:
            return Result.fail(ErrorKind.UNAVAILABLE, f"cannot open the symbol index at {db_path}: {exc}",
                               "Check that the directory is writable and the disk is not full.")
        return Result(data=cls(workspace, root, db_path, connection), notes=notes)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SymbolIndex:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- refreshing -----------------------------------------------------------------------

    def refresh(
        self,
        *,
        progress: ProgressFn | None = None,
        cancelled: threading.Event | None = None,
        workers: int | None = None,
        rebuild: bool = False,
        references: bool = True,
        ctags: bool = True,
    ) -> RefreshStats:
        """Bring the index up to date with the files on disk; returns what changed.

        With ``references=False`` only definitions must be current: an empty index of a big
        tree then takes them from universal-ctags when it is installed (the quick tier, see
        :mod:`codeward.engines.code_intel.quick_tier`), and a later full refresh (the default) tags those
        files exactly with tree-sitter, references included, and retires the tag files.
        ``ctags=False`` (``[index] ctags = false``) makes every build the exact one.
        """
        if _in_spawned_import():
            raise RuntimeError(
                "SymbolIndex.refresh() ran while a worker process imported the main script: the script "
                "builds an index at import time; put that code under `if __name__ == \"__main__\":`")
        started = time.perf_counter()
        plan = _Plan(progress, cancelled, workers, references)
        with self._refresh_lock():
            if rebuild:
                self._clear()
            stats = RefreshStats()
            known: dict[str, tuple[int, int, int]] = {}
            incomplete: set[str] = set()
            for file_id, path, mtime, size, complete in self._db.execute(
                    "SELECT id, path, mtime_ns, size, complete FROM files"):
                known[path] = (file_id, mtime, size)
                if not complete:
                    incomplete.add(path)
            quick = Ctags.find() if ctags and not known and not references else None
            scan = self._scan(stats, progress)
            if quick is not None:
                head = list(itertools.islice(scan, POOL_MIN_FILES))
                if len(head) == POOL_MIN_FILES:  # a big tree: definitions from ctags
                    self._quick_definitions(quick, itertools.chain(head, scan), stats, plan)
                    stats.seconds = time.perf_counter() - started
                    return stats
                scan = iter(head)
            seen = dict(scan)
            changed = [rel for rel, info in seen.items()
                       if known.get(rel, (0, -1, -1))[1:] != (info.mtime_ns, info.size)
                       or (references and rel in incomplete)]
            removed = [known[rel][0] for rel in known.keys() - seen.keys()]
            if changed or removed:
                self._apply(seen, known, changed, removed, incomplete, stats, plan)
            if incomplete and references and not stats.cancelled:
                self._retire_quick_tier()
        stats.seconds = time.perf_counter() - started
        return stats

    def _scan(self, stats: RefreshStats, progress: ProgressFn | None) -> Iterator[tuple[str, _Seen]]:
        """The indexable files under the root, as (relative path, what stat says), lazily."""
        found = 0
        for entry in walk(self.workspace, self.root, include_dirs=False):
            language = tagged_language(entry.rel)
            if language is None or entry.rel.startswith(state_dir.NAME + "/"):
                continue
            try:
                info = os.stat(entry.path)
            except OSError:
                continue
            if info.st_size > MAX_FILE_BYTES:
                stats.skipped += 1
                continue
            if not _is_utf8(entry.rel):
                stats.failed.append(f"{entry.rel.encode('utf-8', 'surrogateescape')!r}: the file name is not "
                                    "valid UTF-8, which the index cannot store; rename the file to index it")
                continue
            found += 1
            stats.scanned = found
            yield entry.rel, _Seen(entry.path, info.st_mtime_ns, info.st_size, language)
            if progress and found % 2000 == 0:
                progress(found, None, f"scanning: {found} source files found")

    def _quick_definitions(
        self, ctags: Ctags, scan: Iterator[tuple[str, _Seen]], stats: RefreshStats, plan: _Plan
    ) -> None:
        """Give an empty index its definitions from ctags, several processes at once.

        The tag files stay beside the database as the index's definitions (the quick tier);
        their files are recorded with ``complete = 0`` until a full refresh tags them exactly.
        Files ctags cannot take (languages it lacks) are tagged exactly at once.
        """
        directory = self.quick_dir
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        seen = dict(scan)
        by_path = {str(info.path): rel for rel, info in seen.items()}
        jobs = [(str(info.path), info.language, file_id, info.size) for file_id, info in enumerate(seen.values(), 1)]
        count = plan.workers if plan.workers is not None else (os.cpu_count() or 1)
        if plan.progress:
            plan.progress(0, len(jobs), f"indexing {len(jobs)} files: definitions by universal-ctags")
        quick_rows: list[tuple[object, ...]] = []
        exact: list[tuple[str, str, int]] = []
        for result in ctags.write_tags(jobs, directory, count, plan.cancelled):
            for path, language, file_id, _size in result.jobs:
                if result.tagged:
                    info = seen[by_path[path]]
                    quick_rows.append((file_id, by_path[path], info.mtime_ns, info.size, language, "", 0))
                else:
                    exact.append((path, language, file_id))
            if plan.progress:
                plan.progress(len(quick_rows), len(jobs), f"definitions of {len(quick_rows)}/{len(jobs)} files")
        if plan.cancelled and plan.cancelled.is_set():
            shutil.rmtree(directory, ignore_errors=True)
            stats.cancelled = True
            return
        if not quick_rows:  # ctags tagged nothing: no tier to keep
            shutil.rmtree(directory, ignore_errors=True)
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            _run_script(db, _DROP_LOOKUP_INDEXES)
            db.executemany("INSERT INTO files (id, path, mtime_ns, size, language, error, complete)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?)", quick_rows)
            if quick_rows:
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('quick_tier', ?)", (str(self.root),))
            self._store(self._tag_exact(exact, plan), seen, by_path, len(exact), stats, plan)
            stats.parsed += len(quick_rows)
            stats.definitions_only = len(quick_rows)
            self._finish(stats, len(seen), plan)
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    @property
    def quick_dir(self) -> Path:
        """Where the tag files of the quick tier live, beside the database."""
        return self.db_path.with_name(self.db_path.name + ".tags")

    def _quick_tier(self) -> QuickTier | None:
        """The quick tier, while some files have only its definitions."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'quick_tier'").fetchone()
        return QuickTier(self._db, str(row[0]), self.quick_dir) if row is not None else None

    def _retire_quick_tier(self) -> None:
        """Drop the tag files once every file is tagged exactly."""
        if self._db.execute("SELECT 1 FROM files WHERE complete = 0 LIMIT 1").fetchone() is None:
            self._db.execute("DELETE FROM meta WHERE key = 'quick_tier'")
            shutil.rmtree(self.quick_dir, ignore_errors=True)

    def _apply(
        self,
        seen: dict[str, _Seen],
        known: dict[str, tuple[int, int, int]],
        changed: list[str],
        removed: list[int],
        incomplete: set[str],
        stats: RefreshStats,
        plan: _Plan,
    ) -> None:
        """Re-tag ``changed`` files exactly and forget ``removed`` ones, in one transaction
        (committed every second). Files of the quick tier (``incomplete``) have no rows yet."""
        by_path = {str(seen[rel].path): rel for rel in changed}
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for file_id in removed:
                self._forget(file_id, drop_file=True)
            stats.removed = len(removed)
            next_id = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM files").fetchone()[0]) + 1
            file_ids: dict[str, int] = {}
            for rel in changed:
                previous = known.get(rel)
                if previous is not None:
                    if rel not in incomplete:
                        self._forget(previous[0], drop_file=False)
                    file_ids[rel] = previous[0]
                else:
                    file_ids[rel] = next_id
                    next_id += 1
            if 2 * len(changed) > len(known):  # mostly new rows (and old ones forgotten, through the indexes):
                _run_script(db, _DROP_LOOKUP_INDEXES)  # the lookup indexes are cheaper to build once
            jobs = [(str(seen[rel].path), seen[rel].language, file_ids[rel]) for rel in changed]
            total = len(changed)
            if plan.progress:
                plan.progress(0, total, f"indexing {total} files")
            self._store(self._tag_exact(jobs, plan), seen, by_path, total, stats, plan)
            if stats.parsed < total:  # cancelled: files not tagged must not look up to date
                untouched = [file_ids[rel] for rel in changed if rel in known and rel not in incomplete]
                db.executemany("UPDATE files SET mtime_ns = -1 WHERE id = ?", [(i,) for i in untouched])
            self._finish(stats, total, plan)
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _store(
        self,
        tagged: Iterable[TaggedFile],
        seen: dict[str, _Seen],
        by_path: dict[str, str],
        total: int | None,
        stats: RefreshStats,
        plan: _Plan,
    ) -> None:
        """Write tagged files' rows (inside the open transaction), committing every second so
        that readers see progress and a cancelled build keeps what it finished."""
        db = self._db
        rows = _Rows()
        last_commit = time.perf_counter()
        for done, tagged_file in enumerate(tagged, 1):
            rel = by_path[tagged_file.path]
            rows.add(rel, seen[rel], tagged_file)
            stats.parsed += 1
            if tagged_file.error:
                stats.failed.append(f"{rel}: {tagged_file.error}")
            if len(rows.symbols) > FLUSH_ROWS:  # written while ctags or workers still run
                rows.flush(db)
            if time.perf_counter() - last_commit > COMMIT_EVERY_SECONDS:
                rows.flush(db)
                db.execute("COMMIT")
                db.execute("BEGIN IMMEDIATE")
                last_commit = time.perf_counter()
                if plan.progress:
                    plan.progress(done, total, f"indexed {done}/{total} files" if total else f"indexed {done} files")
        rows.flush(db)
        stats.cancelled = bool(plan.cancelled and plan.cancelled.is_set() and (total is None or stats.parsed < total))

    def _finish(self, stats: RefreshStats, total: int, plan: _Plan) -> None:
        """Build the lookup tables and commit."""
        if plan.progress:
            plan.progress(stats.parsed, total, "building lookup tables")
        db = self._db
        _run_script(db, _LOOKUP_INDEXES)
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('refreshed', ?)", (str(time.time()),))
        db.execute("COMMIT")

    def _tag_exact(self, jobs: list[tuple[str, str, int]], plan: _Plan) -> Iterator[TaggedFile]:
        """Definitions, references and spans by tree-sitter: in this process for a few files,
        in a pool of worker processes for many."""
        cancelled = plan.cancelled
        count = plan.workers if plan.workers is not None else (os.cpu_count() or 1)
        if len(jobs) < POOL_MIN_FILES or count <= 1:
            extractors = Extractors()
            for job in jobs:
                if cancelled and cancelled.is_set():
                    return
                yield from tag_files([job], extractors)
            return
        yield from _tag_in_pool(jobs, count, cancelled)

    def _forget(self, file_id: int, *, drop_file: bool) -> None:
        for table in ("symbols", "bases", "refs", "masks"):
            self._db.execute(f"DELETE FROM {table} WHERE file_id = ?", (file_id,))
        if drop_file:
            self._db.execute("DELETE FROM files WHERE id = ?", (file_id,))

    def _clear(self) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        for table in ("files", "symbols", "bases", "refs", "masks"):
            db.execute(f"DELETE FROM {table}")
        db.execute("DELETE FROM meta WHERE key = 'quick_tier'")
        db.execute("COMMIT")
        shutil.rmtree(self.quick_dir, ignore_errors=True)

    @contextmanager
    def _refresh_lock(self) -> Iterator[None]:
        with _exclusive_lock(self.db_path):
            yield

    # -- questions ------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """How much the index holds: files, definitions, identifier rows."""
        row = self._db.execute(
            "SELECT (SELECT COUNT(*) FROM files), (SELECT COUNT(*) FROM symbols), (SELECT COUNT(*) FROM refs)"
        ).fetchone()
        quick = self._quick_tier()
        definitions = int(row[1]) + (quick.count() if quick is not None else 0)
        return {"files": int(row[0]), "definitions": definitions, "identifiers": int(row[2])}

    def find(
        self,
        query: str,
        *,
        mode: str = "auto",
        kinds: Iterable[str] = (),
        under: str = "",
        language: str = "",
        limit: int = 50,
    ) -> tuple[list[Symbol], int]:
        """Definitions whose name or qualified name matches; returns (first ``limit``, total).

        ``mode``: ``exact`` (name or qualified name; ``::`` may stand for ``.``), ``glob``
        (``*``/``?``/``[...]``, case-sensitive), ``regex`` (Python syntax, searched in the
        qualified name), or ``auto`` (glob when the query has glob characters, else exact).
        Files the quick tier holds answer from its tag files (see :mod:`codeward.engines.code_intel.quick_tier`).
        """
        text = query.strip().replace("::", ".")
        if mode == "auto":
            mode = "glob" if any(ch in text for ch in "*?[") else "exact"
        where: list[str] = []
        params: list[object] = []
        if mode == "exact":
            # By the last part (indexed), then the whole qualified name.
            where.append("s.name = ?" if "." not in text else "s.name = ? AND s.qualname = ?")
            params.extend([text] if "." not in text else [text.rsplit(".", 1)[-1], text])
        elif mode == "glob":
            column = "s.qualname" if "." in text else "s.name"
            where.append(f"{column} GLOB ?")
            params.append(text)
        else:
            pattern = re.compile(text)
            self._db.create_function("codeward_regexp", 1, lambda value: pattern.search(value) is not None,
                                     deterministic=True)
            where.append("codeward_regexp(s.qualname)")
        rows = self._select_symbols(where, params, kinds, under, language)
        quick = self._quick_tier()
        if quick is not None:
            rows += quick.find(text, mode, kinds=kinds, under=under, language=language)
        ordered = sorted(rows, key=_symbol_order(text))
        return self._with_signatures(ordered[:limit]), len(ordered)

    def _with_signatures(self, symbols: list[Symbol]) -> list[Symbol]:
        """Symbols of the quick tier get the name's line, read now, as their signature."""
        lines: dict[str, list[str]] = {}
        result = []
        for symbol in symbols:
            if not symbol.signature:
                if symbol.path not in lines:
                    lines[symbol.path] = self._lines(symbol.path)
                text = lines[symbol.path][symbol.line - 1] if symbol.line <= len(lines[symbol.path]) else ""
                symbol = replace(symbol, signature=_signature_line(text, symbol.language))
            result.append(symbol)
        return result

    def _lines(self, rel: str) -> list[str]:
        """A file's lines, read through the gate (empty when it is hidden or gone)."""
        with self.workspace.reader(self.root) as reader:
            read = reader.read(rel)
        return read[0].decode("utf-8", "replace").split("\n") if read is not None else []  # as ctags counts lines

    def _select_symbols(
        self, where: list[str], params: list[object], kinds: Iterable[str], under: str, language: str
    ) -> list[Symbol]:
        where = list(where)
        params = list(params)
        kind_list = list(kinds)
        if kind_list:
            where.append(f"s.kind IN ({', '.join('?' for _ in kind_list)})")
            params.extend(kind_list)
        file_where, file_params = _file_filters(under, language)
        where += file_where
        params += file_params
        sql = (f"SELECT {_SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id"
               f" WHERE {' AND '.join(where) or '1'}")
        return [Symbol.from_row(row) for row in self._db.execute(sql, params)]

    def closest_names(self, name: str, n: int = 5, *, language: str = "") -> list[str]:
        """Defined names that look like ``name`` (for "did you mean" hints)."""

        dotted = name.replace("::", ".").strip(".")
        word = dotted.rsplit(".", 1)[-1]
        if not word:
            return []
        words = self._closest_words(word, n, language)
        if "." in dotted:
            qualified = self._closest_qualnames(dotted, [word, *words], n, language)
            if qualified:
                return qualified
        return words

    def _closest_words(self, word: str, n: int, language: str) -> list[str]:
        import difflib

        filters = " AND f.language = ?" if language else ""
        base = f"SELECT DISTINCT s.name FROM symbols s JOIN files f ON f.id = s.file_id WHERE 1{filters}"
        params: list[object] = [language] if language else []
        candidates = [str(r[0]) for r in self._db.execute(base + f" LIMIT {MAX_SUGGESTION_POOL + 1}", params)]
        if len(candidates) > MAX_SUGGESTION_POOL:  # a big index: names sharing the first letter, or the word
            sql = base + " AND (lower(substr(s.name, 1, 1)) = ? OR instr(lower(s.name), ?) > 0)"
            candidates = [str(r[0]) for r in self._db.execute(
                sql + f" LIMIT {MAX_SUGGESTION_POOL}", [*params, word[0].lower(), word.lower()])]
        lowered = word.lower()
        quick = self._quick_tier()
        if quick is not None:
            extra = [name for name in quick.names(language)
                     if name[:1].lower() == lowered[:1] or lowered in name.lower()]
            candidates = sorted(set(candidates).union(extra[:MAX_SUGGESTION_POOL]))
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(lowered)
        scored: list[tuple[float, float, str]] = []
        for candidate in candidates:
            matcher.set_seq1(candidate.lower())
            plausible = matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6
            similar = matcher.ratio() if plausible else 0.0
            if similar < 0.6 and lowered not in candidate.lower():
                continue
            exact_case = difflib.SequenceMatcher(None, word, candidate).ratio()
            scored.append((similar, exact_case, candidate))
        scored.sort(key=lambda item: (-item[0], -item[1], item[2]))
        return [candidate for _similar, _case, candidate in scored[:n]]

    def _closest_qualnames(self, dotted: str, words: list[str], n: int, language: str) -> list[str]:
        """Qualified names whose last part is (like) the query's, closest to the whole first."""
        import difflib

        marks = ", ".join("?" for _ in words)
        sql = (f"SELECT DISTINCT s.qualname FROM symbols s JOIN files f ON f.id = s.file_id WHERE s.name IN ({marks})"
               + (" AND f.language = ?" if language else "") + " LIMIT 5000")
        rows = [str(r[0]) for r in self._db.execute(sql, [*words, language] if language else words)]
        quick = self._quick_tier()
        if quick is not None:
            rows = sorted(set(rows) | quick.qualnames(words, language))
        rows = [q for q in rows if "." in q] or rows
        ranked = sorted(rows, key=lambda q: -difflib.SequenceMatcher(None, dotted.lower(), q.lower()).ratio())
        return ranked[:n]

    def file_states(self, languages: Iterable[str], *, under: str = "") -> list[tuple[str, int, int]]:
        """(path, mtime_ns, size) of the indexed files of ``languages`` below ``under``, as last refreshed
        (what a language server is told changed between two questions)."""
        wanted = sorted(set(languages))
        if not wanted:
            return []
        sql = f"SELECT f.path, f.mtime_ns, f.size FROM files f WHERE f.language IN ({','.join('?' * len(wanted))})"
        file_where, file_params = _file_filters(under, "")
        sql += "".join(f" AND {condition}" for condition in file_where)
        return [(str(path), int(mtime), int(size)) for path, mtime, size in self._db.execute(sql, [*wanted,
                                                                                                   *file_params])]

    def files_using(self, name: str, *, under: str = "", language: str = "") -> list[tuple[str, int]]:
        """(path, count) of files whose code mentions identifier ``name``."""
        sql = "SELECT f.path, r.count FROM refs r JOIN files f ON f.id = r.file_id WHERE r.name = ?"
        file_where, file_params = _file_filters(under, language)
        sql += "".join(f" AND {condition}" for condition in file_where)
        params: list[object] = [name, *file_params]
        return [(str(path), int(count)) for path, count in self._db.execute(sql + " ORDER BY f.path", params)]

    def usages(
        self, name: str, *, under: str = "", language: str = "", limit: int = 500
    ) -> tuple[list[Usage], int]:
        """Occurrences of ``name`` (an identifier, or a dotted ``a.b``) in code, in path order.

        Returns (first ``limit`` usages, total count). Comments and strings never match.
        Only the files the index says use the name are read; none is parsed.
        """
        last = name.rsplit(".", 1)[-1]
        # A plain name's uses come from the stored offsets: the spans (megabytes for a common
        # name) are fetched only for a dotted name, which is matched in the text.
        spans = "m.spans" if "." in name else "NULL"
        sql = (f"SELECT f.id, f.path, f.mtime_ns, f.size, f.language, r.count, {spans}, r.offsets, m.lines"
               " FROM refs r JOIN files f ON f.id = r.file_id LEFT JOIN masks m ON m.file_id = f.id WHERE r.name = ?")
        file_where, file_params = _file_filters(under, language)
        sql += "".join(f" AND {condition}" for condition in file_where)
        params: list[object] = [last, *file_params]
        # Sorted here: an ORDER BY would make SQLite sort rows that carry every file's spans.
        rows = sorted(self._db.execute(sql, params).fetchall(), key=lambda row: str(row[1]))
        definitions = {(int(fid), int(line)) for fid, line in self._db.execute(
            "SELECT file_id, name_line FROM symbols WHERE name = ?", (last,))}
        files = [IndexedFile(int(r[0]), str(r[1]), int(r[2]), int(r[3]), str(r[4]), int(r[5]), r[6], r[7], r[8])
                 for r in rows]
        return scan_usages(self.workspace, self.root, files, name, definitions, limit)

    def load_code(self, rel: str) -> tuple[bytes, list[tuple[int, int]]] | None:
        """An indexed file's bytes and its comment/string spans (re-tagged if it changed)."""
        with self.workspace.reader(self.root) as reader:  # checks what it opened, never blocks on a FIFO
            read = reader.read(rel)
        if read is None:
            return None
        source, info = read
        row = self._db.execute(
            "SELECT f.mtime_ns, f.size, f.language, m.spans FROM files f LEFT JOIN masks m ON m.file_id = f.id"
            " WHERE f.path = ?", (rel,)).fetchone()
        if row is None:
            return None
        mtime_ns, size, language, packed = row
        if (mtime_ns, size) != (info.st_mtime_ns, info.st_size) or len(source) != size:
            packed = Extractors().extract(language, source).masked
        return source, unpack_spans(packed or b"")

    def subclasses(self, class_name: str, *, language: str = "", transitive: bool = True,
                   limit: int = 2000) -> list[tuple[Symbol, str, int]]:
        """Classes deriving from ``class_name``: (class, the base it names, depth), breadth first."""
        results: list[tuple[Symbol, str, int]] = []
        frontier = [(base_key(class_name), 1)]
        visited = {base_key(class_name)}
        while frontier and len(results) < limit:
            key, depth = frontier.pop(0)
            sql = (f"SELECT DISTINCT {_SYMBOL_COLUMNS} FROM bases b"
                   " JOIN symbols s ON s.file_id = b.file_id AND s.qualname = b.qualname"
                   " JOIN files f ON f.id = s.file_id WHERE b.base = ?")
            params: list[object] = [key]
            if language:
                sql += " AND f.language = ?"
                params.append(language)
            for row in self._db.execute(sql + " ORDER BY f.path, s.line", params):
                symbol = Symbol.from_row(row)
                results.append((symbol, key, depth))
                if transitive and symbol.name not in visited:
                    visited.add(symbol.name)
                    frontier.append((symbol.name, depth + 1))
        return results[:limit]

    @property
    def connection(self) -> sqlite3.Connection:
        """The read connection, for modules that ask questions the methods above do not."""
        return self._db


def _tag_in_pool(
    jobs: list[tuple[str, str, int]], workers: int, cancelled: threading.Event | None,
    work: Callable[[list[tuple[str, str, int]]], list[TaggedFile]] = tag_files,
) -> Iterator[TaggedFile]:
    """Tag files in worker processes (spawned: forking a threaded server is unsafe).

    A batch the pool cannot hand back (its worker raised outside the per-file tagging, its
    result did not cross the pipe, the pool broke) is tagged here instead: a refresh is never
    left incomplete, nor failed, because of the transport.
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    # Few, big batches: each batch compiles its languages' queries once (0.1 s for C++).
    # Dealt round-robin from the largest file down, so batches weigh about the same.
    jobs = sorted(jobs, key=lambda job: -_size(job[0]))
    count = max(1, min(workers * BATCHES_PER_WORKER, len(jobs) // MIN_BATCH_FILES))
    batches = [jobs[i::count] for i in range(count)]
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    finished = False
    remaining = {job[0]: job for job in jobs}
    here: list[Extractors] = []

    def tag_here(batch: Iterable[tuple[str, str, int]]) -> Iterator[TaggedFile]:
        if not here:
            here.append(Extractors())
        for job in list(batch):
            if cancelled and cancelled.is_set():
                return
            for tagged in tag_files([job], here[0]):
                remaining.pop(tagged.path, None)
                yield tagged

    try:
        batch_of: dict[Future[list[TaggedFile]], list[tuple[str, str, int]]] = {
            pool.submit(work, batch): batch for batch in batches}
        pending = set(batch_of)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    tagged_files = future.result()
                except BrokenProcessPool:
                    raise
                except Exception as exc:  # any other failure to hand the batch back: tag it here
                    batch = batch_of[future]
                    logger.warning("index: a worker process failed a batch of %d files (%s: %s); "
                                   "tagging them in this process", len(batch), type(exc).__name__, exc)
                    yield from tag_here(batch)
                    continue
                for tagged in tagged_files:
                    remaining.pop(tagged.path, None)
                    yield tagged
            if cancelled and cancelled.is_set():
                return
        finished = True
    except BrokenProcessPool as exc:
        # Workers could not start or died (a script without a __main__ guard, memory):
        # finish the job here rather than fail the refresh.
        logger.warning("index: the worker processes stopped (%s); tagging the %d files left in this process",
                       exc, len(remaining))
        yield from tag_here(remaining.values())
        finished = True
    finally:
        # Cancelled or failed: do not wait for batches still running in the workers.
        pool.shutdown(wait=finished, cancel_futures=True)


def _in_spawned_import() -> bool:
    """True in a spawned worker while it re-imports the parent's main script."""
    import sys

    # multiprocessing.spawn runs the script as "__mp_main__" before making it "__main__".
    importing = sys.modules.get("__mp_main__")
    return importing is not None and sys.modules.get("__main__") is not importing


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _connect(db_path: Path) -> sqlite3.Connection:
    """A connection to a ready index; the schema is created or upgraded (under the file lock)
    only when needed, so opening an existing index never waits for a running refresh."""
    connection = sqlite3.connect(db_path, timeout=30.0, isolation_level=None, check_same_thread=False)
    try:
        connection.execute("PRAGMA synchronous = OFF")  # a cache: rebuilt if a crash ever damages it
        connection.execute("PRAGMA temp_store = MEMORY")
        connection.execute("PRAGMA cache_size = -131072")
        connection.execute("PRAGMA mmap_size = 1073741824")  # read pages in place, not a system call each
        if not _is_ready(connection):
            with _exclusive_lock(db_path):
                _prepare(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def _is_ready(connection: sqlite3.Connection) -> bool:
    mode = str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    return mode == "wal" and connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def _prepare(connection: sqlite3.Connection) -> None:
    connection.execute("PRAGMA journal_mode = WAL")
    if connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    with _exclusive(connection):
        for (table,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            connection.execute(f'DROP TABLE IF EXISTS "{table}"')
        _run_script(connection, _SCHEMA + _LOOKUP_INDEXES)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextmanager
def _exclusive_lock(db_path: Path) -> Iterator[None]:
    """An exclusive lock on ``<db>.lock``, across processes and threads (each opens its own file)."""
    with open(db_path.with_name(db_path.name + ".lock"), "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_database(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with suppress(FileNotFoundError):
            os.unlink(f"{db_path}{suffix}")


def _run_script(connection: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated statements inside the current transaction (``executescript`` commits)."""
    for statement in script.split(";"):
        if statement.strip():
            connection.execute(statement)


@contextmanager
def _exclusive(connection: sqlite3.Connection) -> Iterator[None]:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _can_create(db_path: Path) -> bool:
    if db_path.exists():
        return os.access(db_path, os.W_OK) and os.access(db_path.parent, os.W_OK)
    parent = db_path.parent
    while not parent.exists():
        parent = parent.parent
    return os.access(parent, os.W_OK)


def _file_filters(under: str, language: str) -> tuple[list[str], list[object]]:
    """SQL conditions (on files ``f``) and their parameters keeping files below ``under`` in ``language``."""
    where: list[str] = []
    params: list[object] = []
    if under and under != ".":
        where.append("(f.path = ? OR f.path GLOB ?)")
        params.extend([under, _glob_escape(under.rstrip("/")) + "/*"])
    if language:
        where.append("f.language = ?")
        params.append(language)
    return where, params


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _is_utf8(text: str) -> bool:
    """False for a name with undecodable bytes (surrogate escapes), which SQLite cannot store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _signature_line(text: str, language: str) -> str:
    """A definition's line as its signature: up to a ``{`` outside Python, spaces collapsed."""
    if language != "python":
        text = text.split("{", 1)[0]
    text = " ".join(text.split())
    return text if len(text) <= MAX_SIGNATURE_CHARS else text[: MAX_SIGNATURE_CHARS - 3] + "..."


def _symbol_order(query: str) -> Callable[[Symbol], tuple[int, int, str, int]]:
    """Exact qualified-name hits first, then real definitions before prototypes, then by path."""

    def key(symbol: Symbol) -> tuple[int, int, str, int]:
        exact = 0 if symbol.qualname == query else 1
        prototype = 1 if symbol.kind in ("prototype", "variable") else 0
        return exact, prototype, symbol.path, symbol.line

    return key
