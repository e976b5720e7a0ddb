"""The built-in tools' JSON Schemas, generated once per codeward build and kept on disk.

Generating ~80 input and output schemas from pydantic models is a good part of a server's
start-up, and an agent or a gateway starts servers often. The schemas depend only on code, so
they are saved in codeward's data folder (``~/.local/share/codeward/cache/``, ``CODEWARD_HOME``
moves it) under a key made of
codeward's, pydantic's and Python's versions and the name, size and modification time of every
source file of the ``codeward`` package: an upgrade, or an edit in a development checkout,
makes a new key and the schemas are generated again. A missing, unreadable, corrupt or stale
file is never an error (the schemas are generated as before); writing is atomic and best
effort, so two servers starting at once cannot leave a torn file. The data folder, not the
cache folder, because it is off limits to every tool and hidden from every sandbox: the agent
cannot plant words in the schemas the next session's model reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pydantic

import codeward
from codeward.catalog import ToolSpec
from codeward.user_dirs import data_home

FORMAT = 1
CACHE_FILE = "tool-schemas.json"
DISABLE_ENV = "CODEWARD_NO_SCHEMA_CACHE"


def source_key(package_dir: Path | None = None, version: str | None = None) -> str:
    """What the schemas depend on: the versions and every source file's name, size and mtime."""
    root = package_dir or Path(codeward.__file__).parent
    digest = hashlib.sha256()
    digest.update(json.dumps([FORMAT, version or codeward.__version__, pydantic.VERSION,
                              sys.version_info[:3]]).encode())
    for path in sorted(_sources(root)):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _sources(root: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".py"):
                yield Path(dirpath, name)


class SchemaCache:
    """The schemas file for one key: primes specs from it, saves what was generated."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.key = key

    @classmethod
    def default(cls) -> SchemaCache | None:
        """This build's file in the data folder (``None`` when ``CODEWARD_NO_SCHEMA_CACHE`` is set)."""
        if os.environ.get(DISABLE_ENV):
            return None
        return cls(data_home() / "cache" / CACHE_FILE, source_key())

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("key") != self.key or not isinstance(data.get("tools"), dict):
            return {}
        tools: dict[str, Any] = data["tools"]
        return tools

    def prime(self, specs: Iterable[ToolSpec]) -> None:
        """Give each spec its saved schemas; generate and save them when any is missing."""
        specs = list(specs)
        saved = self._load()
        missing = False
        for spec in specs:
            entry = saved.get(spec.name)
            if isinstance(entry, dict) and isinstance(entry.get("input"), dict):
                spec.prime_schemas(entry["input"], entry.get("output"))
            else:
                missing = True
        if missing:
            tools = {**saved, **{s.name: {"input": s.input_schema, "output": s.output_schema} for s in specs}}
            self._save(tools)

    def _save(self, tools: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".tool-schemas-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"key": self.key, "tools": tools}, out, separators=(",", ":"))
                os.replace(temp, self.path)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a read-only home: the schemas were generated, they just are not kept
