"""The built-in tools' listing, generated once per codeward build and kept on disk.

Importing ~20 tool modules (and what they import: analyzers, the sandbox, git, the registry)
and generating ~80 input and output schemas from pydantic models is most of a server's
start-up beyond the MCP SDK, and an agent or a gateway starts servers often. A tool's listing
— name, description, hints, schemas, examples — depends only on code, so it is saved in
codeward's data folder (``~/.local/share/codeward/cache/``, ``CODEWARD_HOME`` moves it), a
file per key made of codeward's, pydantic's and Python's versions and the name, size and modification
time of every source file of the ``codeward`` package: an upgrade, or an edit in a development
checkout, makes a new key and the listing is generated again. With a saved listing the catalog
is built without importing a tool module; each module is imported when one of its tools is
first run (:meth:`codeward.kernel.catalog.ToolSpec.loaded`).

A missing, unreadable, corrupt or stale file is never an error (the tools are imported and
the listing generated as before); so is an entry naming a module outside the catalog's own:
only those are ever imported from it. Writing is atomic and best effort, so two servers
starting at once cannot leave a torn file. The data folder, not the cache folder, because it
is off limits to every tool and hidden from every sandbox: the agent cannot plant words in the
schemas the next session's model reads. ``CODEWARD_NO_SCHEMA_CACHE=1`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pydantic

import codeward
from codeward.kernel.catalog import Annotations, ToolSpec
from codeward.kernel.user_dirs import data_home

FORMAT = 2
CACHE_PREFIX = "tool-schemas-"
KEEP_FILES = 8
"""Listings kept for other builds (several installations, a development checkout's edits): the newest."""
DISABLE_ENV = "CODEWARD_NO_SCHEMA_CACHE"


def source_key(package_dir: Path | None = None, version: str | None = None) -> str:
    """What the listing depends on: the versions and every source file's name, size and mtime.

    Every start computes it over ~300 files: plain strings and :func:`os.scandir` (its entries
    carry the file type, so only the sources are stat'ed), not one ``Path`` per file."""
    root = str(package_dir or Path(codeward.__file__).parent)
    digest = hashlib.sha256()
    digest.update(json.dumps([FORMAT, version or codeward.__version__, pydantic.VERSION,
                              sys.version_info[:3]]).encode())
    for relative, path in sorted(_sources(root, ""), key=lambda source: source[0].split("/")):
        stat = os.stat(path)
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _sources(folder: str, prefix: str) -> Iterator[tuple[str, str]]:
    """``(path relative to the package, path)`` of every ``.py`` file under ``folder``, caches skipped."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                if entry.name != "__pycache__" and not entry.is_symlink():  # as os.walk
                    yield from _sources(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".py"):
                yield f"{prefix}{entry.name}", entry.path


def entry_of(spec: ToolSpec) -> dict[str, Any]:
    """One tool's listing as saved (its schemas generated here if they were not yet)."""
    hints = spec.annotations
    return {"name": spec.name, "description": spec.description, "toolset": spec.toolset, "module": spec.module,
            "annotations": [hints.read_only, hints.destructive, hints.idempotent, hints.open_world],
            "title": spec.title, "write_paths": list(spec.write_paths), "schema_dialect": spec.schema_dialect,
            "quick": spec.quick, "examples": list(spec.examples), "aliases": list(spec.aliases),
            "hidden": spec.hidden, "ask_always": spec.ask_always,
            "input": spec.input_schema, "output": spec.output_schema}


def spec_from_entry(entry: dict[str, Any], modules: Sequence[str]) -> ToolSpec:
    """A saved listing as a spec whose module is imported on first use; ValueError if it is malformed."""
    if entry["module"] not in modules:
        raise ValueError(f"module {entry['module']!r} is not one of the catalog's")
    texts = [entry["name"], entry["description"], entry["toolset"]]
    if not all(isinstance(text, str) for text in texts) or not isinstance(entry["input"], dict):
        raise ValueError("a name, description, toolset or input schema of the wrong type")
    if entry["output"] is not None and not isinstance(entry["output"], dict):
        raise ValueError("an output schema of the wrong type")
    flags = entry["annotations"]
    if not isinstance(flags, list) or len(flags) != 4 or not all(isinstance(flag, bool) for flag in flags):
        raise ValueError("annotations of the wrong shape")
    spec = ToolSpec(name=entry["name"], description=entry["description"], toolset=entry["toolset"],
                    module=entry["module"], annotations=Annotations(*flags), title=entry["title"],
                    write_paths=_strings(entry["write_paths"]), schema_dialect=bool(entry["schema_dialect"]),
                    quick=bool(entry["quick"]), examples=tuple(entry["examples"]), aliases=_strings(entry["aliases"]),
                    hidden=bool(entry["hidden"]), ask_always=bool(entry["ask_always"]))
    if entry["title"] is not None and not isinstance(entry["title"], str):
        raise ValueError("a title of the wrong type")
    if not all(isinstance(example, dict) for example in entry["examples"]):
        raise ValueError("an example that is not an object")
    spec.prime_schemas(entry["input"], entry["output"])
    return spec


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{value!r} is not a list of strings")
    return tuple(value)


class SchemaCache:
    """The listing file for one key: the saved tools as specs, and saving them."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.key = key

    @classmethod
    def default(cls) -> SchemaCache | None:
        """This build's file in the data folder (``None`` when ``CODEWARD_NO_SCHEMA_CACHE`` is set).

        One file per key, so two installations (a tool's and a project's virtualenv) do not
        evict each other's listing at every start.
        """
        if os.environ.get(DISABLE_ENV):
            return None
        key = source_key()
        return cls(data_home() / "cache" / f"{CACHE_PREFIX}{key[:24]}.json", key)

    def specs(self, modules: Sequence[str]) -> list[ToolSpec] | None:
        """Every tool of ``modules`` as saved for this key, none of them imported; ``None`` when the file is
        missing, unreadable, stale, for other modules or malformed in any way."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if (not isinstance(data, dict) or data.get("key") != self.key or data.get("modules") != list(modules)
                or not isinstance(data.get("tools"), list)):
            return None
        try:
            return [spec_from_entry(entry, modules) for entry in data["tools"]]
        except (KeyError, TypeError, ValueError):
            return None

    def save(self, modules: Sequence[str], specs: Iterable[ToolSpec]) -> None:
        """Keep every tool of ``modules`` (generating the schemas not generated yet); best effort."""
        tools = [entry_of(spec) for spec in specs]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".tool-schemas-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"key": self.key, "modules": list(modules), "tools": tools}, out,
                              separators=(",", ":"))
                os.replace(temp, self.path)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError:
            return  # a read-only home: the schemas were generated, they just are not kept
        self._prune()

    def _prune(self) -> None:
        """Delete all but the :data:`KEEP_FILES` newest listings of other builds (regular files only)."""
        try:
            with os.scandir(self.path.parent) as entries:
                others = [(entry.stat(follow_symlinks=False).st_mtime_ns, entry.path) for entry in entries
                          if entry.name.startswith(CACHE_PREFIX) and entry.name.endswith(".json")
                          and entry.is_file(follow_symlinks=False) and entry.path != str(self.path)]
        except OSError:
            return
        others.sort(reverse=True)
        for _mtime, path in others[KEEP_FILES - 1:]:
            with contextlib.suppress(OSError):
                os.unlink(path)
