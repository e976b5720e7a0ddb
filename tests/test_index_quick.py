"""The symbol index's quick tier: a cold ``refresh(references=False)`` takes definitions from universal-ctags.

Every test runs real ctags processes on trees of at least ``POOL_MIN_FILES`` source files written
here, and checks what the quick tier answers against an exact (tree-sitter) index of the same tree.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from codeward.engines.code_intel.index_rows import Symbol
from codeward.engines.code_intel.symbol_index import POOL_MIN_FILES, SymbolIndex
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot

CTAGS_NAMES = ("ctags-universal", "universal-ctags", "ctags")


def _universal_ctags() -> str | None:
    for name in CTAGS_NAMES:
        executable = shutil.which(name)
        if executable is None:
            continue
        done = subprocess.run([executable, "--version"], capture_output=True, text=True, check=False, timeout=10)
        if done.stdout.startswith("Universal Ctags"):
            return executable
    return None


CTAGS = _universal_ctags()
pytestmark = pytest.mark.skipif(CTAGS is None, reason="universal-ctags is not installed (scripts/test installs it "
                                                      "with apt: package universal-ctags)")

PY_MODULE = '''\
"""Module {i}."""
import functools

LIMIT_{i} = {i}
name_{i}: str = "m{i}"


class Widget{i}(object):
    """A widget."""

    class Inner{i}:
        def inner_method(self):
            return 1

    def get_value(self):
        return {i}

    async def fetch_{i}(self):
        return None

    @property
    def size(self):
        return 3

    @staticmethod
    @functools.cache
    def build(x, y):
        return x + y


class Request{i}Handler(Widget{i}):
    def handle(self, request):
        return request


@functools.lru_cache(maxsize=None)
def get_item_{i}(key):
    return key


async def run_{i}(arg):
    return arg


def helper_{i}(a, b=2, *args, **kw):
    def nested_{i}():
        return a
    return nested_{i}
'''

UNICODE_MODULE = '''\
def Ärger():
    pass


class Ünïcode:
    def méthode(self):
        return 名前


名前 = 1
'''

HEADER = '''\
#pragma once
#define MAX_{i} {i}
#define SQUARE_{i}(x) ((x) * (x))

namespace geo{i} {{

typedef unsigned long size_type_{i};

enum Color{i} {{ RED_{i}, GREEN_{i} }};

struct Point{i} {{
    int x;
    int y;
}};

class Shape{i} {{
public:
    Shape{i}() {{}}
    int area() const {{ return 0; }}
    void move(int dx, int dy);
    class Edge {{
    public:
        int length() const {{ return 1; }}
    }};
}};

class Circle{i} : public Shape{i} {{
public:
    double radius() const {{ return 1.0; }}
}};

int count_shapes_{i}(int n);

inline int twice_{i}(int n) {{ return 2 * n; }}

template <typename T>
T clamp_{i}(T value) {{ return value; }}

}}  // namespace geo{i}
'''

SOURCE = '''\
#include "geo{i}.hpp"

namespace geo{i} {{

void Shape{i}::move(int dx, int dy) {{
}}

int count_shapes_{i}(int n) {{
    return n;
}}

}}  // namespace geo{i}
'''

PYTHON_FILES = 70
CPP_FILES = 6
"""The agreement tree: 70 Python modules, 6 headers and 6 sources, and 2 more files (84 in all)."""
TREE_FILES = POOL_MIN_FILES + 2 * 2 + 2
"""Other tests' trees (the defaults of make_tree): just over the quick tier's threshold."""
Key = tuple[str, str, str, str, int]


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_tree(root: Path, python_files: int = POOL_MIN_FILES, cpp_files: int = 2) -> None:
    """Python modules spread over ``pkg0``..``pkg3`` and ``pkg1_extra`` (a name ``pkg1`` is a prefix of),
    C++ headers and sources, one module with non-ASCII names, and a Swift file (a language ctags lacks)."""
    for i in range(python_files):
        folder = "pkg1_extra" if i % 10 == 9 else f"pkg{i % 4}"
        write(root, f"{folder}/mod{i}.py", PY_MODULE.format(i=i))
    for i in range(cpp_files):
        write(root, f"include/geo{i}.hpp", HEADER.format(i=i))
        write(root, f"src/geo{i}.cpp", SOURCE.format(i=i))
    write(root, "pkg0/unicode_names.py", UNICODE_MODULE)
    write(root, "app/Main.swift", "class SwiftThing {\n    func swiftMethod() {}\n}\n")


def open_index(workspace: Workspace, db_path: Path | None = None) -> SymbolIndex:
    opened = SymbolIndex.open(workspace, db_path=db_path)
    assert opened.ok, opened.error_text()
    return opened.data


def exact_index(workspace: Workspace, db_path: Path) -> SymbolIndex:
    """An index of the same tree built by tree-sitter only (a full refresh never uses ctags)."""
    index = open_index(workspace, db_path)
    index.refresh(workers=1)
    return index


def quick_index(workspace: Workspace) -> SymbolIndex:
    """The default index, built cold the way ``find_symbol`` builds it; asserts the quick tier was used."""
    index = open_index(workspace)
    stats = index.refresh(references=False, workers=1)
    assert stats.definitions_only > 0, stats.describe()
    assert list(index.quick_dir.glob("*.tags")), "no tag files were written"
    return index


def key(symbol: Symbol) -> Key:
    return (symbol.name, symbol.qualname, symbol.kind, symbol.path, symbol.name_line)


def found(index: SymbolIndex, query: str, **options: object) -> list[Symbol]:
    symbols, total = index.find(query, limit=100_000, **options)  # type: ignore[arg-type]
    assert total == len(symbols)
    return symbols


def keys(symbols: Iterable[Symbol]) -> list[Key]:
    """Sorted, duplicates kept: a definition answered by both tiers would show twice."""
    return sorted(key(symbol) for symbol in symbols)


def everything(index: SymbolIndex) -> list[Symbol]:
    return found(index, ".", mode="regex")


def assert_documented_differences(root: Path, quick: list[Symbol], exact: list[Symbol]) -> None:
    """Beyond the keys, a quick definition differs from the exact one only where documented:
    its range starts at the name's line (no decorators, no ``template<>``), its signature is that line."""
    files: dict[str, list[str]] = {}

    def line_of(symbol: Symbol, line: int) -> str:
        if symbol.path not in files:
            files[symbol.path] = (root / symbol.path).read_text(encoding="utf-8").splitlines()
        return files[symbol.path][line - 1]

    exact_by_key = {key(symbol): symbol for symbol in exact}
    for symbol in quick:
        if symbol.id != 0:
            continue
        twin = exact_by_key[key(symbol)]
        assert symbol.line == symbol.name_line, symbol
        assert (symbol.end_line, symbol.parent, symbol.bases) == (twin.end_line, twin.parent, twin.bases), symbol
        # The signature is the name's line: cut at ``{`` outside Python, spaces collapsed.
        text = line_of(symbol, symbol.name_line)
        expected = " ".join((text if symbol.language == "python" else text.split("{", 1)[0]).split())
        assert symbol.signature and symbol.signature == expected, symbol
        prefix = [line_of(twin, line).strip() for line in range(twin.line, twin.name_line)]
        if symbol.language == "python":
            assert all(text.startswith("@") for text in prefix), (twin, prefix)
        else:
            assert not prefix or (len(prefix) == 1 and prefix[0].startswith("template")), (twin, prefix)


