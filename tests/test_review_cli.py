"""run_review_cli (behind ``codeward review``): exit status for CI, report output, clear usage errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.coding.review.cli import EXIT_PASS, EXIT_USAGE, EXIT_VIOLATION, run_review_cli
from tests.conftest import snapshot
from tests.review_fixtures import write_planted_project

LENIENT = ["max_errors=100", "max_warnings=100", "max_complexity=50", "min_maintainability=1"]


SCRIPT = """
import json, sys
from codeward.coding.review.cli import run_review_cli
path, fmt, gates, output = json.loads(sys.argv[1])
sys.exit(run_review_cli(path, fmt, gates, output))
"""


def _review_in_subprocess(cwd: Path, path: str, fmt: str, gates: list[str] | None = None,
                          output: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the review as CI would: a fresh interpreter whose working directory is the project."""
    return subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([path, fmt, gates, output])], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_violations_fail_the_build_and_print_the_report(tmp_path: Path) -> None:
    write_planted_project(tmp_path)
    finished = _review_in_subprocess(tmp_path, "app", "md")
    assert finished.returncode == EXIT_VIOLATION, finished.stderr
    assert finished.stdout.startswith("# Code Quality Report")
    assert "FAIL max_errors" in finished.stderr


def test_passing_gates_exit_zero_and_write_the_report_file(tmp_path: Path) -> None:
    write_planted_project(tmp_path)
    finished = _review_in_subprocess(tmp_path, "app", "html", LENIENT, "out/review.html")
    assert finished.returncode == EXIT_PASS, finished.stderr
    assert finished.stdout == ""
    assert (tmp_path / "out" / "review.html").read_text().startswith("<!DOCTYPE html>")
    assert "wrote out/review.html" in finished.stderr and "PASS" in finished.stderr


def test_clean_code_passes_the_default_gates(tmp_path: Path) -> None:
    write_planted_project(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    status = run_review_cli("clean", "json", None, None, root=tmp_path, stdout=out, stderr=err)
    assert status == EXIT_PASS, err.getvalue()
    assert '"files_analyzed": 1' in out.getvalue()


@pytest.mark.parametrize(
    ("path", "fmt", "gates", "output", "expected"),
    [
        ("app", "pdf", None, None, "unknown format 'pdf'"),
        ("app", "md", ["max_bugs=1"], None, "unknown quality gate 'max_bugs'"),
        ("app", "md", ["max_errors"], None, "is not NAME=VALUE"),
        ("app", "md", ["max_errors=lots"], None, "not a number"),
        ("app", "md", ["max_complexity=-2"], None, "must not be negative"),
        ("../", "md", None, None, "outside the workspace"),
        ("missing", "md", None, None, "does not exist"),
        ("app", "html", None, "../escape.html", "outside the workspace"),
    ],
)
def test_usage_errors_exit_two_and_change_nothing(tmp_path: Path, path: str, fmt: str, gates: list[str] | None,
                                                  output: str | None, expected: str) -> None:
    root = tmp_path / "project"
    root.mkdir()
    write_planted_project(root)
    before = snapshot(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    status = run_review_cli(path, fmt, gates, output, root=root, stdout=out, stderr=err)
    assert status == EXIT_USAGE
    assert expected in err.getvalue() and "Hint:" in err.getvalue()
    assert out.getvalue() == ""
    assert snapshot(tmp_path) == before
