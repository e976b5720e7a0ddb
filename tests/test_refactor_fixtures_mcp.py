"""Symbol edits on real third-party code, through the official MCP client (``codeward serve`` over stdio).

The fixtures (``tests/fixtures/refactor/``, see its README) are cachetools (src layout, ``.pyi``
stubs, tests that ``import cachetools.keys``), h11 (flat, relative imports, star imports, tests
inside the package), ujson's C sources (``static FASTCALL_ATTR PyObject *FASTCALL_MSVC ...``) and
cxxopts (a single-header C++ library tree-sitter cannot fully parse). Each test edits a copy:

* every definition given back as it is changes no byte;
* body, signature, add, remove, move within a file and across modules, and a rename with its
  callers, leave each Python project's own test suite with the results it had before (run with
  pytest in a subprocess, before and after);
* mismatched names and bad moves are refused with every file byte for byte as it was;
* C and C++ definitions in files with parse errors elsewhere are edited, and compile.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO, snapshot

pytestmark = pytest.mark.anyio
FIXTURES = REPO / "tests" / "fixtures" / "refactor"
PYTHON_FIXTURES = {"cachetools": ["tests"], "h11": ["h11/tests"]}
PYTHON_PATHS = {"cachetools": "src", "h11": "."}


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@asynccontextmanager
async def served(*roots: Path) -> AsyncIterator[Client]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", *map(str, roots)],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    async with Client(server) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} {arguments}: {_text(result)}"
    return _text(result)


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} {arguments} was not refused: {_text(result)}"
    return _text(result)


def copy_of(folder: Path, name: str) -> Path:
    target = folder / name
    shutil.copytree(FIXTURES / name, target)
    return target


def start_own_tests(project: Path, name: str) -> subprocess.Popen[str]:
    """The project's own test suite, started with pytest in a subprocess (see :func:`results_of`)."""
    env = {**os.environ, "PYTHONPATH": str(project / PYTHON_PATHS[name]), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                             *PYTHON_FIXTURES[name]], cwd=project, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def results_of(run: subprocess.Popen[str]) -> dict[str, str]:
    """Each test id of a finished run and its outcome (PASSED, FAILED, ERROR, SKIPPED...)."""
    stdout, stderr = run.communicate(timeout=300)
    results = {test: outcome for outcome, test in re.findall(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)",
                                                             stdout, re.MULTILINE)}
    assert results, f"no test ran:\n{stdout[-3000:]}\n{stderr[-3000:]}"
    return results


def before_and_after(tmp_path: Path, name: str) -> tuple[Path, subprocess.Popen[str]]:
    """A copy to edit, and the fixture's own tests already running on another copy (the baseline)."""
    baseline = start_own_tests(copy_of(tmp_path / "baseline", name), name)
    return copy_of(tmp_path, name), baseline


def same_results(project: Path, name: str, baseline: subprocess.Popen[str]) -> None:
    before = results_of(baseline)
    assert set(before.values()) <= {"PASSED", "SKIPPED"} and len(before) > 70, before
    assert results_of(start_own_tests(project, name)) == before


def python_files(project: Path) -> list[str]:
    return sorted(str(p.relative_to(project)) for p in project.rglob("*.py"))


async def test_every_python_definition_given_back_as_it_is_changes_no_byte(tmp_path: Path) -> None:
    projects = [copy_of(tmp_path, name) for name in PYTHON_FIXTURES]
    before = {project: snapshot(project) for project in projects}
    files = [(project, relative) for project in projects for relative in python_files(project)]
    counts: list[int] = []
    async with served(*projects) as client:

        async def give_back(project: Path, relative: str) -> None:
            path = str(project / relative)
            outline = await client.call_tool("py_get_code_outline", {"path": path})
            assert not outline.is_error, _text(outline)
            lines = (project / relative).read_text().split("\n")
            seen: dict[str, int] = {}
            for entry in outline.structured_content["entries"]:
                name = entry["qualname"]
                seen[name] = seen.get(name, 0) + 1
                text = "\n".join(lines[entry["start_line"] - 1:entry["end_line"]]) + "\n"
                answer = await call(client, "py_update_definition", path=path, name=name, new_content=text,
                                    occurrence=seen[name])
                assert answer.startswith("No change"), f"{relative} {name}: {answer}"
            counts.append(len(outline.structured_content["entries"]))

        async with anyio.create_task_group() as group:  # files in parallel: one file's edits in order
            for project, relative in files:
                group.start_soon(give_back, project, relative)
    assert sum(counts) > 400
    for project in projects:
        assert {k: v for k, v in snapshot(project).items() if not k.startswith(".codeward/")} == before[project]


