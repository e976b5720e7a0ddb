"""run_review_cli (behind ``codeward review``): exit status for CI, report output, clear usage errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.apps.cli.review import EXIT_PASS, EXIT_USAGE, EXIT_VIOLATION, run_review_cli
from codeward.config import ReviewSettings
from tests.conftest import snapshot
from tests.review_fixtures import write_planted_project

LENIENT = ["max_errors=100", "max_warnings=100", "avg_complexity=50", "min_maintainability=1"]


SCRIPT = """
import json, sys
from codeward.apps.cli.review import run_review_cli
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
        ("app", "html", None, str(Path(__file__).parent), "is a directory"),
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


def _codeward(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeward", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_help_lists_every_gate_with_its_default(tmp_path: Path) -> None:
    shown = " ".join(_codeward("review", "--help", cwd=tmp_path).stdout.split())
    for expected in ("max_errors (error-level issues, default 0)", "max_warnings (warning-level issues, default 50)",
                     "avg_complexity (average cyclomatic complexity of the functions, default 10)",
                     "max_complexity (cyclomatic complexity of the most complex function, off unless given)",
                     "min_maintainability (average maintainability index (0-100), default 50)",
                     "--timeout", "--isolated", "sarif", "github"):
        assert expected in shown


def test_the_report_lists_the_default_gates_beside_the_given_ones(tmp_path: Path) -> None:
    """`--gates max_errors=0` still checks the default gates, and the report says which and why."""
    write_planted_project(tmp_path)
    finished = _codeward("review", "clean", "--gates", "max_errors=0", "max_warnings=off", cwd=tmp_path)
    assert finished.returncode == EXIT_PASS, finished.stderr
    verdict = finished.stderr[finished.stderr.index("quality gates for clean"):]
    assert "PASS max_errors: actual 0, threshold 0, margin 0" in verdict
    assert "PASS avg_complexity: actual 1, threshold 10 (default)" in verdict
    assert "min_maintainability" in verdict and "max_warnings" not in verdict
    assert "## Quality gates: PASS (3/3 passed)" in finished.stdout
    assert "| `avg_complexity` | pass | 1 | 10 (default) |" in finished.stdout


@pytest.mark.parametrize("raw", ["soon", "0", "-5", "nan", "inf", "1e9"])
def test_a_bad_timeout_is_a_usage_error(tmp_path: Path, raw: str) -> None:
    write_planted_project(tmp_path)
    before = snapshot(tmp_path)
    finished = _codeward("review", "app", f"--timeout={raw}", cwd=tmp_path)
    assert finished.returncode == EXIT_USAGE
    assert f"--timeout {raw!r}" in finished.stderr and "Hint: Give the seconds each analyzer may run" in finished.stderr
    assert finished.stdout == "" and snapshot(tmp_path) == before


def test_a_missing_path_among_several_is_a_usage_error(tmp_path: Path) -> None:
    write_planted_project(tmp_path)
    finished = _codeward("review", "clean/tidy.py", "nowhere.py", cwd=tmp_path)
    assert finished.returncode == EXIT_USAGE
    assert "'nowhere.py' does not exist" in finished.stderr and "Hint:" in finished.stderr


def test_a_slow_analyzer_is_reported_while_it_runs_then_fails_its_gates_first(tmp_path: Path) -> None:
    """--timeout stops it; progress says what is still running; the failure comes before the gates."""
    write_planted_project(tmp_path)
    hanging = tmp_path / "radon"
    hanging.write_text("#!/bin/sh\nsleep 60\n")
    hanging.chmod(0o755)
    err = io.StringIO()
    config = ReviewSettings(executables={"radon": str(hanging)}, heartbeat_seconds=0.3)
    status = run_review_cli(["clean"], "text", None, None, timeout="2", config=config, root=tmp_path,
                            stdout=io.StringIO(), stderr=err)
    assert status == EXIT_VIOLATION
    text = err.getvalue()
    assert "each stopped after 2 s" in text
    assert any(line.split("still running: ")[-1].count("radon (complexity)") for line in text.splitlines()
               if "still running: " in line)
    assert "radon (complexity) failed in" in text
    failed = text.index("ANALYSIS FAILED: complexity (radon): radon took longer than 2 s")
    assert "--timeout" in text[failed:text.index("quality gates")]
    assert failed < text.index("quality gates for clean: FAIL")
    assert "FAIL avg_complexity: actual n/a, threshold 10 (default), margin n/a (not measured: complexity " \
           "(radon) could not run)" in text


def test_several_paths_are_reviewed_as_one_project(tmp_path: Path) -> None:
    write_planted_project(tmp_path)
    out = io.StringIO()
    status = run_review_cli(["clean/tidy.py", "app/pkg"], "json", ["max_errors=100", "max_warnings=100"], None,
                            root=tmp_path, stdout=out, stderr=io.StringIO(), progress=False)
    analysis = json.loads(out.getvalue())["analysis"]
    assert analysis["files_analyzed"] == 3 and analysis["path"] == "2 paths"
    assert {issue["file"] for issue in analysis["issues"]} <= {"app/pkg/core.py", "clean/tidy.py"}
    assert status in (EXIT_PASS, EXIT_VIOLATION)


def test_a_person_may_write_the_report_outside_the_project(tmp_path: Path) -> None:
    """`--output` is a person's path (relative to the current folder, as a shell reads it): outside the project
    too, where the agent's tools may not write (coding_analyze_project's output_path stays refused: see
    tests/test_review_analysis.py). A path under a file is still a usage error, and nothing is written."""
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / "fine.py").write_text('"""Fine."""\n', encoding="utf-8")
    wrote = _codeward("review", "app", "--format", "json", "--output", "../reports/quality.json", cwd=project)
    assert wrote.returncode == EXIT_PASS, wrote.stderr
    report = tmp_path / "reports" / "quality.json"
    assert json.loads(report.read_text(encoding="utf-8"))["analysis"]["files_analyzed"] == 1
    assert f"codeward review: wrote {report}" in wrote.stderr
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    before = snapshot(tmp_path)
    under_a_file = _codeward("review", "app", "--output", "../a-file/report.html", cwd=project)
    assert under_a_file.returncode == EXIT_USAGE and "which is a file" in under_a_file.stderr
    assert snapshot(tmp_path) == before
