"""clangd through codeward on a real C library (jsmn): references equal clangd's own, renames leave every
build configuration compiling and the tests as they were — including the code clangd cannot see (an
``#ifdef`` branch its compile command leaves out), which codeward lists as unsure instead of leaving it
behind, as clangd's own edit applied as is would."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeward.engines.lsp.positions import Encoding, Span, TextEdit, apply_edits, lines_of
from codeward.kernel.result import ErrorKind
from codeward.serving.stack import call_steps
from codeward.tools import default_catalog
from tests.lsp_support import (
    SERVER_WAIT_S,
    BareServer,
    Tools,
    copy_fixture,
    located_or_skip,
    position,
    project_files,
    run,
    spots,
    waiting_context,
)

pytestmark = pytest.mark.xdist_group("lsp-c")

SOURCES = ("test/tests.c", "example/simple.c", "example/jsondump.c")
SAMPLE = [  # (file, the definition's line text, the name on it)
    ("jsmn.h", "JSMN_API int jsmn_parse(jsmn_parser *parser, const char *js, const size_t len,", "jsmn_parse"),
    ("jsmn.h", "JSMN_API void jsmn_init(jsmn_parser *parser) {", "jsmn_init"),
    ("jsmn.h", "} jsmntok_t;", "jsmntok_t"),
    ("jsmn.h", "} jsmn_parser;", "jsmn_parser"),
    ("jsmn.h", "int toksuper;", "toksuper"),
    ("jsmn.h", "JSMN_OBJECT = 1,", "JSMN_OBJECT"),
]


def compile_commands(root: Path) -> None:
    """What a build writes for clangd (bear, CMake): one entry per translation unit, absolute paths."""
    entries = [{"directory": str(root), "file": str(root / source), "arguments": ["cc", "-c", source]}
               for source in SOURCES]
    (root / "compile_commands.json").write_text(json.dumps(entries, indent=1), encoding="utf-8")


def own(name: str) -> bool:
    """The library's sources (what a rename may change)."""
    return name.endswith((".c", ".h"))


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Tools, BareServer]]:
    located_or_skip("c")
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("make and a C compiler are needed (apt install build-essential)")
    root = copy_fixture("jsmn", tmp_path_factory.mktemp("c"))
    compile_commands(root)
    bare = BareServer("c", root)
    bare.warm(root / "test" / "tests.c")
    ctx = waiting_context(root)
    try:
        yield root, Tools(default_catalog().with_steps(call_steps()), ctx), bare
    finally:
        bare.close()
        ctx.services.runtimes.close()


def build_and_test(root: Path) -> str:
    """Every configuration the Makefile has (default, strict, parent links, both) built and run, and the
    examples built: the tests' output, which a rename must leave as it was."""
    tests = run(["make", "-s", "test"], root)
    assert tests.returncode == 0, tests.stdout[-2000:] + tests.stderr[-3000:]
    examples = run(["make", "-s", "simple_example", "jsondump"], root)
    assert examples.returncode == 0, examples.stderr[-3000:]
    run(["make", "-s", "clean"], root)
    return tests.stdout


def test_references_equal_clangd_own_answers(module: tuple[Path, Tools, BareServer]) -> None:
    root, tools, bare = module
    for rel, anchor, name in SAMPLE:
        line, column = position(root, rel, anchor, name)
        answer = tools.ok("find_references", path=rel, line=line, column=column)
        assert answer["engine"].startswith("clangd") and not answer["name_based"], answer
        theirs = bare.references(rel, line, column)
        assert len(theirs) > 1, (name, theirs)
        assert spots(answer["references"]) == theirs, (name, answer["references"], theirs)


def test_renames_keep_every_configuration_building_and_the_tests_as_they_were(
        module: tuple[Path, Tools, BareServer]) -> None:
    root, tools, _bare = module
    before = project_files(root, own)
    baseline = build_and_test(root)
    # Each name is also used in code clangd does not compile (#ifdef JSMN_STRICT, #ifdef JSMN_PARENT_LINKS):
    # clangd's rename leaves those behind, so codeward lists them and holds the rename back until told.
    for anchor, name, new_name, hidden in (
            ("JSMN_API int jsmn_parse(jsmn_parser *parser, const char *js, const size_t len,", "jsmn_parse",
             "jsmn_tokenize", "test/tests.c:131"),
            ("} jsmntok_t;", "jsmntok_t", "jsmn_token", "test/tests.c:126"),
            ("int toksuper;", "toksuper", "superior", "jsmn.h:181")):
        line, column = position(root, "jsmn.h", anchor, name)
        held = tools("rename_symbol", path="jsmn.h", line=line, column=column, new_name=new_name, apply=True)
        assert held.is_error and held.errors[0].kind is ErrorKind.CONFLICT, held.text
        assert hidden in held.text, held.text
        report = tools.ok("rename_symbol", path="jsmn.h", line=line, column=column, new_name=new_name, apply=True,
                          unsure="rename")
        assert report["applied"] and report["engine"].startswith("clangd") and report["unsure_total"] >= 1, report
    assert build_and_test(root) == baseline
    header = (root / "jsmn.h").read_text()
    assert "jsmn_tokenize" in header and "} jsmn_token;" in header and "toksuper" not in header
    tools.ok("undo", steps=3)
    assert project_files(root, own) == before


def test_clangd_own_rename_applied_as_is_breaks_a_configuration(module: tuple[Path, Tools, BareServer]) -> None:
    """The edit clangd itself proposes for the member misses the #ifdef branch: applied as an editor would,
    one of the four builds fails. This is what codeward's unsure list catches above."""
    root, _tools, bare = module
    line, column = position(root, "jsmn.h", "int toksuper;", "toksuper")
    header = root / "jsmn.h"
    bare.open(header)
    text = header.read_text(encoding="utf-8")
    lines = lines_of(text)
    encoding: Encoding = bare.client.encoding
    answer = bare.client.request("textDocument/rename", {
        "textDocument": {"uri": header.as_uri()},
        "position": {"line": line - 1, "character": encoding.from_index(lines[line - 1], column - 1)},
        "newName": "superior"}, SERVER_WAIT_S)
    changes = answer.get("changes") or {item["textDocument"]["uri"]: item["edits"]
                                         for item in answer.get("documentChanges", [])}
    assert set(changes) == {header.as_uri()}
    edits = [TextEdit(Span(e["range"]["start"]["line"], e["range"]["start"]["character"],
                           e["range"]["end"]["line"], e["range"]["end"]["character"]), e["newText"])
             for e in changes[header.as_uri()]]
    header.write_text(apply_edits(text, edits), encoding="utf-8")
    try:
        broken = run(["make", "-s", "test_links"], root)
        assert broken.returncode != 0 and "toksuper" in broken.stderr, broken.stderr[-2000:]
    finally:
        header.write_text(text, encoding="utf-8")
        run(["make", "-s", "clean"], root)