async def test_edits_and_moves_leave_cachetools_passing_its_own_tests(tmp_path: Path) -> None:
    project, baseline = before_and_after(tmp_path, "cachetools")
    package = project / "src" / "cachetools"
    keys = str(package / "keys.py")
    original_keys = (package / "keys.py").read_bytes()
    async with served(project) as client:
        await call(client, "py_update_definition", path=keys, name="methodkey", new_content=(
            'def methodkey(self, /, *args, **kwargs):\n    """Return a cache key for use with cached methods."""\n'
            "    return args + _kwmark + tuple(sorted(kwargs.items())) if kwargs else args\n"))
        await call(client, "py_set_signature", path=str(package / "func.py"), name="_cache",
                   new_signature="def _cache(cache, maxsize, typed, /):")
        await call(client, "py_add_def", path=keys, name="keyed", anchor_type="after", anchor_symbol="typedkey",
                   new_content="def keyed(*args):\n    return hashkey(*args)\n")
        await call(client, "py_remove_def", path=keys, name="keyed")
        assert (package / "keys.py").read_bytes() != original_keys
        await call(client, "py_move_def", src_path=keys, dest_path=keys, name="typedkey", anchor_type="after",
                   anchor_symbol="typedmethodkey")
        moved = await call(client, "py_move_def", src_path=keys, dest_path=str(package / "_hash.py"), name="hashkey")
    assert "Updated 15 references to it in 4 files" in moved
    assert "src/cachetools/keys.pyi (the stub) still declares hashkey" in moved
    assert "cachetools._hash.hashkey(0)" in (project / "tests" / "test_cached.py").read_text()
    same_results(project, "cachetools", baseline)


async def test_edits_moves_and_a_rename_leave_h11_passing_its_own_tests(tmp_path: Path) -> None:
    project, baseline = before_and_after(tmp_path, "h11")
    package = project / "h11"
    async with served(project) as client:
        await call(client, "py_set_signature", path=str(package / "_connection.py"), name="_keep_alive",
                   new_signature="def keep_alive(event: Union[Request, Response]) -> bool:", rename=True)
        moved = await call(client, "py_move_def", src_path=str(package / "_events.py"),
                           dest_path=str(package / "_request.py"), name="Request")
        await call(client, "py_move_def", src_path=str(package / "_util.py"), dest_path=str(package / "_headers.py"),
                   name="bytesify")
        preview_before = snapshot(project)
        preview = await call(client, "py_move_def", src_path=str(package / "_util.py"),
                             dest_path=str(package / "_sentinel.py"), name="Sentinel", apply=False)
        assert snapshot(project) == preview_before
    assert "dry run: nothing written" in preview and "+from ._sentinel import Sentinel" in preview
    assert "Updated 12 references to it in 12 files" in moved
    assert "from ._request import Request" in (package / "_state.py").read_text()  # it came through a star
    connection_tests = (package / "tests" / "test_connection.py").read_text()
    assert "from .._connection import _body_framing, keep_alive, Connection" in connection_tests
    assert "    assert keep_alive(\n" in connection_tests
    assert not re.search(r"(?<!test_)_keep_alive\(", connection_tests)
    same_results(project, "h11", baseline)


async def test_mismatched_names_and_bad_moves_are_refused_with_every_file_unchanged(tmp_path: Path) -> None:
    python = copy_of(tmp_path, "h11")
    native = [copy_of(tmp_path, "ujson"), copy_of(tmp_path, "cxxopts")]
    outside = tmp_path / "outside.py"
    outside.write_text("")
    roots = [python, *native]
    before = {root: snapshot(root) for root in roots}
    util, headers = str(python / "h11" / "_util.py"), str(python / "h11" / "_headers.py")
    decode = str(native[0] / "decode.c")
    async with served(*roots) as client:
        swap = await refused(client, "py_update_definition", path=util, name="bytesify", new_content="x = 1\n")
        assert "new_content defines the variable 'x', not the function 'bytesify'" in swap
        other = await refused(client, "py_update_definition", path=util, name="bytesify",
                              new_content="def as_bytes(s):\n    return bytes(s)\n")
        assert "defines the function 'as_bytes', not the function 'bytesify'" in other
        assert "rename=true" in other and "py_add_def" in other
        header = await refused(client, "py_set_signature", path=util, name="bytesify",
                               new_signature="def to_bytes(s: bytes) -> bytes:")
        assert "new_signature defines the function 'to_bytes'" in header and "py_rename_symbol" in header
        await refused(client, "py_add_def", path=util, name="helper", new_content="def other():\n    pass\n")
        await refused(client, "py_set_var_declaration", path=str(python / "h11" / "_abnf.py"), name="OWS",
                      new_declaration="WS = r'[ \\t]*'")
        c_swap = await refused(client, "ts_c_update_definition", path=decode, name="decode_true",
                               new_content="static PyObject *decode_maybe(struct DecoderState *ds)\n{\n  return 0;\n}")
        assert "new_content defines the function 'decode_maybe', not the function 'decode_true'" in c_swap
        assert "search_text" in c_swap
        cpp_swap = await refused(client, "ts_cpp_update_definition", path=str(native[1] / "cxxopts.hpp"),
                                 name="cxxopts::OptionValue::count",
                                 new_content="  std::size_t\n  total() const noexcept\n  {\n    return 0;\n  }")
        assert "defines the method 'total', not the method 'count'" in cpp_swap
        cycle = await refused(client, "py_move_def", src_path=util, dest_path=str(python / "h11" / "_events.py"),
                              name="validate")
        assert "would create an import cycle: h11._headers -> h11._events -> h11._headers" in cycle
        taken = await refused(client, "py_move_def", src_path=util, dest_path=headers, name="validate",
                              dest_name="normalize_and_validate")
        assert "normalize_and_validate already exists in" in taken
        missing = await refused(client, "py_move_def", src_path=str(python / "h11" / "_gone.py"),
                                dest_path=headers, name="validate")
        assert "not found" in missing
        away = await refused(client, "py_move_def", src_path=util, dest_path=str(outside), name="validate")
        assert "outside" in away
        protected = await refused(client, "py_move_def", src_path=util,
                                  dest_path=str(python / ".codeward" / "x.py"), name="validate")
        assert ".codeward" in protected
    for root in roots:
        assert {k: v for k, v in snapshot(root).items() if not k.startswith(".codeward/")} == before[root]
    assert outside.read_text() == ""


