"""py_find_references and py_rename_symbol: scope-aware (a method, not every name alike), gated, all or nothing."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from tests.conftest import every_tool_env, snapshot

Call = Callable[..., ToolOutcome]

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/jobs.py": (
        "class Job:\n"
        "    def run(self) -> int:\n"
        "        return 1\n"
        "\n"
        "\n"
        "class Timer:\n"
        "    def run(self) -> int:\n"
        "        return 2\n"
        "\n"
        "\n"
        "def start(job: Job) -> int:\n"
        "    local = Job()\n"
        "    return local.run() + Timer().run()\n"
    ),
    "pkg/cli.py": (
        "from pkg.jobs import Job, start\n"
        "\n"
        "\n"
        "def main() -> int:\n"
        "    job = Job()\n"
        "    print('run')  # run is only a word here\n"
        "    return job.run() + start(job)\n"
    ),
}


def _tree(root: Path) -> dict[str, bytes]:
    """The project without codeward's caches (the symbol index lives in .codeward)."""
    return {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward")}


def _write(root: Path) -> None:
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _refs(outcome: ToolOutcome) -> list[tuple[str, int]]:
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    return [(r["path"], r["line"]) for r in outcome.structured["references"]]


def test_references_follow_the_symbol_not_the_name(root: Path, call: Call) -> None:
    _write(root)
    assert _refs(call("py_find_references", path="pkg/jobs.py", name="Job.run")) == [
        ("pkg/cli.py", 7), ("pkg/jobs.py", 2), ("pkg/jobs.py", 13)]
    timer = _refs(call("py_find_references", path="pkg/jobs.py", name="Timer.run"))
    assert timer == [("pkg/jobs.py", 7), ("pkg/jobs.py", 13)]
    by_position = _refs(call("py_find_references", path="pkg/cli.py", line=1, column=23))  # Job in the import
    assert ("pkg/jobs.py", 1) in by_position and ("pkg/cli.py", 5) in by_position and ("pkg/jobs.py", 11) in by_position
    listed = call("py_find_references", path="pkg/jobs.py", name="Job.run").text
    assert "[definition]" in listed and "print('run')" not in listed


def test_rename_is_a_dry_run_diff_then_applies_across_files_as_one_checkpoint(root: Path, call: Call) -> None:
    _write(root)
    before = _tree(root)
    preview = call("py_rename_symbol", path="pkg/jobs.py", name="Job.run", new_name="execute")
    assert not preview.is_error and "dry run" in preview.text and _tree(root) == before
    assert "-        return job.run() + start(job)" not in preview.text  # the diff shows full lines of both files
    assert "+    return job.execute() + start(job)" in preview.text and "+    def execute(self) -> int:" in preview.text
    applied = call("py_rename_symbol", path="pkg/jobs.py", name="Job.run", new_name="execute", apply=True)
    assert not applied.is_error and applied.checkpoint is not None
    jobs = (root / "pkg/jobs.py").read_text()
    assert "def execute(self)" in jobs and "Timer().run()" in jobs and "local.execute()" in jobs
    cli = (root / "pkg/cli.py").read_text()
    assert "job.execute()" in cli and "print('run')" in cli
    assert not call("undo").is_error
    assert _tree(root) == before


def test_occurrences_jedi_cannot_tie_are_listed_and_hold_a_rename_back(root: Path, call: Call) -> None:
    (root / "m.py").write_text("class Store:\n    def value(self):\n        return 1\n\n\n"
                               "def report(store):\n    return store.value()\n")
    found = call("py_find_references", path="m.py", name="Store.value")
    assert _refs(found) == [("m.py", 2)]
    assert found.structured is not None and found.structured["engine"] == "jedi"
    assert [(r["line"], r["reason"]) for r in found.structured["unsure"]] == [
        (7, "jedi cannot tell what it refers to")]
    assert "[name-based]" in found.text and "could not be tied" in found.text
    before = _tree(root)
    refused = call("py_rename_symbol", path="m.py", name="Store.value", new_name="worth", apply=True)
    assert refused.is_error and refused.errors[0].kind is ErrorKind.CONFLICT, refused.text
    assert "m.py:7" in refused.text and "unsure='rename'" in refused.text
    assert _tree(root) == before
    left = call("py_rename_symbol", path="m.py", name="Store.value", new_name="worth", apply=True, unsure="leave")
    assert not left.is_error, left.text
    assert "def worth(self)" in (root / "m.py").read_text() and "store.value()" in (root / "m.py").read_text()
    assert not call("undo").is_error and _tree(root) == before
    both = call("py_rename_symbol", path="m.py", name="Store.value", new_name="worth", apply=True, unsure="rename")
    assert not both.is_error, both.text
    assert "store.worth()" in (root / "m.py").read_text()


def test_a_src_layout_package_is_followed_into_its_tests(root: Path, call: Call) -> None:
    """Tests import a ``src/`` package by its name; jedi must find the project's copy, not lose the uses
    (or follow them to an installed copy of the same package and drop them)."""
    (root / "pyproject.toml").write_text("[project]\nname = 'shop'\n")
    (root / "src/shop").mkdir(parents=True)
    (root / "src/shop/__init__.py").write_text("from shop.prices import total\n")
    (root / "src/shop/prices.py").write_text("def total(items):\n    return sum(items)\n")
    (root / "tests").mkdir()
    (root / "tests/test_prices.py").write_text("from shop.prices import total\nimport shop\n\n\n"
                                               "def test_total():\n    assert total([1, 2]) == shop.total([3])\n")
    found = _refs(call("py_find_references", path="src/shop/prices.py", name="total"))
    assert ("tests/test_prices.py", 1) in found and ("tests/test_prices.py", 6) in found, found
    renamed = call("py_rename_symbol", path="src/shop/prices.py", name="total", new_name="sum_of", apply=True)
    assert not renamed.is_error, renamed.text
    assert (root / "tests/test_prices.py").read_text().count("sum_of") == 3


@pytest.mark.parametrize(("arguments", "kind", "words"), [
    ({"path": "pkg/jobs.py", "name": "Nope", "new_name": "x"}, ErrorKind.NOT_FOUND, "no symbol named"),
    ({"path": "pkg/jobs.py", "name": "Job", "new_name": "class"}, ErrorKind.INVALID_INPUT, "valid Python identifier"),
    ({"path": "pkg/jobs.py", "name": "Job", "new_name": "Job"}, ErrorKind.INVALID_INPUT, "already named"),
    ({"path": "pkg/jobs.py", "new_name": "x"}, ErrorKind.INVALID_INPUT, "name, or line and column"),
    ({"path": "pkg/jobs.py", "line": 4, "column": 1, "new_name": "x"}, ErrorKind.INVALID_INPUT, "not on a name"),
    ({"path": "pkg/jobs.py", "line": 400, "column": 1, "new_name": "x"}, ErrorKind.INVALID_INPUT, "past the end"),
    ({"path": "notes.txt", "name": "x", "new_name": "y"}, ErrorKind.INVALID_INPUT, "not a Python file"),
    ({"path": "../elsewhere.py", "name": "x", "new_name": "y"}, ErrorKind.PERMISSION, "outside the workspace"),
    ({"path": "broken.py", "name": "f", "new_name": "g"}, ErrorKind.INVALID_INPUT, "does not parse"),
])
def test_bad_input_changes_nothing(root: Path, call: Call, arguments: dict[str, Any], kind: ErrorKind,
                                   words: str) -> None:
    _write(root)
    (root / "notes.txt").write_text("x\n")
    (root / "broken.py").write_text("def f(:\n")
    before = _tree(root)
    outcome = call("py_rename_symbol", **arguments)
    assert outcome.is_error and outcome.errors[0].kind is kind and words in outcome.text, outcome.text
    if "new_name" not in words and "identifier" not in words and "already" not in words:
        found = call("py_find_references", **{k: v for k, v in arguments.items() if k != "new_name"})
        assert found.is_error and words in found.text, found.text
    assert _tree(root) == before


def test_a_rename_reaching_a_protected_file_changes_nothing(root: Path, call: Call) -> None:
    _write(root)
    (root / "pkg/codeward.toml").write_text("")  # makes nothing protected by itself: a .git folder does
    (root / "vendor/.git").mkdir(parents=True)
    (root / "vendor/.git/hook.py").write_text("from pkg.jobs import start\nstart(None)\n")
    before = _tree(root)
    outcome = call("py_rename_symbol", path="pkg/jobs.py", name="start", new_name="begin", apply=True)
    if outcome.is_error:
        assert "Nothing was changed" in outcome.text
        assert _tree(root) == before
    else:  # the index never lists files inside .git: rope was not shown it
        assert (root / "vendor/.git/hook.py").read_text() == "from pkg.jobs import start\nstart(None)\n"


pytestmark = pytest.mark.anyio


JEDI_ONLY = "[lsp]\nenabled = false\n"
"""These tests are about jedi's path (what answers where basedpyright is not installed)."""


async def test_rename_over_stdio(root: Path) -> None:
    _write(root)
    (root / "codeward.toml").write_text(JEDI_ONLY)
    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env=every_tool_env(PYTHONUNBUFFERED="1"), cwd=str(root))
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"py_find_references", "py_rename_symbol"} <= set(tools)
        assert "unsure" in (tools["py_find_references"].description or "")
        found = await client.call_tool("py_find_references", {"path": "pkg/jobs.py", "name": "Job.run"})
        assert not found.is_error and found.structured_content is not None
        assert len(found.structured_content["references"]) == 3
        renamed = await client.call_tool("py_rename_symbol", {"path": "pkg/jobs.py", "name": "start",
                                                              "new_name": "launch", "apply": True})
        assert not renamed.is_error
        bad = await client.call_tool("py_rename_symbol", {"path": "pkg/jobs.py", "name": "Job", "new_name": "1x"})
        assert bad.is_error
    assert "launch(job)" in (root / "pkg/cli.py").read_text()