def closest_from_hint(text: str) -> list[str]:
    hint = text.split("Closest defined names: ", 1)[1]
    return hint.split(". Check the spelling", 1)[0].split(", ")


@pytest.fixture(autouse=True)
def _ctags_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEWARD_INDEX_CTAGS", raising=False)


# -- 1. agreement ----------------------------------------------------------------------------

QUERIES: tuple[tuple[str, dict[str, object]], ...] = (
    ("get_value", {}),
    ("Widget3.get_value", {}),
    ("Widget3.Inner3.inner_method", {}),
    ("Widget3::Inner3::inner_method", {}),
    ("geo3::Shape3::area", {}),
    ("geo3.Shape3.Edge.length", {}),
    ("Shape3", {}),
    ("Circle3", {}),
    ("LIMIT_3", {}),
    ("name_3", {}),
    ("size", {}),
    ("build", {}),
    ("get_item_3", {}),
    ("fetch_3", {}),
    ("run_3", {}),
    ("nested_3", {}),
    ("helper_3.nested_3", {}),
    ("MAX_3", {}),
    ("SQUARE_3", {}),
    ("size_type_3", {}),
    ("Color3", {}),
    ("RED_3", {}),
    ("Point3", {}),
    ("count_shapes_3", {}),
    ("twice_3", {}),
    ("clamp_3", {}),
    ("geo3", {}),
    ("move", {}),
    ("Ärger", {}),
    ("Ünïcode.méthode", {}),
    ("名前", {}),
    ("SwiftThing", {}),
    ("no_such_name", {}),
    ("get_*", {}),
    ("get_item_1?", {}),
    ("Widget1*", {}),
    ("twice_[0-4]", {}),
    ("[A-Z]*_3", {}),
    ("*Handler", {}),
    ("*_1?", {}),
    ("?ize", {}),
    ("*", {}),
    ("Widget3.*", {}),
    ("geo3.*", {}),
    ("*.get_value", {}),
    (r"^Widget3\.", {"mode": "regex"}),
    ("Handler$", {"mode": "regex"}),
    (r"geo\d+\.Shape\d+\.area", {"mode": "regex"}),
    (r"_1\d$", {"mode": "regex"}),
    ("get_value", {"mode": "glob"}),
    ("Widget3", {"mode": "exact"}),
    ("get_*", {"kinds": ["method"]}),
    ("get_*", {"kinds": ["function"]}),
    ("*", {"kinds": ["macro", "typedef"]}),
    ("*", {"kinds": ["class"]}),
    ("Shape3", {"kinds": ["method"]}),
    ("get_value", {"under": "pkg1"}),
    ("*", {"under": "pkg1_extra"}),
    ("*", {"under": "include"}),
    ("get_item_1", {"under": "pkg1/mod1.py"}),
    ("count_shapes_3", {"under": "src"}),
    ("*", {"language": "cpp"}),
    ("get_*", {"language": "python"}),
    ("*Thing", {"language": "swift"}),
    ("*", {"language": "python", "kinds": ["variable"], "under": "pkg2"}),
)


