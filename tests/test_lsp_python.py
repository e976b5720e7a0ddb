"""Python through basedpyright on real packages — iniconfig (``src/`` layout, tests in ``testing/``) and toolz
(flat, tests inside the package): references equal basedpyright's own answers, and renames of a public function,
a class the tests import and a method leave each project's own test suite with the same results."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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

pytestmark = pytest.mark.xdist_group("lsp-python")

SAMPLE = [  # (project, file, the definition's line text, the name on it)
    ("iniconfig", "src/iniconfig/_parse.py", "def parse_lines(", "parse_lines"),
    ("iniconfig", "src/iniconfig/_parse.py", "class ParsedLine(NamedTuple):", "ParsedLine"),
    ("iniconfig", "src/iniconfig/__init__.py", "    def lineof(self, section: str, name: str | None = None)", "lineof"),
    ("iniconfig", "src/iniconfig/__init__.py", "class IniConfig:", "IniConfig"),
    ("iniconfig", "src/iniconfig/_parse.py", "def iscommentline(line: str) -> bool:", "iscommentline"),
    ("toolz", "toolz/itertoolz.py", "def interleave(seqs):", "interleave"),
    ("toolz", "toolz/functoolz.py", "class juxt:", "juxt"),
    ("toolz", "toolz/functoolz.py", "    def bind(self, *args, **kwargs):", "bind"),
    ("toolz", "toolz/dicttoolz.py", "def merge(*dicts, **kwargs):", "merge"),
]
RENAMES = {  # project: [(file, name, new name)]
    "iniconfig": [("src/iniconfig/_parse.py", "parse_lines", "split_lines"),
                  ("src/iniconfig/_parse.py", "ParsedLine", "Line"),
                  ("src/iniconfig/__init__.py", "IniConfig.lineof", "line_of")],
    "toolz": [("toolz/itertoolz.py", "interleave", "interleave_all"),
              ("toolz/functoolz.py", "juxt", "juxtapose"),
              ("toolz/functoolz.py", "curry.bind", "bind_arguments")],
}
"""The tests import ``ParsedLine`` (as ``PL``), ``juxt`` and ``interleave``, call ``lineof`` and ``bind``; ``lineof``
is also the name of another class's method (``SectionWrapper.lineof``), which must stay."""


def own(name: str) -> bool:
    """The Python files (what a rename may change)."""
    return name.endswith(".py")


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Path], Tools, dict[str, BareServer]]]:
    located_or_skip("python")
    base = tmp_path_factory.mktemp("python")
    roots = {name: copy_fixture(name, base) for name in RENAMES}
    bares = {name: BareServer("python", root) for name, root in roots.items()}
    ctx = waiting_context(*roots.values())
    try:
        yield roots, Tools(default_catalog().with_steps(call_steps()), ctx), bares
    finally:
        for bare in bares.values():
            bare.close()
        ctx.services.runtimes.close()


def suite(name: str, root: Path) -> dict[str, str]:
    """Each test's outcome in the project's own test suite, run on the project's sources (not an installed copy)."""
    done = run([sys.executable, "-m", "pytest", "-q", "-rA", "--tb=no", "-p", "no:cacheprovider",
                "testing" if name == "iniconfig" else "toolz"], root, PYTHONPATH="src" if name == "iniconfig" else ".")
    results = dict((test, outcome) for outcome, test in re.findall(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)",
                                                                    done.stdout, re.M))
    assert results and "ERROR" not in results.values(), done.stdout[-3000:]
    return results


def test_references_equal_basedpyright_own_answers(module: tuple[dict[str, Path], Tools, dict[str, BareServer]]
                                                   ) -> None:
    roots, tools, bares = module
    for project, rel, anchor, name in SAMPLE:
        root = roots[project]
        line, column = position(root, rel, anchor, name)
        answer = tools.ok("py_find_references", path=str(root / rel), line=line, column=column, limit=2000)
        assert answer["engine"].startswith("basedpyright"), answer
        theirs = bares[project].references(rel, line, column)
        ours = [(Path(p).relative_to(root).as_posix() if Path(p).is_absolute() else p, line_, column_)
                for p, line_, column_ in spots(answer["references"])]
        assert sorted(ours) == theirs, (name, sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours)))
    outside_tests = tools.ok("find_references", path=str(roots["iniconfig"] / "src/iniconfig/_parse.py"),
                             name="parse_lines")
    assert any("testing/test_iniconfig.py" in ref["path"] for ref in outside_tests["references"])


@pytest.mark.parametrize("project", sorted(RENAMES))
def test_renames_leave_the_project_test_suite_as_it_was(module: tuple[dict[str, Path], Tools, dict[str, BareServer]],
                                                        project: str) -> None:
    roots, tools, _bares = module
    root = roots[project]
    before, results = project_files(root, own), suite(project, root)
    assert sum(outcome == "PASSED" for outcome in results.values()) >= 10
    for rel, name, new_name in RENAMES[project]:
        report = tools.ok("py_rename_symbol", path=str(root / rel), name=name, new_name=new_name, apply=True)
        assert report["applied"] and report["engine"].startswith("basedpyright"), report
        assert report["unsure_total"] == 0, report["unsure"]
    assert suite(project, root) == results
    if project == "iniconfig":
        source = (root / "src/iniconfig/__init__.py").read_text()
        assert "def line_of(self, section" in source and "def lineof(self, name" in source
    tools.ok("undo", steps=len(RENAMES[project]))
    assert project_files(root, own) == before