async def c_definitions(client: Client, path: Path, tool_prefix: str) -> list[tuple[str, str]]:
    outline = await client.call_tool(f"{tool_prefix}_get_code_outline", {"path": str(path)})
    assert not outline.is_error, _text(outline)
    names = [f"{s['qualified_name']}@{s['start_line']}" for s in outline.structured_content["symbols"]
             if s["definition"]]
    return [(name, await call(client, f"{tool_prefix}_get_definition", path=str(path), name=name))
            for name in names]


def compiles(*command: str, cwd: Path) -> None:
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed")
    done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


async def test_c_and_cpp_definitions_in_files_with_parse_errors_are_edited_and_compile(tmp_path: Path) -> None:
    ujson, cxxopts = copy_of(tmp_path, "ujson"), copy_of(tmp_path, "cxxopts")
    sources = [(ujson / "decode.c", "ts_c"), (ujson / "encode.c", "ts_c"), (cxxopts / "cxxopts.hpp", "ts_cpp")]
    before = {root: snapshot(root) for root in (ujson, cxxopts)}
    async with served(ujson, cxxopts) as client:
        given_back: list[str] = []

        async def give_back(path: Path, prefix: str) -> None:
            for name, text in await c_definitions(client, path, prefix):
                answer = await call(client, f"{prefix}_update_definition", path=str(path), name=name,
                                    new_content=text)
                assert "already exactly that" in answer, f"{path.name} {name}: {answer}"
                given_back.append(name)

        async with anyio.create_task_group() as group:  # files in parallel: one file's edits in order
            for path, prefix in sources:
                group.start_soon(give_back, path, prefix)
        assert len(given_back) > 250
        for root in (ujson, cxxopts):
            assert {k: v for k, v in snapshot(root).items() if not k.startswith(".codeward/")} == before[root]

        true = await call(client, "ts_c_get_definition", path=str(ujson / "decode.c"), name="decode_true")
        assert true.startswith("static FASTCALL_ATTR PyObject *FASTCALL_MSVC decode_true ( struct DecoderState *ds)")
        reverse = await call(client, "ts_c_get_definition", path=str(ujson / "encode.c"), name="strreverse")
        assert reverse.startswith("static FASTCALL_ATTR INLINE_PREFIX void FASTCALL_MSVC strreverse(")
        count = await call(client, "ts_cpp_get_definition", path=str(cxxopts / "cxxopts.hpp"),
                           name="OptionValue::count")
        assert count.startswith("  CXXOPTS_NODISCARD\n  std::size_t\n  count() const noexcept")

        await call(client, "ts_c_update_definition", path=str(ujson / "decode.c"), name="decode_true",
                   new_content=true.replace("  char *offset = ds->start;", "  char *offset = ds->start;\n"
                                                                          "  (void) sizeof(offset);"))
        await call(client, "ts_cpp_update_definition", path=str(cxxopts / "cxxopts.hpp"), name="OptionValue::count",
                   new_content=count.replace("return m_count;", "return static_cast<std::size_t>(m_count);"))
        edited = {root: snapshot(root) for root in (ujson, cxxopts)}
        broken = await refused(client, "ts_cpp_update_definition", path=str(cxxopts / "cxxopts.hpp"),
                               name="OptionValue::count",
                               new_content=count.replace("return m_count;", "return (m_count;"))
        assert re.search(r"syntax error at line 1452, column \d+ \(line 5 of new_content\)", broken), broken
        assert "already had parse errors elsewhere" in broken
        unbalanced = await refused(client, "ts_c_update_definition", path=str(ujson / "decode.c"),
                                   name="decode_null", new_content="static FASTCALL_ATTR PyObject *FASTCALL_MSVC "
                                   "decode_null ( struct DecoderState *ds)\n{\n  return NULL;\n")
        assert "nothing was changed" in unbalanced
    assert {root: snapshot(root) for root in (ujson, cxxopts)} == edited
    assert "(void) sizeof(offset);" in (ujson / "decode.c").read_text()
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        pytest.skip("the Python headers (python3-dev) are not installed")
    compiles("gcc", "-fsyntax-only", f"-I{include}", "-I.", "decode.c", "encode.c", cwd=ujson)
    compiles("g++", "-std=c++11", "-fsyntax-only", "-x", "c++", "cxxopts.hpp", cwd=cxxopts)
