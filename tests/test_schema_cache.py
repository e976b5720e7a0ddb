"""The tools' listing kept on disk: reused for the same build without importing a tool module,
regenerated for any other build or any damage, and the same listing either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from codeward.kernel.catalog import ToolSpec, specs_in
from codeward.kernel.schema_cache import CACHE_PREFIX, KEEP_FILES, SchemaCache, source_key
from codeward.kernel.surface import ToolInfo
from codeward.tools import TOOL_MODULES, default_catalog

SENTINEL = {"type": "object", "properties": {"from_cache": {"type": "string"}}}


def _eager_specs() -> list[ToolSpec]:
    """Every built-in tool as its module defines it (imported)."""
    import importlib

    return [spec for name in TOOL_MODULES for spec in specs_in(importlib.import_module(name))]


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "sub" / "b.py").write_text("B = 2\n")
    return package


def _saved_file(home: Path) -> Path:
    files = sorted((home / "cache").glob(f"{CACHE_PREFIX}*.json"))
    assert len(files) == 1, files
    return files[0]


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


def test_a_saved_listing_is_the_generated_one_down_to_the_definition_digests(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "listing.json"
    eager = _eager_specs()
    SchemaCache(path, "key-1").save(TOOL_MODULES, eager)
    saved = SchemaCache(path, "key-1").specs(TOOL_MODULES)
    assert saved is not None and [s.name for s in saved] == [s.name for s in eager]
    for lazy, real in zip(saved, eager, strict=True):
        assert lazy == real  # every listed field: description, toolset, hints, examples, aliases...
        assert ToolInfo.from_spec(lazy) == ToolInfo.from_spec(real)  # the schemas and the approval digest
        assert lazy.fingerprint() == real.fingerprint()
        assert lazy.code is None and not lazy.is_loaded


def test_saved_schemas_are_used_for_the_same_key_and_ignored_for_another(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "listing.json"
    SchemaCache(path, "key-1").save(TOOL_MODULES, _eager_specs())
    data = json.loads(path.read_text())
    next(t for t in data["tools"] if t["name"] == "read_file")["input"] = SENTINEL
    path.write_text(json.dumps(data))
    same_build = SchemaCache(path, "key-1").specs(TOOL_MODULES)
    assert same_build is not None
    assert next(s for s in same_build if s.name == "read_file").input_schema == SENTINEL
    assert SchemaCache(path, "key-2").specs(TOOL_MODULES) is None  # a new version: the old file is not trusted
    assert SchemaCache(path, "key-1").specs(TOOL_MODULES[:-1]) is None  # another list of modules


@pytest.mark.parametrize("damage", [
    "{not json", "[]", '{"key": "K", "tools": 3}', "",
    "drop-modules", "tool-not-object", "annotations-wrong", "input-not-object", "examples-not-objects",
    "write-paths-a-string",
])
def test_a_damaged_listing_is_ignored_and_regenerated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      damage: str) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("CODEWARD_HOME", str(home))
    default_catalog()  # generates and saves
    saved = _saved_file(home)
    data = json.loads(saved.read_text())
    entry = data["tools"][0]
    text: str | None = None
    if damage == "drop-modules":
        del data["modules"]
    elif damage == "tool-not-object":
        data["tools"][0] = "read_file"
    elif damage == "annotations-wrong":
        entry["annotations"] = {"readOnlyHint": True}
    elif damage == "input-not-object":
        entry["input"] = "any"
    elif damage == "examples-not-objects":
        entry["examples"] = ["README.md"]
    elif damage == "write-paths-a-string":
        entry["write_paths"] = "path"
    else:
        text = damage.replace('"K"', json.dumps(data["key"]))
    saved.write_text(text if text is not None else json.dumps(data))
    cache = SchemaCache.default()
    assert cache is not None and cache.specs(TOOL_MODULES) is None
    catalog = default_catalog()
    assert "read_file" in catalog and "path" in catalog.get("read_file").input_schema["properties"]  # type: ignore[union-attr]
    assert cache.specs(TOOL_MODULES) is not None  # written again, whole


def test_a_listing_naming_a_module_outside_the_catalog_is_never_imported(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the catalog's own modules are imported from the file: a planted module name is not run."""
    home = tmp_path / "home"
    monkeypatch.setenv("CODEWARD_HOME", str(home))
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "ran"
    (planted / "planted_tools.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(planted))
    default_catalog()
    saved = _saved_file(home)
    data = json.loads(saved.read_text())
    next(t for t in data["tools"] if t["name"] == "read_file")["module"] = "planted_tools"
    saved.write_text(json.dumps(data))
    catalog = default_catalog()
    spec = catalog.get("read_file")
    assert spec is not None and spec.module == "codeward.tools.files"
    assert spec.func.__module__ == "codeward.tools.files"
    assert not marker.exists() and "planted_tools" not in sys.modules


def test_an_unwritable_cache_folder_is_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    cache = SchemaCache(blocked / "listing.json", "key-1")
    cache.save(TOOL_MODULES, _eager_specs())
    assert cache.specs(TOOL_MODULES) is None


def test_each_build_keeps_its_own_file_and_old_ones_are_pruned(tmp_path: Path) -> None:
    """Two installations (a tool's virtualenv, a project's) do not evict each other's listing at every start."""
    folder = tmp_path / "cache"
    specs = [s for s in _eager_specs() if s.toolset == "files"]
    for number in range(KEEP_FILES + 3):
        path = folder / f"{CACHE_PREFIX}{number:04d}.json"
        SchemaCache(path, f"key-{number}").save(TOOL_MODULES, specs)
        os.utime(path, ns=(number * 10**9, number * 10**9))
    newest = folder / f"{CACHE_PREFIX}{KEEP_FILES + 3:04d}.json"
    SchemaCache(newest, "newest").save(TOOL_MODULES, specs)
    kept = sorted(p.name for p in folder.glob(f"{CACHE_PREFIX}*.json"))
    assert len(kept) == KEEP_FILES and newest.name in kept
    assert f"{CACHE_PREFIX}{KEEP_FILES + 2:04d}.json" in kept and f"{CACHE_PREFIX}0000.json" not in kept
    assert SchemaCache(folder / f"{CACHE_PREFIX}{KEEP_FILES + 2:04d}.json", f"key-{KEEP_FILES + 2}").specs(
        TOOL_MODULES) is not None


LAZY_PROBE = textwrap.dedent("""
    import json, sys
    from codeward.kernel.context import ToolContext
    from codeward.tools import default_catalog
    from codeward.kernel.workspace import Workspace

    catalog = default_catalog()
    before = sorted(m for m in sys.modules if m.startswith("codeward.tools."))
    outcome = catalog.call("read_file", {"path": "a.txt"}, ToolContext(Workspace.create([sys.argv[1]])))
    after = sorted(m for m in sys.modules if m.startswith("codeward.tools."))
    print(json.dumps({"tools": len(catalog), "before": before, "after": after, "text": outcome.text}))
""")


def test_a_saved_listing_builds_the_catalog_without_importing_a_tool_module(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    env = {**os.environ, "CODEWARD_HOME": str(tmp_path / "home")}

    def probe() -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", LAZY_PROBE, str(root)], env=env, capture_output=True,
                              text=True, timeout=120, check=True)
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    cold = probe()  # nothing saved: every module imported, the listing saved
    assert set(TOOL_MODULES) <= set(cold["before"])  # type: ignore[arg-type]
    warm = probe()
    assert warm["tools"] == cold["tools"]
    assert warm["before"] == []  # listed from the file alone
    assert warm["after"] == ["codeward.tools.files"]  # the first call imported its own module, nothing else
    assert "alpha" in str(warm["text"])


def _serve(root: Path, home: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                 env={**os.environ, "CODEWARD_HOME": str(home), **env}, cwd=str(root))


@pytest.mark.anyio
async def test_a_cached_listing_is_the_generated_one_through_the_official_client(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    home = tmp_path / "home"

    async def listing(**env: str) -> list[dict[str, object]]:
        async with Client(_serve(root, home, **env)) as client:
            return [tool.model_dump() for tool in (await client.list_tools()).tools]

    generated = await listing(CODEWARD_NO_SCHEMA_CACHE="1")
    assert not (home / "cache").exists()
    first = await listing()  # imports every module, generates and saves
    assert _saved_file(home).is_file()
    cached = await listing()  # lists from the saved file, no tool module imported
    assert generated == first == cached


async def _project_with_saved_listing(tmp_path: Path, name: str, text: str) -> tuple[Path, Path, set[str]]:
    """A project holding one file, served once so codeward's data folder has the saved listing (every tool
    listed: ``[server] toolsets = ["all"]``)."""
    root = tmp_path / "root"
    root.mkdir()
    (root / name).write_text(text)
    (root / "codeward.toml").write_text('[server]\ntoolsets = ["all"]\n')
    home = tmp_path / "home"
    async with Client(_serve(root, home)) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
    return root, home, listed


@pytest.mark.anyio
async def test_a_tool_listed_from_the_file_validates_and_returns_structured_output(tmp_path: Path) -> None:
    root, home, _ = await _project_with_saved_listing(tmp_path, "stock.py", "LOW_STOCK = 3\n")
    async with Client(_serve(root, home)) as client:  # the tools' modules are imported on first call
        await client.list_tools()
        wrong = await client.call_tool("search_text", {"pattern": "LOW", "limit": 0, "colour": "red"})
        assert wrong.is_error
        text = wrong.content[0].text  # type: ignore[union-attr]
        assert "invalid arguments for search_text" in text and "'colour'" in text and "'limit'" in text
        found = await client.call_tool("search_text", {"pattern": "LOW_STOCK"})  # checked against outputSchema
        assert not found.is_error and found.structured_content is not None
        assert "stock.py" in json.dumps(found.structured_content)


UNIMPORTABLE = textwrap.dedent("""
    import sys
    sys.modules["codeward.tools.web"] = None  # importing it now fails, as a missing dependency would
    from codeward.apps.cli import main
    sys.argv = ["codeward", "serve", sys.argv[1]]
    sys.exit(main())
""")


@pytest.mark.anyio
async def test_a_tool_whose_module_cannot_be_imported_says_so_and_the_others_work(tmp_path: Path) -> None:
    root, home, listed = await _project_with_saved_listing(tmp_path, "a.txt", "alpha\n")
    assert "fetch_url" in listed
    params = StdioServerParameters(command=sys.executable, args=["-c", UNIMPORTABLE, str(root)],
                                   env={**os.environ, "CODEWARD_HOME": str(home)}, cwd=str(root))
    async with Client(params) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == listed
        broken = await client.call_tool("fetch_url", {"url": "http://127.0.0.1:9/"})
        assert broken.is_error
        text = broken.content[0].text  # type: ignore[union-attr]
        assert "fetch_url" in text and "codeward.tools.web" in text and "ModuleNotFoundError" in text
        assert "reinstall codeward" in text
        fine = await client.call_tool("read_file", {"path": "a.txt"})
        assert not fine.is_error and "alpha" in fine.content[0].text  # type: ignore[union-attr]


def test_the_saved_schemas_are_out_of_every_tools_reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """They are listed to the next session's model: the agent must not be able to write them."""
    from codeward.kernel.context import ToolContext
    from codeward.kernel.workspace import Workspace

    home = tmp_path / "home"
    monkeypatch.setenv("CODEWARD_HOME", str(home))
    catalog = default_catalog(["files"])  # codeward itself saves its listing there
    cache = SchemaCache.default()
    assert cache is not None and cache.path == _saved_file(home)
    workspace = Workspace.create([tmp_path])  # a root that contains the data folder
    before = cache.path.read_text()
    written = catalog.call("write_file", {"path": str(cache.path), "content": '{"key": "x"}'}, ToolContext(workspace))
    assert written.is_error and "permission" in written.text and cache.path.read_text() == before
