"""typescript-language-server through codeward on a real TypeScript library (hashids): references equal the
server's own, renames of a function, a method and a type leave ``tsc`` and the tests as they were, and a rename
by name alone breaks the build."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeward.config.lsp import LspSettings
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Workspace
from codeward.serving.stack import call_steps
from codeward.tools import default_catalog
from tests.lsp_support import (
    NODE_MODULES,
    BareServer,
    Tools,
    copy_fixture,
    located_or_skip,
    node_on_path,
    position,
    project_files,
    run,
    spots,
    waiting_context,
)

pytestmark = pytest.mark.xdist_group("lsp-typescript")

SAMPLE = [  # (file, the definition's line text, the name on it)
    ("src/util.ts", "export function shuffle(", "shuffle"),
    ("src/hashids.ts", "  decode(id: string): NumberLike[] {", "decode"),
    ("src/util.ts", "export type NumberLike = bigint | number", "NumberLike"),
    ("src/hashids.ts", "export default class Hashids {", "Hashids"),
    ("src/hashids.ts", "  encodeHex(inputHex: bigint | string): string {", "encodeHex"),
    ("src/util.ts", "export const toAlphabet = (", "toAlphabet"),
]
RENAMES = [("src/util.ts", "shuffle", "shuffleChars"), ("src/hashids.ts", "Hashids.decode", "decodeNumbers"),
           ("src/util.ts", "NumberLike", "Numeric")]


def own(name: str) -> bool:
    """The sources and tests (what a rename may change)."""
    return name.startswith("src/")


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Tools, BareServer]]:
    located_or_skip("typescript")
    if not (NODE_MODULES / ".bin" / "vitest").exists() or not (NODE_MODULES / ".bin" / "tsc").exists():
        pytest.skip("tsc and vitest are not installed (scripts/test installs tests/node with npm)")
    root = copy_fixture("hashids", tmp_path_factory.mktemp("ts"))
    (root / "node_modules").symlink_to(NODE_MODULES)  # the project's dependencies, as npm install would leave them
    bare = BareServer("typescript", root)
    bare.warm(root / "src" / "hashids.ts")
    # tests/node's packages a second root: the server in the sandbox resolves the project's node_modules link
    ctx = waiting_context(root, NODE_MODULES.resolve())
    try:
        with node_on_path():
            yield root, Tools(default_catalog().with_steps(call_steps()), ctx), bare
    finally:
        bare.close()
        ctx.services.runtimes.close()


def compiled(root: Path) -> str:
    """``tsc --noEmit`` over the sources and the tests: its complaints (the published package already has one)."""
    return run([str(NODE_MODULES / ".bin" / "tsc"), "--noEmit", "-p", "."], root).stdout


def vitest_results(root: Path, out: Path) -> dict[str, str]:
    """Each test's status under vitest (the project's jest-style tests, with --globals)."""
    run([str(NODE_MODULES / ".bin" / "vitest"), "run", "--globals", "--reporter=json", f"--outputFile={out}",
         "src/tests"], root)
    report = json.loads(out.read_text())
    return {f"{Path(suite['name']).name}: {test['fullName']}": test["status"]
            for suite in report["testResults"] for test in suite["assertionResults"]}


def test_references_equal_the_server_own_answers(module: tuple[Path, Tools, BareServer]) -> None:
    root, tools, bare = module
    for rel, anchor, name in SAMPLE:
        line, column = position(root, rel, anchor, name)
        answer = tools.ok("find_references", path=rel, line=line, column=column)
        assert answer["engine"].startswith("typescript-language-server") and not answer["name_based"], answer
        theirs = bare.references(rel, line, column)
        assert len(theirs) > 1, (name, theirs)
        ours = spots(answer["references"])
        assert ours == theirs, (name, sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours)))


def test_renames_keep_tsc_and_the_tests_as_they_were(module: tuple[Path, Tools, BareServer],
                                                     tmp_path: Path) -> None:
    root, tools, _bare = module
    before = project_files(root, own)
    errors, results = compiled(root), vitest_results(root, tmp_path / "before.json")
    assert sum(status == "passed" for status in results.values()) >= 50, results
    for rel, name, new_name in RENAMES:
        report = tools.ok("rename_symbol", path=rel, name=name, new_name=new_name, apply=True)
        assert report["applied"] and report["engine"].startswith("typescript-language-server"), report
        assert report["unsure_total"] == 0, report["unsure"]
    assert compiled(root) == errors
    assert vitest_results(root, tmp_path / "after.json") == results
    util, hashids = (root / "src/util.ts").read_text(), (root / "src/hashids.ts").read_text()
    assert "export function shuffleChars(" in util and "export type Numeric = " in util
    assert "decodeNumbers(id: string): Numeric[]" in hashids and "this.decodeNumbers(" in hashids
    tools.ok("undo", steps=3)
    assert project_files(root, own) == before


def test_a_name_based_rename_breaks_the_build_and_is_never_applied(module: tuple[Path, Tools, BareServer]) -> None:
    """A parameter named like a method every array has: the server renames the parameter, a rename by name
    renames Array.prototype.map at every call too."""
    root, tools, _bare = module
    line, column = position(root, "src/util.ts", "  map: (n: string) => T,", "map")
    precise = tools.ok("rename_symbol", path="src/util.ts", line=line, column=column, new_name="mapPart")
    assert precise["edits"] == 2 and not precise["name_based"], precise
    index_only = Tools(tools.catalog, ToolContext(Workspace.create([root]),
                                                  services=Services(LspSettings(enabled=False))))
    before = project_files(root, own)
    plan = index_only.ok("rename_symbol", path="src/util.ts", line=line, column=column, new_name="mapPart")
    assert plan["name_based"] and plan["edits"] > 2 and ".mapPart(" in plan["diff"]
    refused = index_only("rename_symbol", path="src/util.ts", line=line, column=column, new_name="mapPart",
                         apply=True)
    assert refused.is_error and refused.errors[0].kind is ErrorKind.UNAVAILABLE, refused.text
    assert project_files(root, own) == before
    index_only.ok("apply_patch", patch=plan["diff"])  # what applying the name-based plan would do
    broken = compiled(root)  # the published package compiles with one complaint, about requiring '../..'
    assert "Property 'mapPart' does not exist" in broken, broken
    index_only.ok("undo")
    assert project_files(root, own) == before
    assert shutil.which("node") is not None
