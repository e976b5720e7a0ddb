"""The analysis tools through the catalog: good answers, and clear refusals that change nothing."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]

FILES = {
    "app/__init__.py": "",
    "app/core.py": '''\
        """Core of the app."""
        import os
        from app.storage import load, save

        LIMIT = 10


        class Engine:
            def start(self):
                data = load("x")
                return self.step(data)

            def step(self, data):
                return save(data)


        def fact(n):
            return 1 if n < 2 else n * fact(n - 1)


        def main():
            engine = Engine()
            engine.start()
            return fact(LIMIT)  # fact(0) in a comment
        ''',
    "app/storage.py": '''\
        def load(name):
            return _read(name)


        def _read(name):
            return open(name).read()


        def save(data):
            return data
        ''',
    "app/models.py": '''\
        from app.core import Engine


        class Base:
            pass


        class Child(Base):
            pass


        class Grand(Child):
            pass


        class Turbo(Engine):
            def step(self, data):
                return super().step(data)
        ''',
    "tools/dup_a.py": "def process():\n    return 1\n",
    "tools/dup_b.py": "def process():\n    return 2\n",
    "native/calc.c": "int twice(int x) { return x * 2; }\nint quad(int x) { return twice(twice(x)); }\n",
}


@pytest.fixture
def project(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def sources(directory: Path) -> dict[str, bytes]:
    """Every file except the index itself (which read-only tools may create)."""
    return {rel: data for rel, data in snapshot(directory).items() if not rel.startswith(".codeward")}


def error_of(outcome: ToolOutcome) -> tuple[str, str, str]:
    assert outcome.is_error, outcome.text
    error = outcome.errors[0]
    return error.kind.value, error.message, error.hint


# -- find_symbol --------------------------------------------------------------------------------


def test_find_symbol_by_name_qualname_glob_and_regex(project: Path, call: Call) -> None:
    found = call("find_symbol", name="Engine.step")
    assert not found.is_error, found.text
    assert found.structured is not None
    assert [(s["qualname"], s["path"], s["line"], s["end_line"], s["kind"]) for s in found.structured["symbols"]] == [
        ("Engine.step", "app/core.py", 13, 14, "method")]
    assert "app/core.py:13-14  method Engine.step" in found.text

    globbed = call("find_symbol", name="*.step")
    assert {s["qualname"] for s in globbed.structured["symbols"]} == {"Engine.step", "Turbo.step"}  # type: ignore[index]
    regex = call("find_symbol", name=r"^(fact|main)$", match="regex")
    assert {s["qualname"] for s in regex.structured["symbols"]} == {"fact", "main"}  # type: ignore[index]
    classes = call("find_symbol", name="*", kind="class", path="app/models.py")
    assert [s["name"] for s in classes.structured["symbols"]] == ["Base", "Child", "Grand", "Turbo"]  # type: ignore[index]
    c_function = call("find_symbol", name="twice")
    assert "native/calc.c:1  function twice" in c_function.text


def test_find_symbol_unknown_name_suggests_closest(project: Path, call: Call) -> None:
    kind, message, hint = error_of(call("find_symbol", name="Engin"))
    assert kind == "not_found" and "'Engin'" in message
    assert "Closest defined names: Engine" in hint
    kind, _message, hint = error_of(call("find_symbol", name="Engine.stpe"))
    assert kind == "not_found" and "Engine.step" in hint


@pytest.mark.parametrize(
    ("arguments", "kind", "fragment"),
    [
        ({"name": ""}, "invalid_input", "name is empty"),
        ({"name": "(", "match": "regex"}, "invalid_input", "not a valid regular expression"),
        ({"name": "main", "path": "../outside"}, "permission", "outside the workspace"),
        ({"name": "main", "path": "no/such/dir"}, "not_found", "does not exist"),
        ({"name": "main", "match": "fuzzy"}, "invalid_input", "match"),
        ({"name": "main", "limit": 0}, "invalid_input", "limit"),
    ],
)
def test_find_symbol_bad_input(project: Path, call: Call, arguments: dict[str, object], kind: str,
                               fragment: str) -> None:
    before = snapshot(project)
    got_kind, message, _hint = error_of(call("find_symbol", **arguments))
    assert got_kind == kind and fragment in message
    assert snapshot(project) == before


# -- repo_map -----------------------------------------------------------------------------------


def test_repo_map_ranks_used_definitions_within_budget(project: Path, call: Call) -> None:
    mapped = call("repo_map", path=".", max_tokens=200)
    assert not mapped.is_error, mapped.text
    header, _, body = mapped.text.partition("\n")
    assert header.startswith("Repository map of .:")
    assert len(body) <= 200 * 4
    # Engine is used by models.py and main(); load/save by core.py: they lead the map.
    first_file = body.splitlines()[0]
    assert first_file in ("app/core.py:", "app/storage.py:")
    assert "class Engine:" in body and "def load(name):" in body
    small = call("repo_map", path=".", max_tokens=64)
    assert len(small.text.partition("\n")[2]) <= 64 * 4


def test_repo_map_focus_and_scope(project: Path, call: Call) -> None:
    focused = call("repo_map", path="app", max_tokens=100, focus=["app/models.py"])
    assert not focused.is_error, focused.text
    assert "app/core.py:" in focused.text and "tools/" not in focused.text
    kind, message, _hint = error_of(call("repo_map", path="app/core.py"))
    assert kind == "invalid_input" and "is a file" in message
    kind, message, _hint = error_of(call("repo_map", path=".", focus=["../elsewhere.py"]))
    assert kind == "permission"
    kind, message, _hint = error_of(call("repo_map", path=".", max_tokens=10))
    assert kind == "invalid_input" and "max_tokens" in message


def test_repo_map_of_a_tree_without_sources(root: Path, call: Call) -> None:
    (root / "notes.txt").write_text("hello\n", encoding="utf-8")
    mapped = call("repo_map")
    assert not mapped.is_error and "no definitions indexed" in mapped.text


# -- py_find_usages -----------------------------------------------------------------------------


def test_py_find_usages_in_a_directory_uses_the_index(project: Path, call: Call) -> None:
    found = call("py_find_usages", path=".", name="fact")
    assert not found.is_error, found.text
    assert found.structured is not None
    rows = [(u["path"], u["line"], u["column"], u["definition"]) for u in found.structured["usages"]]
    assert rows == [("app/core.py", 17, 5, True), ("app/core.py", 18, 32, False), ("app/core.py", 24, 12, False)]
    assert "app/core.py:17:5: [definition] def fact(n):" in found.text
    assert "[comment/string]" not in found.text  # the mention in a comment is not code
    dotted = call("py_find_usages", path="app", name="self.step")
    assert [u["line"] for u in dotted.structured["usages"]] == [11]  # type: ignore[index]


def test_py_find_usages_in_a_file_marks_comments(project: Path, call: Call) -> None:
    found = call("py_find_usages", path="app/core.py", name="fact")
    assert not found.is_error, found.text
    rows = [(u["line"], u["column"], u["in_comment_or_string"]) for u in found.structured["usages"]]  # type: ignore[index]
    assert rows == [(17, 5, False), (18, 32, False), (24, 12, False), (24, 27, True)]
    assert "[comment/string]" in found.text


def test_py_find_usages_unknown_and_bad_names(project: Path, call: Call) -> None:
    none = call("py_find_usages", path=".", name="engin")
    assert not none.is_error and "no usages of 'engin'" in none.text
    assert "Closest defined names:" in none.text
    before = snapshot(project)
    for bad in ("1abc", "a b", "x;y", ""):
        kind, message, _hint = error_of(call("py_find_usages", path=".", name=bad))
        assert kind == "invalid_input" and "not an identifier" in message
    kind, _message, _hint = error_of(call("py_find_usages", path="/etc", name="x"))
    assert kind == "permission"
    assert snapshot(project) == before


# -- py_get_hierarchy ---------------------------------------------------------------------------


def test_py_get_hierarchy_is_transitive(project: Path, call: Call) -> None:
    tree = call("py_get_hierarchy", path=".", class_name="Base")
    assert not tree.is_error, tree.text
    assert tree.structured is not None
    assert [(e["qualname"], e["depth"], e["base"]) for e in tree.structured["subclasses"]] == [
        ("Child", 1, "Base"), ("Grand", 2, "Child")]
    assert tree.structured["defined_at"] == ["app/models.py:4"]
    assert tree.text.splitlines()[0] == "Base (app/models.py:4)"
    engine = call("py_get_hierarchy", path="app/models.py", class_name="app.core.Engine")
    assert [e["qualname"] for e in engine.structured["subclasses"]] == ["Turbo"]  # type: ignore[index]
    none = call("py_get_hierarchy", path="tools", class_name="Base")
    assert not none.is_error and "no subclasses in tools" in none.text


def test_py_get_hierarchy_unknown_class(project: Path, call: Call) -> None:
    kind, message, hint = error_of(call("py_get_hierarchy", path=".", class_name="Chlid"))
    assert kind == "not_found" and "'Chlid'" in message and "Child" in hint
    kind, _message, _hint = error_of(call("py_get_hierarchy", path=".", class_name="not a class"))
    assert kind == "invalid_input"


# -- derive_code_path ---------------------------------------------------------------------------


def test_derive_code_path_follows_calls_across_files(project: Path, call: Call) -> None:
    traced = call("derive_code_path", target="main", max_depth=3)
    assert not traced.is_error, traced.text
    root = traced.structured["root"]  # type: ignore[index]
    assert (root["qualname"], root["path"]) == ("main", "app/core.py")
    children = {c["qualname"]: c for c in root["calls"]}
    assert list(children) == ["Engine", "Engine.start", "fact"]
    start_calls = {c["qualname"]: c for c in children["Engine.start"]["calls"]}
    assert start_calls["load"]["path"] == "app/storage.py"
    assert [c["qualname"] for c in start_calls["load"]["calls"]] == ["_read"]
    assert start_calls["load"]["calls"][0]["note"] == "depth limit"
    assert start_calls["Engine.step"]["path"] == "app/core.py"
    assert [c["note"] for c in children["fact"]["calls"]] == ["recursive"]
    assert "└── " in traced.text and "app/storage.py:1-2" in traced.text


def test_derive_code_path_super_and_c(project: Path, call: Call) -> None:
    turbo = call("derive_code_path", target="Turbo.step", max_depth=1)
    assert not turbo.is_error, turbo.text
    assert [(c["qualname"], c["path"]) for c in turbo.structured["root"]["calls"]] == [  # type: ignore[index]
        ("Engine.step", "app/core.py")]
    quad = call("derive_code_path", target="native/calc.c:quad", max_depth=2)
    assert [c["qualname"] for c in quad.structured["root"]["calls"]] == ["twice"]  # type: ignore[index]


def test_derive_code_path_ambiguous_unknown_and_bad(project: Path, call: Call) -> None:
    kind, message, hint = error_of(call("derive_code_path", target="process"))
    assert kind == "conflict" and "tools/dup_a.py:process" in message and "tools/dup_b.py:process" in message
    assert "target='tools/dup_a.py:process'" in hint
    picked = call("derive_code_path", target="tools/dup_b.py:process")
    assert not picked.is_error and picked.structured["root"]["path"] == "tools/dup_b.py"  # type: ignore[index]
    kind, _message, hint = error_of(call("derive_code_path", target="mian"))
    assert kind == "not_found" and "main" in hint
    kind, _message, _hint = error_of(call("derive_code_path", target="1 + 2"))
    assert kind == "invalid_input"
    kind, _message, _hint = error_of(call("derive_code_path", target="../x.py:main"))
    assert kind == "permission"
    kind, message, _hint = error_of(call("derive_code_path", target="main", max_depth=0))
    assert kind == "invalid_input" and "max_depth" in message


# -- get_file_summary ---------------------------------------------------------------------------


def test_get_file_summary_python(project: Path, call: Call) -> None:
    summary = call("get_file_summary", path="app/core.py")
    assert not summary.is_error, summary.text
    lines = summary.text.splitlines()
    assert lines[0] == "app/core.py — Python, 24 lines"
    assert "docstring: Core of the app." in lines
    assert "imports: os, app.storage.load, app.storage.save" in lines
    assert "  Engine  L8-14: start, step" in lines
    assert "  def fact(n)  L17" in lines
    assert "  LIMIT = 10  L5" in lines


def test_get_file_summary_toml_markdown_json_and_code(root: Path, call: Call) -> None:
    (root / "conf.toml").write_text('name = "x"\n[server]\nport = 1\n[server.tls]\ncert = "c"\n[[job]]\na = 1\n'
                                    '[[job]]\na = 2\n', encoding="utf-8")
    toml = call("get_file_summary", path="conf.toml")
    assert toml.text.splitlines()[1:] == ["top-level keys: name", "tables:", "  [server] (1 key)",
                                          "  [server.tls] (1 key)", "  [[job]] (2 entries)"]
    (root / "doc.md").write_text("# Title\n\ntext\n\n```\n# not a heading\n```\n\nPart\n----\n\n### Deep\n",
                                 encoding="utf-8")
    md = call("get_file_summary", path="doc.md")
    assert md.text.splitlines()[1:] == ["headings:", "# Title  L1", "  ## Part  L9", "    ### Deep  L12"]
    (root / "data.json").write_text('{"a": [1, 2], "b": {"c": null}}', encoding="utf-8")
    js = call("get_file_summary", path="data.json")
    assert js.text.splitlines()[1:] == ["object with 2 keys:", "  a: array of 2 (number)", "  b: object (1 key)"]
    (root / "calc.c").write_text("struct p { int x; };\nint twice(int x) { return x * 2; }\n", encoding="utf-8")
    c = call("get_file_summary", path="calc.c")
    assert not c.is_error, c.text
    assert "calc.c — C, 2 lines" in c.text and "twice" in c.text and "struct p" in c.text
    (root / "notes.txt").write_text("a\nb\n", encoding="utf-8")
    assert "no structural summary" in call("get_file_summary", path="notes.txt").text


def test_get_file_summary_broken_files(root: Path, call: Call) -> None:
    (root / "bad.toml").write_text("[a\nb = 1\n", encoding="utf-8")
    (root / "bad.json").write_text("{", encoding="utf-8")
    (root / "broken.py").write_text("def ok():\n    pass\n\ndef broken(:\n", encoding="utf-8")
    before = snapshot(root)
    kind, message, _hint = error_of(call("get_file_summary", path="bad.toml"))
    assert kind == "invalid_input" and "not valid TOML" in message and "line 1" in message
    kind, message, _hint = error_of(call("get_file_summary", path="bad.json"))
    assert kind == "invalid_input" and "not valid JSON" in message
    broken = call("get_file_summary", path="broken.py")
    assert not broken.is_error and "does not parse as Python" in broken.text and "ok" in broken.text
    kind, _message, _hint = error_of(call("get_file_summary", path="."))
    assert kind == "invalid_input"
    kind, _message, _hint = error_of(call("get_file_summary", path="missing.py"))
    assert kind == "not_found"
    kind, _message, _hint = error_of(call("get_file_summary", path="/etc/hostname"))
    assert kind == "permission"
    assert snapshot(root) == before


def test_index_follows_edits_between_calls(project: Path, call: Call) -> None:
    assert not call("find_symbol", name="save").is_error
    storage = project / "app" / "storage.py"
    storage.write_text(storage.read_text(encoding="utf-8").replace("def save(", "def store("), encoding="utf-8")
    assert call("find_symbol", name="save").is_error
    assert "app/storage.py:9-10" in call("find_symbol", name="store").text
    assert sources(project) == {rel: data for rel, data in snapshot(project).items()
                                if not rel.startswith(".codeward")}


def test_allowed_file_outside_the_roots_is_not_indexed(project: Path, tmp_path: Path, catalog: object) -> None:
    from codeward.kernel.catalog import Catalog
    from codeward.kernel.context import ToolContext
    from codeward.kernel.workspace import Workspace

    lone = tmp_path / "lone.py"
    lone.write_text("def solo():\n    return 1\n", encoding="utf-8")
    ctx = ToolContext(Workspace.create([project], files=[lone]))
    assert isinstance(catalog, Catalog)
    outcome = catalog.call("find_symbol", {"name": "solo", "path": str(lone)}, ctx)
    assert outcome.is_error and "outside the workspace roots" in outcome.text
    summary = catalog.call("get_file_summary", {"path": str(lone)}, ctx)
    assert not summary.is_error and "def solo()" in summary.text
