"""run_tests: the project's tests in the shell sandbox, answered with structured results."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.engines.shell.settings import ShellSettings
from codeward.engines.shell.test_results import parse_junit
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Workspace
from tests.conftest import every_tool_env

HOST_PYTHON = (sys.prefix, sys.base_prefix)
"""This test environment's Python, shown read-only in the sandbox (its /usr Python has no pytest)."""

SUITE = {
    "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['tests']\n",
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": (
        "import pytest\n\nfrom calc import add\n\n\n"
        "def test_adds():\n    assert add(1, 2) == 3\n\n\n"
        "def test_wrong():\n    assert add(2, 2) == 5, 'two and two'\n\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture exploded')\n\n\n"
        "def test_uses_broken(broken):\n    pass\n\n\n"
        "@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n\n\n"
        "class TestGroup:\n    def test_inside(self):\n        assert add(0, 0) == 1\n"
    ),
}


def _project(root: Path) -> None:
    for rel, text in SUITE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".venv").symlink_to(sys.prefix, target_is_directory=True)


@pytest.fixture
def run(root: Path, workspace: Workspace, catalog: Catalog) -> Any:
    ctx = ToolContext(workspace, services=Services(ShellSettings(ro_paths=HOST_PYTHON)))

    def call(**arguments: Any) -> ToolOutcome:
        return catalog.call("run_tests", arguments, ctx)

    return call


def test_a_pytest_suite_comes_back_structured(root: Path, run: Any) -> None:
    _project(root)
    outcome = run()
    assert not outcome.is_error, outcome.text
    data = outcome.structured
    assert data is not None
    assert (data["status"], data["passed"], data["failed"], data["errors"], data["skipped"]) == ("failed", 1, 2, 1, 1)
    failures = {f["test_id"]: f for f in data["failures"]}
    assert set(failures) == {"tests/test_calc.py::test_wrong", "tests/test_calc.py::test_uses_broken",
                             "tests/test_calc.py::TestGroup::test_inside"}
    wrong = failures["tests/test_calc.py::test_wrong"]
    assert (wrong["kind"], wrong["path"], wrong["line"]) == ("failed", "tests/test_calc.py", 11)
    assert "two and two" in wrong["message"]
    broken = failures["tests/test_calc.py::test_uses_broken"]
    assert broken["kind"] == "error" and "fixture exploded" in broken["message"]
    assert "FAILED tests/test_calc.py::test_wrong (tests/test_calc.py:11)" in outcome.text
    assert data["log"].startswith(".codeward/outputs/") and "test_wrong" in (root / data["log"]).read_text()
    assert not (root / "__pycache__").exists() and not (root / ".pytest_cache").exists()


def test_targets_keyword_and_a_passing_run(root: Path, run: Any) -> None:
    _project(root)
    passed = run(targets=["tests/test_calc.py::test_adds"])
    assert passed.structured is not None and passed.structured["status"] == "passed"
    assert passed.structured["passed"] == 1 and passed.structured["failures"] == []
    chosen = run(keyword="inside or adds")
    assert chosen.structured is not None and (chosen.structured["passed"], chosen.structured["failed"]) == (1, 1)


def test_other_runners_by_command(root: Path, run: Any) -> None:
    _project(root)
    ok = run(command="echo all good && exit 0")
    assert ok.structured is not None and ok.structured["status"] == "passed" and "all good" in ok.text
    bad = run(command="echo 3 tests failed >&2; exit 1")
    assert bad.structured is not None and bad.structured["status"] == "failed" and "3 tests failed" in bad.text


def test_bad_input_is_refused_and_runs_nothing(root: Path, tmp_path: Path, run: Any) -> None:
    _project(root)
    for arguments, kind, words in [
        ({"targets": ["missing_test.py"]}, ErrorKind.NOT_FOUND, "does not exist"),
        ({"targets": ["--rootdir=/"]}, ErrorKind.INVALID_INPUT, "not a test path"),
        ({"targets": ["../elsewhere"]}, ErrorKind.PERMISSION, "outside the workspace"),
        ({"targets": [".env"]}, ErrorKind.PERMISSION, "blacklisted"),
        ({"keyword": "a\nrm -rf /"}, ErrorKind.INVALID_INPUT, "newline"),
        ({"command": "true", "targets": ["tests"]}, ErrorKind.INVALID_INPUT, "drop command"),
    ]:
        outcome = run(**arguments)
        assert outcome.is_error and outcome.errors[0].kind is kind and words in outcome.text, (arguments, outcome.text)
    assert not (root / ".codeward/outputs").exists()


def test_no_tests_and_a_timeout(root: Path, run: Any) -> None:
    (root / "README.md").write_text("nothing to test\n")
    missing = run()
    assert missing.is_error and "command=" in missing.text
    _project(root)
    (root / "tests/test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(60)\n")
    slow = run(targets=["tests/test_slow.py"], timeout_s=5)
    assert slow.is_error or (slow.structured is not None and slow.structured["status"] == "timeout"), slow.text


def test_a_test_run_cannot_touch_the_host(root: Path, tmp_path: Path, run: Any) -> None:
    """The tests are the project's code: they run in the sandbox, and their writes pass the gate."""
    _project(root)
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched\n")
    (root / "tests/test_attack.py").write_text(
        "import os, pathlib\n\n\n"
        f"def test_escape():\n    pathlib.Path({str(canary)!r}).write_text('pwned')\n\n\n"
        "def test_git_hook():\n    os.makedirs('.git/hooks', exist_ok=True)\n"
        "    pathlib.Path('.git/hooks/pre-commit').write_text('#!/bin/sh\\ntouch /tmp/pwned\\n')\n")
    outcome = run(targets=["tests/test_attack.py"])
    assert canary.read_text() == "untouched\n"
    assert not (root / ".git/hooks/pre-commit").exists()
    assert "NOT applied" in outcome.text or outcome.structured is not None


def test_junit_reports_with_entities_are_refused() -> None:
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite><testcase name="t"/></testsuite>'
    assert parse_junit(bomb, Path("/")) is None
    assert parse_junit(b"not xml", Path("/")) is None


pytestmark = pytest.mark.anyio


async def test_run_tests_over_stdio(root: Path) -> None:
    _project(root)
    (root / "codeward.toml").write_text(f"[shell]\nro_paths = {list(HOST_PYTHON)!r}\n".replace("'", '"'))
    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)], cwd=str(root),
                                   env=every_tool_env(PYTHONUNBUFFERED="1"))
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["run_tests"].output_schema is not None
        result = await client.call_tool("run_tests", {"targets": ["tests"]})
        assert not result.is_error and result.structured_content is not None
        assert result.structured_content["failed"] == 2, result.content
        for arguments, words in [({"targets": ["../outside"]}, "outside the workspace"),
                                 ({"targets": [".env"]}, "blacklisted"),
                                 ({"targets": ["--co"]}, "not a test path"),
                                 ({"timeout_s": 0}, "timeout_s")]:
            refused = await client.call_tool("run_tests", arguments)
            text = "\n".join(getattr(block, "text", "") for block in refused.content)
            assert refused.is_error and words in text, (arguments, text)