EXTENSION = """
#include <Python.h>
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "planted", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_planted(void) {
    FILE *marker = fopen(getenv("PLANTED_MARKER"), "w");
    if (marker) { fputs("ran on the host", marker); fclose(marker); }
    return PyModule_Create(&module);
}
"""


async def test_an_extension_module_planted_in_the_project_is_never_loaded(root: Path, tmp_path: Path) -> None:
    """jedi imports compiled modules it meets; one an agent wrote into the project must not run on the host,
    even when the server runs in the project with the project on its import path."""
    import shutil
    import subprocess
    import sysconfig

    if shutil.which("gcc") is None or not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        pytest.skip("needs gcc and Python's headers to build an extension module")
    source = tmp_path / "planted.c"
    source.write_text(EXTENSION)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(source), "-o",
                    str(root / f"planted{suffix}")], check=True)
    (root / "app.py").write_text("import planted\n\nvalue = planted.thing\n\n\ndef use():\n    return value\n")
    (root / "codeward.toml").write_text(JEDI_ONLY)
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PLANTED_MARKER": str(marker), "PYTHONPATH": str(root)}
    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)], env=env,
                                   cwd=str(root))
    async with Client(server) as client:
        for arguments in ({"path": "app.py", "line": 3, "column": 17},
                          {"path": "app.py", "line": 1, "column": 8},
                          {"path": "app.py", "name": "value"}):
            await client.call_tool("py_find_references", arguments)
        await client.call_tool("py_rename_symbol", {"path": "app.py", "name": "value", "new_name": "v"})
    assert not marker.exists()