@pytest.fixture(scope="module")
def both_tiers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SymbolIndex, SymbolIndex]:
    root = tmp_path_factory.mktemp("agreement") / "project"
    make_tree(root, PYTHON_FILES, CPP_FILES)
    workspace = Workspace.create([root])
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("CODEWARD_INDEX_CTAGS", raising=False)
        quick = quick_index(workspace)
    exact = exact_index(workspace, root.parent / "exact.sqlite")
    return root, quick, exact


@pytest.mark.parametrize(("query", "options"), QUERIES, ids=[f"{q}-{sorted(o.items())}" for q, o in QUERIES])
def test_quick_tier_answers_as_the_exact_index(
    both_tiers: tuple[Path, SymbolIndex, SymbolIndex], query: str, options: dict[str, object]
) -> None:
    root, quick, exact = both_tiers
    quick_found = found(quick, query, **options)
    exact_found = found(exact, query, **options)
    assert keys(quick_found) == keys(exact_found)
    assert_documented_differences(root, quick_found, exact_found)
    # The quick tier really answered: ctags' languages have no exact rows at all.
    assert all((symbol.id == 0) == (symbol.language != "swift") for symbol in quick_found)
    assert all(symbol.id != 0 for symbol in exact_found)


def test_every_definition_and_every_name_agree(both_tiers: tuple[Path, SymbolIndex, SymbolIndex]) -> None:
    """All definitions, then each name by exact lookup (binary search) and by its two-letter prefix glob."""
    root, quick, exact = both_tiers
    quick_all, exact_all = everything(quick), everything(exact)
    assert len(exact_all) > 1000
    assert keys(quick_all) == keys(exact_all)
    assert_documented_differences(root, quick_all, exact_all)
    decorated = [s for s in exact_all if s.line < s.name_line]
    assert {s.name for s in decorated} == {"size", "build", *(f"get_item_{i}" for i in range(PYTHON_FILES)),
                                           *(f"clamp_{i}" for i in range(CPP_FILES))}
    for name in sorted({symbol.name for symbol in exact_all}):
        assert keys(found(quick, name, mode="exact")) == keys(s for s in exact_all if s.name == name), name
    for prefix in sorted({symbol.name[:2] for symbol in exact_all}):
        glob = "".join(f"[{char}]" if char in "*?[" else char for char in prefix) + "*"
        assert keys(found(quick, glob)) == keys(s for s in exact_all if s.name.startswith(prefix)), glob


