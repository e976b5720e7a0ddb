"""The tools' schemas kept on disk: reused for the same build, regenerated for any other."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from codeward.catalog import ToolSpec
from codeward.schema_cache import SchemaCache, source_key
from codeward.tools import default_catalog

SENTINEL = {"type": "object", "properties": {"from_cache": {"type": "string"}}}


def _fresh_specs() -> list[ToolSpec]:
    """Copies of the file tools' specs, with no schema generated yet (the originals are shared)."""
    return [replace(spec) for spec in default_catalog(["files"])]


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "sub" / "b.py").write_text("B = 2\n")
    return package


def test_the_key_changes_with_the_version_and_with_any_source_file(tmp_path: Path) -> None:
    package = _package(tmp_path)
    key = source_key(package, "1.0")
    assert source_key(package, "1.0") == key
    assert source_key(package, "1.1") != key  # an upgrade
    (package / "sub" / "b.py").write_text("B = 22\n")  # an edit in a development checkout
    edited = source_key(package, "1.0")
    assert edited != key
    (package / "c.py").write_text("")  # a new module
    assert source_key(package, "1.0") != edited


def test_saved_schemas_are_used_for_the_same_key_and_ignored_for_another(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "tool-schemas.json"
    first = _fresh_specs()
    SchemaCache(path, "key-1").prime(first)  # nothing saved yet: generated, then saved
    saved = json.loads(path.read_text())
    assert saved["key"] == "key-1"
    for spec in first:
        assert saved["tools"][spec.name] == {"input": spec.input_schema, "output": spec.output_schema}

    saved["tools"]["read_file"]["input"] = SENTINEL
    path.write_text(json.dumps(saved))
    same_build = _fresh_specs()
    SchemaCache(path, "key-1").prime(same_build)
    assert next(s for s in same_build if s.name == "read_file").input_schema == SENTINEL

    other_build = _fresh_specs()
    SchemaCache(path, "key-2").prime(other_build)  # a new version: the old file is not trusted
    read = next(s for s in other_build if s.name == "read_file")
    assert read.input_schema != SENTINEL and "path" in read.input_schema["properties"]
    assert json.loads(path.read_text())["key"] == "key-2"


@pytest.mark.parametrize("content", ["{not json", "[]", '{"key": "key-1", "tools": 3}', ""])
def test_a_corrupt_cache_file_is_regenerated(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tool-schemas.json"
    path.write_text(content)
    specs = _fresh_specs()
    SchemaCache(path, "key-1").prime(specs)
    assert "path" in next(s for s in specs if s.name == "read_file").input_schema["properties"]
    assert json.loads(path.read_text())["key"] == "key-1"


def test_an_unwritable_cache_folder_is_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    specs = _fresh_specs()
    SchemaCache(blocked / "tool-schemas.json", "key-1").prime(specs)
    assert "path" in next(s for s in specs if s.name == "read_file").input_schema["properties"]


@pytest.mark.anyio
async def test_a_cached_listing_is_the_generated_one_through_the_official_client(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()

    async def listing(**env: str) -> list[dict[str, object]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                       env={**os.environ, "CODEWARD_HOME": str(tmp_path / "home"), **env})
        async with Client(params) as client:
            return [tool.model_dump() for tool in (await client.list_tools()).tools]

    generated = await listing(CODEWARD_NO_SCHEMA_CACHE="1")
    saved = tmp_path / "home" / "cache" / "tool-schemas.json"
    assert not saved.exists()
    first = await listing()  # generates and saves
    assert saved.is_file()
    cached = await listing()  # reads the saved schemas
    assert generated == first == cached


def test_the_saved_schemas_are_out_of_every_tools_reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """They are listed to the next session's model: the agent must not be able to write them."""
    from codeward.context import ToolContext
    from codeward.workspace import Workspace

    home = tmp_path / "home"
    (home / "cache").mkdir(parents=True)
    saved = home / "cache" / "tool-schemas.json"
    saved.write_text("{}")
    monkeypatch.setenv("CODEWARD_HOME", str(home))
    cache = SchemaCache.default()
    assert cache is not None and cache.path == saved
    workspace = Workspace.create([tmp_path])  # a root that contains the data folder
    catalog = default_catalog(["files"])  # codeward itself saves its schemas there
    before = saved.read_text()
    written = catalog.call("write_file", {"path": str(saved), "content": '{"key": "x"}'}, ToolContext(workspace))
    assert written.is_error and "permission" in written.text and saved.read_text() == before