def test_a_damaged_parse_cache_entry_is_parsed_again(root: Path, tmp_path: Path) -> None:
    """jedi keeps parses as pickles in the user's cache; an entry cut short (a process killed while
    writing it, or read while another process writes it) used to fail every lookup with
    ``EOFError: Ran out of input``. It is a cache miss, and rewritten whole."""
    import json
    import subprocess

    _write(root)
    (root / "codeward.toml").write_text(JEDI_ONLY)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def references() -> list[tuple[str, int]]:
        done = subprocess.run([sys.executable, "-m", "codeward", "call", "--json", "py_find_references",
                               "path=pkg/jobs.py", "name=Job.run"], cwd=root, env=env, capture_output=True,
                              text=True, timeout=120)
        answer = json.loads(done.stdout)
        assert not answer["is_error"], answer["text"]
        return [(r["path"], r["line"]) for r in answer["structured"]["references"]]

    expected = references()
    assert len(expected) == 3
    pickles = sorted((tmp_path / "cache" / "jedi").rglob("*.pkl"), key=lambda p: p.stat().st_size)
    assert pickles, "jedi wrote no parse cache"
    damaged = pickles[-1]  # the biggest entry (a stub every lookup reads)
    damaged.write_bytes(b"")  # cut short, and newer than its source: parso takes it as current
    assert references() == expected
    assert damaged.stat().st_size > 0, "rewritten whole"
    assert not [p.name for p in damaged.parent.iterdir() if p.name.startswith(".parse-")]