def test_counts_and_closest_names_of_the_quick_tier(both_tiers: tuple[Path, SymbolIndex, SymbolIndex]) -> None:
    _root, quick, exact = both_tiers
    assert quick.counts()["files"] == exact.counts()["files"] == PYTHON_FILES + 2 * CPP_FILES + 2
    assert quick.counts()["definitions"] == exact.counts()["definitions"]
    assert quick.counts()["identifiers"] < exact.counts()["identifiers"]  # only the Swift file's, tagged exactly
    assert quick.files_using("get_value") == [] and len(exact.files_using("get_value")) == PYTHON_FILES
    assert quick.files_using("swiftMethod") == exact.files_using("swiftMethod") == [("app/Main.swift", 1)]
    assert quick.closest_names("get_valeu")[0] == exact.closest_names("get_valeu")[0] == "get_value"
    assert quick.closest_names("Widget3.get_valeu")[0] == "Widget3.get_value"
    assert quick.closest_names("geo3::Shape3::aera")[0] == "geo3.Shape3.area"


def test_closest_names_keep_to_the_language(both_tiers: tuple[Path, SymbolIndex, SymbolIndex]) -> None:
    _root, quick, exact = both_tiers
    assert exact.closest_names("Shape3", language="python") == []
    assert exact.closest_names("get_valeu", language="cpp") == []
    assert quick.closest_names("Shape3", language="python") == []
    assert quick.closest_names("get_valeu", language="cpp") == []


def test_a_scope_with_a_trailing_slash(both_tiers: tuple[Path, SymbolIndex, SymbolIndex]) -> None:
    _root, quick, exact = both_tiers
    expected = keys(found(exact, "get_value", under="pkg1/"))
    assert expected and keys(found(quick, "get_value", under="pkg1/")) == expected


OTHER_LANGUAGES: dict[str, str] = {
    "other/server.go": "package main\n\ntype Server struct{ port int }\n\n"
                       "func (s *Server) Start() error { return nil }\n\n"
                       "func NewServer() *Server { return &Server{} }\n",
    "other/ctl.php": "<?php\nnamespace App;\nclass Ctl {\n    public function index() {}\n}\n"
                     "function php_helper() {}\n",
    "other/M.java": "package a;\npublic class M {\n    public void run() {}\n"
                    "    static class Nested {\n        void go() {}\n    }\n}\n",
    "other/shapes.ts": "class Square {\n  area(): number { return 1; }\n}\n"
                       "function makeSquare(): Square {\n  return new Square();\n}\n",
    "other/animal.js": "class Animal {\n  speak() { return 1; }\n}\nfunction bark() {}\n",
    "other/point.rs": "pub struct Point { x: i32 }\nimpl Point {\n    pub fn new() -> Point { Point { x: 0 } }\n}\n"
                      "pub fn free_fn() {}\n",
    "other/svc.cs": "namespace App {\n  public class Svc {\n    public void Run() {}\n  }\n}\n",
    "other/thing.rb": "module Outer\n  class Thing\n    def act; end\n  end\nend\ndef top_level; end\n",
    "other/kls.kt": "class Kls {\n    fun act() {}\n}\nfun topFun() {}\n",
}


@pytest.fixture(scope="module")
def other_languages(tmp_path_factory: pytest.TempPathFactory) -> tuple[SymbolIndex, SymbolIndex]:
    root = tmp_path_factory.mktemp("languages") / "project"
    make_tree(root, python_files=POOL_MIN_FILES, cpp_files=0)
    for rel, text in OTHER_LANGUAGES.items():
        write(root, rel, text)
    workspace = Workspace.create([root])
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("CODEWARD_INDEX_CTAGS", raising=False)
        quick = quick_index(workspace)
    return quick, exact_index(workspace, root.parent / "exact.sqlite")


@pytest.mark.parametrize(("query", "options"), [
    pytest.param("Server.Start", {}, id="go-method"),
    pytest.param("Ctl.index", {}, id="php-method"),
    pytest.param("Server.*", {}, id="go-dotted-glob"),
    pytest.param(r"^Server\.St", {"mode": "regex"}, id="go-anchored-regex"),
    pytest.param("Ctl.*", {}, id="php-dotted-glob"),
    pytest.param(r"^Ctl\.ind", {"mode": "regex"}, id="php-anchored-regex"),
    pytest.param("M.Nested.go", {}, id="java-nested"),
    pytest.param("Square.area", {}, id="typescript-method"),
    pytest.param("makeSquare", {"kinds": ["function"]}, id="typescript-function"),
    pytest.param("Animal.speak", {}, id="javascript-method"),
    pytest.param("bark", {"kinds": ["function"]}, id="javascript-function"),
    pytest.param("Point.new", {}, id="rust-impl-method"),
    pytest.param("free_fn", {"kinds": ["function"]}, id="rust-function"),
    pytest.param("App.Svc.Run", {}, id="csharp-method"),
    pytest.param("Outer.Thing.act", {}, id="ruby-method"),
    pytest.param("top_level", {"kinds": ["function"]}, id="ruby-function"),
    pytest.param("Kls.act", {}, id="kotlin-method"),
    pytest.param("topFun", {"kinds": ["function"]}, id="kotlin-function"),
])
def test_other_languages_answer_as_the_exact_index(
    other_languages: tuple[SymbolIndex, SymbolIndex], query: str, options: dict[str, object]
) -> None:
    quick, exact = other_languages
    expected = found(exact, query, **options)
    assert expected, f"the exact index finds no {query!r}: the fixture is wrong"
    answered = found(quick, query, **options)
    assert keys(answered) == keys(expected)
    assert all(symbol.id == 0 and symbol.signature for symbol in answered)


