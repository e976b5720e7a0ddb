"""run_tests against pytest itself: the same suite of a real project, run by pytest on the host and by
run_tests in the sandbox through the official client — the same counts and the same failing test ids.

The project is iniconfig with its own 54 tests, three of them made to fail, plus a module with a
fixture that errors, a skip, an expected failure and a parametrized test (so every outcome occurs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.differential.support import McpSession, mcp_session, unpack

pytestmark = pytest.mark.xdist_group("differential-run-tests")
"""One worker runs the module: its tests share one server (made once, not once per worker)."""

HOST_PYTHON = (sys.prefix, sys.base_prefix)
"""This test environment's Python, shown read-only in the sandbox (the project's .venv links to it)."""
EXTRA = '''import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")


def test_uses_a_broken_fixture(broken):
    pass


@pytest.mark.skip(reason="later")
def test_later():
    pass


@pytest.mark.xfail(reason="known")
def test_known_bug():
    assert 1 == 2


@pytest.mark.parametrize("value", [1, 2, 3])
def test_small(value):
    assert value < 3
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = unpack("iniconfig", tmp_path_factory.mktemp("suite"))
    tests = top / "testing" / "test_iniconfig.py"
    text = tests.read_text()
    for old, new in (('assert str(e) == "filename:1: hello"', 'assert str(e) == "filename:2: hello"'),
                     ("assert err.lineno == 1", "assert err.lineno == 2"),
                     ('assert config.get("section", "int") == "1"', 'assert config.get("section", "int") == "one"')):
        assert old in text
        text = text.replace(old, new)
    tests.write_text(text)
    (top / "testing" / "test_outcomes.py").write_text(EXTRA)
    return top


@pytest.fixture(scope="module")
def session(project: Path) -> Iterator[McpSession]:
    served = project.parent / "served"
    shutil.copytree(project, served)
    (served / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    (served / "codeward.toml").write_text(f"[shell]\nro_paths = {list(HOST_PYTHON)!r}\n".replace("'", '"'))
    with mcp_session(served) as session:
        yield session


def pytest_reference(project: Path) -> tuple[dict[str, int], set[str]]:
    """pytest's own summary line and failing ids (-rfE), run on the host in a copy of the project."""
    copy = project.parent / "reference"
    if not copy.exists():
        shutil.copytree(project, copy)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "--color=no", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "-o", "addopts="], cwd=copy, capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, check=False)
    output = done.stdout
    counts = {kind: int(number) for number, kind in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed)",
                                                                output.strip().split("\n")[-1])}
    counts["errors"] = counts.pop("error", 0) + counts.pop("errors", 0)
    failing = set(re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE))
    return counts, failing


def test_run_tests_reports_what_pytest_reports(project: Path, session: McpSession) -> None:
    counts, failing = pytest_reference(project)
    assert counts["failed"] == 4 and counts["errors"] == 1 and counts["passed"] > 50, counts
    report = session.data("run_tests", timeout_s=240)
    assert report["status"] == "failed", report
    assert (report["passed"], report["failed"], report["errors"]) == \
        (counts["passed"], counts["failed"], counts["errors"])
    # pytest's summary counts skips and expected failures apart; the JUnit report both are read from
    # calls each a skip (the documented difference: run_tests's "skipped" is their sum).
    assert report["skipped"] == counts.get("skipped", 0) + counts.get("xfailed", 0)
    assert {failure["test_id"] for failure in report["failures"]} == failing
    for failure in report["failures"]:
        assert failure["path"] == failure["test_id"].split("::")[0]
