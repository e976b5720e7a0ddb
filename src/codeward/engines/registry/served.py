"""The tools a server serves (catalog and gateway), made searchable and callable for the registry.

In meta mode a client sees only the four registry tools; this is how ``registry_search``,
``registry_help`` and ``registry_execute`` reach every other tool. The tool list is indexed
in an in-memory FTS5 table (same columns and weights as the item index), rebuilt only when
the list changes (a gateway server connecting or going away).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from codeward.engines.registry.meta_names import META_TOOL_NAMES
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.surface import CatalogSurface, CompositeSurface, ToolInfo, ToolSurface

if TYPE_CHECKING:
    import sqlite3



class ServedTools:
    """A surface's tools (minus the registry's own) with a BM25 index and a way to call them."""

    def __init__(self, surface: ToolSurface) -> None:
        self.surface = surface
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        """The BM25 index, made on first use (a server that is never searched does not pay for it)."""
        self._fingerprint = ""
        self._infos: list[ToolInfo] = []
        self._groups: dict[str, str] = {}

    def infos(self) -> list[ToolInfo]:
        self._sync()
        return list(self._infos)

    def info(self, name: str) -> ToolInfo | None:
        return next((i for i in self.infos() if i.name == name), None)

    def has(self, name: str) -> bool:
        return name not in META_TOOL_NAMES and self.surface.has(name)

    def group(self, name: str) -> str:
        """The toolset of a native tool, or the gateway alias of an upstream tool (as of the last sync)."""
        if not self._fingerprint:
            self._sync()
        return self._groups.get(name, "")

    def search(self, query: str, limit: int) -> list[tuple[ToolInfo, float]]:
        from codeward.engines.registry.index import WEIGHTS, fts_query

        self._sync()
        match = fts_query(query)
        if not match:
            return [(info, 0.0) for info in self._infos[:limit]]
        with self._lock:
            rows = self._database().execute(f"SELECT rowid, bm25(tools, {WEIGHTS}) AS score FROM tools "
                                            "WHERE tools MATCH ? ORDER BY score LIMIT ?", (match, limit)).fetchall()
            infos = list(self._infos)
        return [(infos[row[0] - 1], float(row[1])) for row in rows if 0 < row[0] <= len(infos)]

    def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        """Call a served tool from a worker thread (or, without an event loop, run one)."""
        import anyio
        import anyio.from_thread

        try:
            return anyio.from_thread.run(self.surface.call, name, arguments, ctx)
        except RuntimeError:
            return anyio.run(self.surface.call, name, arguments, ctx)

    def _sync(self) -> None:
        infos = [i for i in self.surface.tool_infos() if i.name not in META_TOOL_NAMES]
        blob = json.dumps([[i.name, i.description, i.input_schema] for i in infos], sort_keys=True, default=str)
        fingerprint = hashlib.sha256(blob.encode()).hexdigest()
        with self._lock:
            if fingerprint == self._fingerprint:
                return
            from codeward.engines.registry.index import FTS_COLUMNS

            groups = toolsets_of(self.surface)
            db = self._database()
            db.execute("DELETE FROM tools")
            for rowid, info in enumerate(infos, 1):
                group = groups.get(info.name, info.source)
                db.execute(f"INSERT INTO tools(rowid, {FTS_COLUMNS}) VALUES (?,?,?,?,?)",
                                 (rowid, _words(info.name), info.description, group, _schema_words(info)))
            self._infos, self._groups, self._fingerprint = infos, groups, fingerprint


    def _database(self) -> sqlite3.Connection:
        """The index (under the lock)."""
        if self._db is None:
            import sqlite3

            from codeward.engines.registry.index import FTS_COLUMNS

            self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self._db.execute(f"CREATE VIRTUAL TABLE tools USING fts5({FTS_COLUMNS}, tokenize = 'porter unicode61')")
        return self._db


def toolsets_of(surface: ToolSurface) -> dict[str, str]:
    """Tool name → toolset for the native tools of a surface (looking inside composites)."""
    if isinstance(surface, CatalogSurface):
        return {spec.name: spec.toolset for spec in surface.catalog}
    if isinstance(surface, CompositeSurface):
        found: dict[str, str] = {}
        for inner in surface.surfaces:
            for name, group in toolsets_of(inner).items():
                found.setdefault(name, group)
        return found
    inner_surface = getattr(surface, "inner", None) or getattr(surface, "surface", None)  # a layer, a chain
    return toolsets_of(inner_surface) if inner_surface is not None else {}


def _words(name: str) -> str:
    return f"{name} {name.replace('_', ' ').replace('-', ' ')}"


def _schema_words(info: ToolInfo) -> str:
    properties = info.input_schema.get("properties", {}) if isinstance(info.input_schema, dict) else {}
    parts = []
    for key, value in properties.items():
        description = value.get("description", "") if isinstance(value, dict) else ""
        parts.append(f"{key} {description}")
    return " ".join(parts)