# -- 2. staleness ----------------------------------------------------------------------------


def change_tree(root: Path) -> None:
    """Rename get_item_5 (mtime moved), delete module 6, add a module."""
    changed = root / "pkg1" / "mod5.py"
    changed.write_text(changed.read_text(encoding="utf-8").replace("get_item_5", "fetch_thing_5"), encoding="utf-8")
    os.utime(changed, ns=(1_000_000_000, 1_000_000_000))
    (root / "pkg2" / "mod6.py").unlink()
    write(root, "pkg3/brand_new.py", "class Fresh:\n    def get_value(self):\n        return 0\n\n\n"
                                     "def brand_new():\n    return 1\n")


def test_a_refresh_re_tags_changed_files_exactly(root: Path, tmp_path: Path) -> None:
    make_tree(root)
    workspace = Workspace.create([root])
    with quick_index(workspace) as index:
        assert found(index, "get_item_5")[0].id == 0
        change_tree(root)
        stats = index.refresh(references=False, workers=1)
        assert (stats.parsed, stats.removed, stats.definitions_only) == (2, 1, 0)
        assert found(index, "get_item_5") == []
        renamed = found(index, "fetch_thing_5")
        assert [(s.qualname, s.path, s.line, s.name_line) for s in renamed] == [
            ("fetch_thing_5", "pkg1/mod5.py", 36, 37)]
        assert renamed[0].id != 0
        assert all(s.id != 0 for s in found(index, "*", under="pkg1/mod5.py"))
        assert found(index, "get_item_6") == found(index, "Widget6") == found(index, "*", under="pkg2/mod6.py") == []
        assert [(s.qualname, s.id != 0) for s in found(index, "brand_new")] == [("brand_new", True)]
        untouched = found(index, "get_item_7")
        assert [(s.path, s.id) for s in untouched] == [("pkg3/mod7.py", 0)]
        assert index.quick_dir.is_dir()
        with exact_index(workspace, tmp_path / "exact.sqlite") as exact:
            for query in ("get_value", "Widget5.*", "*_5", "*_6", "*", "Fresh.get_value"):
                assert keys(found(index, query)) == keys(found(exact, query)), query
            assert keys(everything(index)) == keys(everything(exact))
        assert index.refresh(references=False, workers=1).parsed == 0


def test_counts_after_a_refresh_do_not_count_stale_tag_lines(root: Path, tmp_path: Path) -> None:
    make_tree(root)
    workspace = Workspace.create([root])
    with quick_index(workspace) as index:
        change_tree(root)
        index.refresh(references=False, workers=1)
        with exact_index(workspace, tmp_path / "exact.sqlite") as exact:
            assert index.counts()["definitions"] == exact.counts()["definitions"]


# -- 3. retirement ---------------------------------------------------------------------------


def test_a_full_refresh_retires_the_quick_tier(root: Path) -> None:
    make_tree(root)
    workspace = Workspace.create([root])
    queries = ("get_value", "Widget3.get_value", "geo3::Shape3::area", "get_*", "*Handler", "*")
    with quick_index(workspace) as index:
        before = {query: keys(found(index, query)) for query in queries}
        stats = index.refresh(workers=1)
        assert stats.parsed == TREE_FILES - 1  # every file but the Swift one, tagged exactly already
        assert not index.quick_dir.exists()
        counts = index.counts()
        assert counts["identifiers"] > 0 and counts["definitions"] == len(everything(index))
        for query in queries:
            after = found(index, query)
            assert keys(after) == before[query], query
            assert all(symbol.id != 0 for symbol in after)
        decorated = found(index, "get_item_3")[0]
        assert (decorated.line, decorated.name_line) == (36, 37)  # the decorator's line, now
        assert index.files_using("get_item_3") == [("pkg3/mod3.py", 1)]
        assert index.refresh(workers=1).parsed == 0


