"""gopls through codeward on a real Go module (google/uuid): references equal gopls's own, renames leave
the module building and its tests as they were, and a rename by name alone breaks it."""

from __future__ import annotations

import re
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

pytestmark = pytest.mark.xdist_group("lsp-go")

SAMPLE = [  # (file, the definition's line text, the name on it)
    ("version4.go", "func New() UUID {", "New"),
    ("uuid.go", "func (uuid UUID) String() string {", "String"),
    ("dce.go", "type Domain byte", "Domain"),
    ("uuid.go", "func Parse(s string) (UUID, error) {", "Parse"),
    ("null.go", "func (nu *NullUUID) Scan(value interface{}) error {", "Scan"),
    ("time.go", "func (uuid UUID) ClockSequence() int {", "ClockSequence"),
]
RENAMES = [("version4.go", "New", "Generate"), ("time.go", "UUID.ClockSequence", "ClockSeq"),
           ("dce.go", "Domain", "DCEDomain")]
"""A function whose name other packages use too (errors.New, md5.New), a method that shares its name with a
package-level function, and a type that shares its name with a method."""


def own(name: str) -> bool:
    """The module's own files (what a rename may change)."""
    return name.endswith((".go", ".mod")) or name == "LICENSE"


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Tools, BareServer]]:
    located_or_skip("go")
    if shutil.which("go") is None:
        pytest.skip("go is not installed (apt install golang-go)")
    root = copy_fixture("uuid", tmp_path_factory.mktemp("go"))
    bare = BareServer("go", root)
    bare.warm(root / "uuid.go")
    ctx = waiting_context(root)
    try:
        yield root, Tools(default_catalog().with_steps(call_steps()), ctx), bare
    finally:
        bare.close()
        ctx.services.runtimes.close()


def go_tests(root: Path) -> dict[str, str]:
    """Each test's outcome (``go test -v``), so that two runs compare test by test."""
    done = run(["go", "test", "-v", "-count=1", "./..."], root, GOPROXY="off")
    results = {name: outcome for outcome, name in re.findall(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", done.stdout,
                                                               re.M)}
    assert results, done.stdout[-2000:] + done.stderr[-2000:]
    return results


def test_references_equal_gopls_own_answers(module: tuple[Path, Tools, BareServer]) -> None:
    root, tools, bare = module
    for rel, anchor, name in SAMPLE:
        line, column = position(root, rel, anchor, name)
        answer = tools.ok("find_references", path=rel, line=line, column=column)
        assert answer["engine"].startswith("gopls"), answer
        assert not answer["name_based"]
        theirs = bare.references(rel, line, column)
        assert spots(answer["references"]) == theirs, (name, answer["references"], theirs)
        assert answer["total"] == len(theirs)


def test_renames_keep_the_module_building_and_its_tests_as_they_were(module: tuple[Path, Tools, BareServer]
                                                                     ) -> None:
    root, tools, _bare = module
    before = project_files(root, own)
    baseline = go_tests(root)
    for rel, name, new_name in RENAMES:
        report = tools.ok("rename_symbol", path=rel, name=name, new_name=new_name, apply=True)
        assert report["applied"] and report["engine"].startswith("gopls"), report
        assert report["unsure_total"] == 0, report["unsure"]
    built = run(["go", "build", "./..."], root, GOPROXY="off")
    assert built.returncode == 0, built.stderr
    assert go_tests(root) == baseline
    source = "\n".join(p.read_text() for p in root.glob("*.go"))
    assert "errors.New(" in source and "md5.New()" in source and "func Generate() UUID" in source
    assert "func ClockSequence() int" in source and "func (uuid UUID) ClockSeq() int" in source
    assert "type DCEDomain byte" in source and "func (uuid UUID) Domain() DCEDomain" in source
    tools.ok("undo", steps=3)
    assert project_files(root, own) == before


def test_a_name_based_rename_breaks_the_build_and_is_never_applied(module: tuple[Path, Tools, BareServer]) -> None:
    root, tools, _bare = module
    index_only = Tools(tools.catalog, ToolContext(Workspace.create([root]),
                                                  services=Services(LspSettings(enabled=False))))
    before = project_files(root, own)
    plan = index_only.ok("rename_symbol", path="version4.go", name="New", new_name="Generate")
    assert plan["name_based"] and not plan["applied"]
    assert "errors.Generate" in plan["diff"] and "md5.Generate" in plan["diff"]
    refused = index_only("rename_symbol", path="version4.go", name="New", new_name="Generate", apply=True)
    assert refused.is_error and refused.errors[0].kind is ErrorKind.UNAVAILABLE, refused.text
    assert project_files(root, own) == before
    applied = index_only.ok("apply_patch", patch=plan["diff"])  # what applying the name-based plan would do
    assert applied["applied"]
    broken = run(["go", "build", "./..."], root, GOPROXY="off")
    assert broken.returncode != 0 and "Generate" in broken.stderr, broken.stderr
    index_only.ok("undo")
    assert run(["go", "build", "./..."], root, GOPROXY="off").returncode == 0
