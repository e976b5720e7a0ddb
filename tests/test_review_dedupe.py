"""One finding counts once, and noisy rules are handled as ruff users expect.

ruff's F401 and vulture both see an unused import; ruff's S rules are bandit's tests under
other names. Each such finding must be one issue (naming the other analyzers), so the gates
count it once. bandit's B101 (``assert``) is skipped in tests and silenced by ruff's
``# noqa: S101``, as ruff users write it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.workspace import Workspace
from tests.review_fixtures import Call, caller, plant_line, planted_project

MODULE = '''\
import subprocess


def check(flag: bool, command: str) -> int:
    assert flag  # PLANT:assert
    assert command  # noqa: S101
    return subprocess.call(command, shell=True)  # PLANT:shell
'''
TEST = '''\
from pkg.mod import check


def test_check() -> None:
    assert check(True, "true") == 0
'''
INIT = '''\
from pkg.mod import check  # a re-export the project's ruff configuration allows
'''
PYPROJECT = '''\
[tool.ruff.lint]
select = ["F", "S"]
per-file-ignores = {"tests/*" = ["S101"], "pkg/__init__.py" = ["F401"]}
'''


def _issues(call: Call, path: str, **arguments: Any) -> list[dict[str, Any]]:
    outcome = call("coding_analyze_project", path=path, **arguments)
    assert outcome.structured is not None, outcome.text
    return list(outcome.structured["top_issues"])


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> tuple[Path, Call]:
    root = planted_project(tmp_path_factory, "dedupe")
    return root, caller(root, catalog)


def test_an_unused_import_seen_by_ruff_and_vulture_is_one_issue(planted: tuple[Path, Call]) -> None:
    root, call = planted
    line = plant_line(root / "app" / "pkg" / "core.py", "unused-import")
    found = [i for i in _issues(call, "app") if i["line"] == line and i["file"] == "app/pkg/core.py"]
    assert [(i["tool"], i["rule"], i["also_reported_by"]) for i in found] == [("ruff", "F401", ["vulture"])]


@pytest.fixture
def security_project(root: Path) -> Path:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text(INIT)
    (root / "pkg" / "mod.py").write_text(MODULE)
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text(TEST)
    return root


def test_assert_is_reported_in_code_but_not_in_tests_nor_under_noqa(security_project: Path, call: Call) -> None:
    """No project configuration: bandit runs with codeward's defaults (no B101 in tests)."""
    issues = _issues(call, ".", analysis_types=["security"])
    b101 = [(i["file"], i["line"]) for i in issues if i["rule"] == "B101"]
    assert b101 == [("pkg/mod.py", plant_line(security_project / "pkg" / "mod.py", "assert"))]
    assert any(i["rule"] == "B602" for i in issues)


def test_bandit_and_ruffs_s_rules_report_each_finding_once(security_project: Path, call: Call) -> None:
    """The project's ruff selects S: B602 and S602 are one issue, kept under ruff's name."""
    (security_project / "pyproject.toml").write_text(PYPROJECT)
    issues = _issues(call, ".", analysis_types=["lint", "security", "dead_code"])
    shell = plant_line(security_project / "pkg" / "mod.py", "shell")
    at_shell = [i for i in issues if i["file"] == "pkg/mod.py" and i["line"] == shell]
    assert [(i["tool"], i["rule"], i["also_reported_by"]) for i in at_shell] == [("ruff", "S602", ["bandit"])]
    assert at_shell[0]["severity"] == "error"  # bandit's HIGH severity survives the merge
    # The re-export the project's ruff allows is not an unused import, whatever vulture thinks.
    assert not [i for i in issues if i["file"] == "pkg/__init__.py"]
    # The asserts: ruff's S101 in code (merged with B101), none in tests (per-file ignore), none under noqa.
    asserts = [(i["file"], i["tool"], i["rule"]) for i in issues if i["rule"] in ("S101", "B101")]
    assert asserts == [("pkg/mod.py", "ruff", "S101")]


def test_the_project_bandit_configuration_replaces_codewards_default(security_project: Path,
                                                                      catalog: Catalog) -> None:
    (security_project / "pyproject.toml").write_text('[tool.bandit]\nskips = ["B602"]\n')
    call = caller(security_project, catalog)
    issues = _issues(call, ".", analysis_types=["security"])
    rules = {(i["file"], i["rule"]) for i in issues}
    assert ("pkg/mod.py", "B602") not in rules
    assert ("tests/test_mod.py", "B101") in rules  # the project did not skip B101 in tests: its choice
    ctx = ToolContext(Workspace.create([security_project]))
    outcome = catalog.call("coding_analyze_project", {"path": ".", "analysis_types": ["security"]}, ctx)
    assert outcome.structured is not None
    assert "configuration: pyproject.toml" in outcome.structured["analyses"][0]["message"]