def test_find_usages_after_find_symbol_retires_the_quick_tier(
    root: Path, call: Callable[..., ToolOutcome], workspace: Workspace
) -> None:
    make_tree(root, python_files=POOL_MIN_FILES, cpp_files=0)
    first = call("find_symbol", name="get_item_3")
    assert not first.is_error, first.text
    with open_index(workspace) as index:
        assert index.quick_dir.is_dir() and index.files_using("nested_3") == []
    usages = call("py_find_usages", path=".", name="nested_3")
    assert not usages.is_error, usages.text
    assert usages.structured is not None and usages.structured["total"] == 2
    with open_index(workspace) as index:
        assert not index.quick_dir.exists() and index.counts()["identifiers"] > 0
    again = call("find_symbol", name="get_item_3")
    assert again.structured == {**(first.structured or {}), "symbols": [
        {**entry, "line": entry["line"] - 1} for entry in (first.structured or {})["symbols"]]}
    # Only the quick tier's answer says where it came from (ranges without decorators).
    assert "from the quick index (universal-ctags)" in first.text
    assert "quick index" not in again.text


# -- 4. safety -------------------------------------------------------------------------------


def test_repository_and_user_ctags_options_are_ignored(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CTAGS is not None
    make_tree(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, "secret.py", "def secret_outside():\n    pass\n")
    (root / "linked.py").symlink_to(elsewhere / "secret.py")
    (root / "linked_dir").symlink_to(elsewhere)
    home, config = tmp_path / "home", tmp_path / "config"
    hostile = f"-f{outside / 'redirected.tags'}\n--append=yes\n--exclude=*\n--languages=-all\n"
    for folder in (root / ".ctags.d", root / "ctags.d", home / ".ctags.d", config / "ctags"):
        write(folder, "evil.ctags", hostile)
    write(root, ".ctags", hostile)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    for variable in ("CTAGS", "ETAGS"):
        monkeypatch.setenv(variable, f"-f{outside / 'from_env.tags'} --append=yes --exclude=*")
    monkeypatch.chdir(root)
    # The fixture bites: a plain ctags run in this environment writes outside the tree.
    subprocess.run([CTAGS, "pkg0/mod0.py"], capture_output=True, check=False, timeout=30)
    assert (outside / "redirected.tags").exists()
    (outside / "redirected.tags").unlink()
    (root / "tags").unlink(missing_ok=True)
    tree_before, elsewhere_before = snapshot(root), snapshot(elsewhere)

    workspace = Workspace.create([root])
    with quick_index(workspace) as index:
        assert list(outside.iterdir()) == []
        assert snapshot(elsewhere) == elsewhere_before
        tree_after = snapshot(root)
        assert {rel: data for rel, data in tree_after.items() if not rel.startswith(".codeward/")} == tree_before
        assert found(index, "secret_outside") == []
        with exact_index(workspace, tmp_path / "exact.sqlite") as exact:
            quick_all, exact_all = everything(index), everything(exact)
            assert keys(quick_all) == keys(exact_all) and len(exact_all) > 1000
            assert_documented_differences(root, quick_all, exact_all)


# -- 5. fallback -----------------------------------------------------------------------------


def fake_ctags(directory: Path, body: str) -> None:
    """Shell scripts named as every universal-ctags executable, first on PATH."""
    directory.mkdir()
    for name in CTAGS_NAMES:
        script = directory / name
        script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
        script.chmod(0o755)


FAILING_CTAGS = """\
for arg in "$@"; do
  if [ "$arg" = "--version" ]; then echo "Universal Ctags 6.0.0, Copyright (C) 2015 Universal Ctags Team"; exit 0; fi
done
exit 1
"""


def test_a_failing_ctags_falls_back_to_an_exact_build(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(root)
    fake_ctags(tmp_path / "bin", FAILING_CTAGS)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    workspace = Workspace.create([root])
    with open_index(workspace) as index:
        stats = index.refresh(references=False, workers=1)
        assert stats.definitions_only == 0 and stats.parsed == stats.scanned == TREE_FILES
        assert not stats.failed
        assert list(index.quick_dir.glob("*.tags")) == []
        assert index.counts()["identifiers"] > 0
        with exact_index(workspace, tmp_path / "exact.sqlite") as exact:
            symbols = everything(index)
            assert all(symbol.id != 0 for symbol in symbols)
            assert [(s.qualname, s.path, s.line, s.end_line, s.signature) for s in symbols] == [
                (s.qualname, s.path, s.line, s.end_line, s.signature) for s in everything(exact)]


def test_chunks_ctags_fails_on_are_tagged_exactly(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ctags fails on Python chunks only: Python files come out exact, C++ ones from the tag files."""
    assert CTAGS is not None
    make_tree(root, cpp_files=20)
    fake_ctags(tmp_path / "bin", 'for arg in "$@"; do\n  case "$arg" in --language-force=Python) exit 1;; esac\n'
                                 f"done\nexec {shlex.quote(CTAGS)} \"$@\"\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    workspace = Workspace.create([root])
    with quick_index(workspace) as index:
        symbols = everything(index)
        assert {s.language for s in symbols if s.id == 0} == {"cpp"}
        assert {s.language for s in symbols if s.id != 0} == {"python", "swift"}
        with exact_index(workspace, tmp_path / "exact.sqlite") as exact:
            exact_all = everything(exact)
            assert keys(symbols) == keys(exact_all)
            assert_documented_differences(root, symbols, exact_all)


def test_ctags_can_be_turned_off(root: Path) -> None:
    make_tree(root)
    with open_index(Workspace.create([root])) as index:
        stats = index.refresh(references=False, workers=1, ctags=False)
        assert stats.definitions_only == 0 and stats.parsed == TREE_FILES
        assert not index.quick_dir.exists()
        assert index.counts()["identifiers"] > 0
        assert all(symbol.id != 0 for symbol in everything(index))


def test_a_small_tree_is_built_exactly(root: Path) -> None:
    make_tree(root, python_files=POOL_MIN_FILES - 5, cpp_files=1)  # 63 indexable files
    with open_index(Workspace.create([root])) as index:
        stats = index.refresh(references=False, workers=1)
        assert stats.scanned == POOL_MIN_FILES - 1 and stats.definitions_only == 0
        assert not index.quick_dir.exists()
        assert all(symbol.id != 0 for symbol in everything(index))


# -- 6. the find_symbol tool -----------------------------------------------------------------


def test_find_symbol_on_a_cold_tree_uses_the_quick_tier(
    root: Path, call: Callable[..., ToolOutcome], workspace: Workspace
) -> None:
    make_tree(root)
    before = snapshot(root)
    outcome = call("find_symbol", name="Widget3::get_value")
    assert not outcome.is_error, outcome.text
    assert outcome.structured == {"query": "Widget3::get_value", "total": 1, "symbols": [
        {"name": "get_value", "qualname": "Widget3.get_value", "kind": "method", "path": "pkg3/mod3.py",
         "line": 15, "end_line": 16, "language": "python", "signature": "def get_value(self):", "bases": []}]}
    assert "pkg3/mod3.py:15-16  method Widget3.get_value  │ def get_value(self):" in outcome.text
    assert {rel: data for rel, data in snapshot(root).items() if not rel.startswith(".codeward/")} == before
    with open_index(workspace) as index:
        assert index.quick_dir.is_dir() and index.files_using("get_value") == []

    handlers = call("find_symbol", name="*Handler", kind="class", path="pkg1")
    assert not handlers.is_error, handlers.text
    assert handlers.structured is not None
    expected = sorted(f"Request{i}Handler" for i in range(POOL_MIN_FILES) if i % 4 == 1 and i % 10 != 9)
    assert sorted(entry["qualname"] for entry in handlers.structured["symbols"]) == expected
    assert {entry["bases"][0] for entry in handlers.structured["symbols"]} == {
        name.replace("Request", "Widget").replace("Handler", "") for name in expected}

    decorated = call("find_symbol", name="build", path="pkg2/mod2.py")
    assert decorated.structured is not None
    assert [(e["line"], e["end_line"], e["signature"]) for e in decorated.structured["symbols"]] == [
        (27, 28, "def build(x, y):")]

    missing = call("find_symbol", name="get_valeu")
    assert missing.is_error and "no definition matches 'get_valeu'" in missing.text
    suggested = closest_from_hint(missing.text)
    assert suggested[0] == "get_value"
    with open_index(workspace) as index:  # drawn from the tag files: no exact rows exist for them
        for name in suggested:
            assert found(index, name) and all(symbol.id == 0 for symbol in found(index, name)), name
    dotted = call("find_symbol", name="geo1::Shape1::aera")
    assert dotted.is_error and closest_from_hint(dotted.text)[0] == "geo1.Shape1.area"


def test_suggestions_after_a_change_do_not_name_what_is_gone(
    root: Path, call: Callable[..., ToolOutcome]
) -> None:
    make_tree(root)
    assert not call("find_symbol", name="get_item_5").is_error
    change_tree(root)
    for gone in ("get_item_5", "get_item_6"):
        missing = call("find_symbol", name=gone)
        assert missing.is_error, missing.text
        assert gone not in closest_from_hint(missing.text), missing.text


# -- 7. unusual file names -------------------------------------------------------------------

ODD_NAMES = ("sp ace.py", "ünï.py", 'semi;"colon.py', "-rf.py", "dir with space/x.py", "tab\there.py")


def test_odd_file_names_are_indexed(root: Path, tmp_path: Path) -> None:
    make_tree(root, cpp_files=0)
    for number, rel in enumerate(ODD_NAMES):
        write(root, rel, f"def odd_{number}():\n    pass\n")
    workspace = Workspace.create([root])
    with quick_index(workspace) as index, exact_index(workspace, tmp_path / "exact.sqlite") as exact:
        for number, rel in enumerate(ODD_NAMES):
            symbols = found(index, f"odd_{number}")
            assert [(s.qualname, s.path, s.line, s.end_line) for s in symbols] == [(f"odd_{number}", rel, 1, 2)]
            assert keys(symbols) == keys(found(exact, f"odd_{number}"))
            assert symbols[0].signature == f"def odd_{number}():"
            # ctags cannot take a tab in a listed path: that file is tagged exactly.
            assert (symbols[0].id != 0) == ("\t" in rel), rel
        assert keys(everything(index)) == keys(everything(exact))


def test_a_backslash_in_a_file_name(root: Path) -> None:
    make_tree(root, cpp_files=0)
    write(root, "back\\slash.py", "def in_backslash_file():\n    pass\n")
    with quick_index(Workspace.create([root])) as index:
        assert [(s.qualname, s.path) for s in found(index, "in_backslash_file")] == [
            ("in_backslash_file", "back\\slash.py")]


def test_a_file_name_that_is_not_utf8(root: Path) -> None:
    make_tree(root, cpp_files=0)
    try:
        with open(os.fsencode(root) + b"/bad\xff.py", "wb") as handle:
            handle.write(b"def in_undecodable_file():\n    pass\n")
    except OSError as exc:
        pytest.skip(f"this filesystem refuses non-UTF-8 names: {exc}")
    workspace = Workspace.create([root])
    with SymbolIndex.open(workspace).data as index:
        stats = index.refresh(references=False, workers=1)
        # SQLite stores text as UTF-8: the file is left out, said so with the fix, and the rest is indexed.
        assert [failure for failure in stats.failed if "not valid UTF-8" in failure] == [
            "b'bad\\xff.py': the file name is not valid UTF-8, which the index cannot store; "
            "rename the file to index it"]
        assert found(index, "in_undecodable_file") == []
        assert found(index, "get_item_5")
        assert index.refresh().failed == stats.failed


def test_a_cancelled_quick_build_leaves_nothing_and_the_next_one_completes(root: Path) -> None:
    make_tree(root)
    workspace = Workspace.create([root])
    cancelled = threading.Event()
    cancelled.set()
    with open_index(workspace) as index:
        stats = index.refresh(references=False, cancelled=cancelled)
        assert stats.cancelled and stats.definitions_only == 0
        assert not index.quick_dir.exists()
        assert index.counts()["files"] == 0 and found(index, "get_item_5") == []
        again = index.refresh(references=False)
        assert not again.cancelled and again.definitions_only > 0
        assert [(s.path, s.id) for s in found(index, "get_item_5")] == [("pkg1/mod5.py", 0)]
        assert not list(index.quick_dir.glob("*.list")), "ctags' file lists are removed"


def test_a_form_feed_does_not_shift_a_quick_signature(root: Path) -> None:
    make_tree(root, cpp_files=0)
    write(root, "paged.py", "# page one\x0cpage two\ndef after_the_break():\n    pass\n")
    with quick_index(Workspace.create([root])) as index:
        [symbol] = found(index, "after_the_break")
        assert (symbol.id, symbol.line, symbol.signature) == (0, 2, "def after_the_break():")
