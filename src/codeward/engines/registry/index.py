"""The search index: SQLite FTS5 ranked with BM25, kept in ``.codeward/registry.sqlite3``.

Each refresh stats the item files and re-reads only those whose mtime or size changed (or
that are new), and drops rows of files that are gone — so a search over hundreds of items
parses nothing that did not change. Name matches weigh most, then description, category and
content. Several processes may share the file: SQLite serializes their writes.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from codeward.engines.registry.items import Item, Kind, Problem, Space
from codeward.engines.registry.loader import load_item
from codeward.engines.registry.spaces import ItemFile

SCHEMA_VERSION = "1"
WEIGHTS = "10.0, 4.0, 2.0, 1.0"
"""BM25 column weights: name, description, category, content."""
FTS_COLUMNS = "name, description, category, content"
TOKEN = re.compile(r"\w+", re.UNICODE)
SPACE_RANK = "CASE space WHEN 'project' THEN 0 WHEN 'user' THEN 1 ELSE 2 END"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    space TEXT NOT NULL,
    name TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    item TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS files_name ON files(kind, name);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5({FTS_COLUMNS}, tokenize = 'porter unicode61');
"""


def fts_query(text: str) -> str:
    """A user's words as an FTS5 query: every word (or a prefix of it) may match, BM25 ranks."""
    words = TOKEN.findall(text.lower())
    return " OR ".join(f'"{w}"*' for w in dict.fromkeys(words))


class RegistryIndex:
    """An open index; use as a context manager (one connection per operation)."""

    def __init__(self, path: Path | None) -> None:
        self._db = self._connect(path)
        self.persistent = path is not None and self._db.execute("PRAGMA database_list").fetchone()[2] != ""

    def __enter__(self) -> RegistryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @staticmethod
    def _connect(path: Path | None) -> sqlite3.Connection:
        """The index file (recreated if corrupt), or an in-memory index when it cannot be written."""
        if path is not None:
            for attempt in range(2):
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    db = sqlite3.connect(path, timeout=10.0, isolation_level=None)
                except (OSError, sqlite3.OperationalError):
                    break
                try:
                    db.execute("PRAGMA journal_mode=WAL")
                    RegistryIndex._prepare(db)
                    return db
                except sqlite3.OperationalError:
                    db.close()
                    break  # read-only folder, locked beyond the timeout: fall back to memory
                except sqlite3.DatabaseError:
                    db.close()
                    if attempt:
                        break
                    for suffix in ("", "-wal", "-shm"):
                        with contextlib.suppress(OSError):
                            Path(f"{path}{suffix}").unlink()
        db = sqlite3.connect(":memory:", isolation_level=None)
        RegistryIndex._prepare(db)
        return db

    @staticmethod
    def _prepare(db: sqlite3.Connection) -> None:
        db.executescript(_SCHEMA)
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            db.executescript("DELETE FROM files; DELETE FROM fts;")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))

    # -- keeping it current ------------------------------------------------------------

    def refresh(self, files: Iterable[ItemFile]) -> int:
        """Bring the index up to date with ``files``; returns how many files were (re)read."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            known = {row[0]: (row[1], row[2], row[3]) for row in
                     db.execute("SELECT path, id, mtime_ns, size FROM files")}
            seen: set[str] = set()
            reread = 0
            for file in files:
                key = str(file.path)
                if key in seen:
                    continue
                seen.add(key)
                try:
                    stat = file.path.stat()
                except OSError:
                    continue
                old = known.get(key)
                if old is not None and old[1] == stat.st_mtime_ns and old[2] == stat.st_size:
                    continue
                item = load_item(file.path, file.kind, file.space, file.display)
                if old is not None:
                    db.execute("DELETE FROM files WHERE id = ?", (old[0],))
                    db.execute("DELETE FROM fts WHERE rowid = ?", (old[0],))
                cursor = db.execute(
                    "INSERT INTO files(path, kind, space, name, mtime_ns, size, item) VALUES (?,?,?,?,?,?,?)",
                    (key, item.kind.value, item.space.value, item.name, stat.st_mtime_ns, stat.st_size,
                     _dump(item)))
                db.execute(f"INSERT INTO fts(rowid, {FTS_COLUMNS}) VALUES (?,?,?,?,?)",
                           (cursor.lastrowid, _words(item.name), item.description, item.category, item.content))
                reread += 1
            for key, (row_id, _m, _s) in known.items():
                if key not in seen:
                    db.execute("DELETE FROM files WHERE id = ?", (row_id,))
                    db.execute("DELETE FROM fts WHERE rowid = ?", (row_id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return reread

    # -- reading -------------------------------------------------------------------------

    def search(self, query: str, kind: Kind | None = None, space: Space | None = None,
               limit: int = 10) -> list[tuple[Item, float]]:
        """Items matching ``query``, best first, with their BM25 score (lower is better)."""
        match = fts_query(query)
        if not match:
            return [(item, 0.0) for item in self.items(kind, space)][:limit]
        sql = (f"SELECT f.item, bm25(fts, {WEIGHTS}) AS score FROM fts JOIN files f ON f.id = fts.rowid "
               "WHERE fts MATCH ?")
        args: list[Any] = [match]
        if kind is not None:
            sql += " AND f.kind = ?"
            args.append(kind.value)
        if space is not None:
            sql += " AND f.space = ?"
            args.append(space.value)
        sql += " ORDER BY score LIMIT ?"
        args.append(limit)
        return [(_load(row[0]), float(row[1])) for row in self._db.execute(sql, args)]

    def items(self, kind: Kind | None = None, space: Space | None = None) -> Iterator[Item]:
        """Every indexed item, project before user before hub, by kind and name."""
        sql = "SELECT item FROM files WHERE (? IS NULL OR kind = ?) AND (? IS NULL OR space = ?) " \
              f"ORDER BY {SPACE_RANK}, kind, name, path"
        k = kind.value if kind else None
        s = space.value if space else None
        for row in self._db.execute(sql, (k, k, s, s)):
            yield _load(row[0])

    def named(self, name: str, kind: Kind | None = None) -> list[Item]:
        """Items with this name, project space first (the first is the one that resolves)."""
        sql = f"SELECT item FROM files WHERE name = ? AND (? IS NULL OR kind = ?) ORDER BY {SPACE_RANK}, path"
        k = kind.value if kind else None
        return [_load(row[0]) for row in self._db.execute(sql, (name, k, k))]

    def names(self, kind: Kind | None = None) -> list[str]:
        sql = "SELECT DISTINCT name FROM files WHERE (? IS NULL OR kind = ?) ORDER BY name"
        k = kind.value if kind else None
        return [row[0] for row in self._db.execute(sql, (k, k))]


def _words(name: str) -> str:
    """A name with its parts spelled out, so ``py_get_definition`` matches "definition"."""
    parts = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return f"{name} {parts}"


def _dump(item: Item) -> str:
    data = asdict(item)
    data["path"] = str(item.path) if item.path else None
    return json.dumps(data, default=str)


def _load(text: str) -> Item:
    data = json.loads(text)
    return Item(
        kind=Kind(data["kind"]), name=data["name"], space=Space(data["space"]),
        path=Path(data["path"]) if data["path"] else None, description=data["description"],
        category=data["category"], version=data["version"], content=data["content"], meta=data["meta"],
        problems=tuple(Problem(**p) for p in data["problems"]),
    )
