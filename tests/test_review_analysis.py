"""coding_analyze_file / coding_analyze_project against a project with planted bugs, via the catalog."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from codeward.config import ReviewSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from tests.conftest import snapshot
from tests.review_fixtures import CORE, Call, caller, plant_line, planted_project, write_planted_project


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return planted_project(tmp_path_factory, "review")


@pytest.fixture(scope="module")
def module_call(planted: Path, catalog: Catalog) -> Call:
    return caller(planted, catalog)


@pytest.fixture(scope="module")
def core_analysis(module_call: Call) -> dict[str, Any]:
    outcome = module_call("coding_analyze_file", file_path="app/pkg/core.py")
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    return outcome.structured


@pytest.fixture(scope="module")
def project_analysis(module_call: Call) -> dict[str, Any]:
    outcome = module_call("coding_analyze_project", path="app")
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    return outcome.structured


def _find(issues: list[dict[str, Any]], category: str, line: int, rule: str | None = None) -> dict[str, Any]:
    hits = [i for i in issues if i["category"] == category and i["line"] == line
            and (rule is None or i["rule"] == rule)]
    assert hits, f"no {category} issue{' ' + rule if rule else ''} at line {line}; got " + "\n".join(
        f"{i['line']} {i['category']} {i['rule']} {i['message']}" for i in issues)
    return hits[0]


def test_each_planted_finding_is_reported(planted: Path, core_analysis: dict[str, Any]) -> None:
    core = planted / "app" / "pkg" / "core.py"
    issues = core_analysis["issues"]
    unused = _find(issues, "lint", plant_line(core, "unused-import"), "F401")
    assert "os" in unused["message"] and unused["tool"] == "ruff"
    typed = _find(issues, "type", plant_line(core, "type"), "arg-type")
    assert typed["severity"] == "error" and '"str"' in typed["message"]
    shell = _find(issues, "security", plant_line(core, "shell"), "B602")
    assert shell["severity"] == "error" and "shell=True" in shell["message"]
    _find(issues, "security", plant_line(core, "eval"), "B307")
    complex_ = _find(issues, "complexity", plant_line(core, "complex"), "cyclomatic-complexity")
    assert "tangled" in complex_["message"]
    dead = _find(issues, "dead_code", plant_line(core, "dead"))
    assert "_unused_helper" in dead["message"]
    lines = core.read_text().splitlines()
    # columns are 1-based whatever each analyzer counts from
    assert unused["column"] == lines[unused["line"] - 1].index("os") + 1
    assert typed["column"] == lines[typed["line"] - 1].index('"1"') + 1
    assert shell["column"] == lines[shell["line"] - 1].index("subprocess.call") + 1
    for issue in issues:
        assert set(issue) >= {"severity", "line", "column", "message", "rule", "category", "suggestion"}
        assert issue["suggestion"]
        assert issue["file"] == "app/pkg/core.py"


def test_file_result_has_the_specified_shape(core_analysis: dict[str, Any]) -> None:
    assert core_analysis["success"] is True
    assert core_analysis["file_path"] == "app/pkg/core.py"
    assert core_analysis["language"] == "python"
    metrics = core_analysis["metrics"]
    assert metrics["lines_of_code"] == len(CORE.splitlines())
    assert metrics["max_complexity"] > 10
    assert 1 <= metrics["cyclomatic_complexity"] < metrics["max_complexity"]
    assert 0 < metrics["maintainability_index"] <= 100
    counts = core_analysis["issue_counts"]
    for severity in ("error", "warning", "info"):
        assert counts[severity] == sum(1 for i in core_analysis["issues"] if i["severity"] == severity)
    assert {run["analysis_type"] for run in core_analysis["analyses"]} == {
        "lint", "type", "security", "complexity", "maintainability", "dead_code"}
    assert all(run["status"] == "ok" for run in core_analysis["analyses"])


def test_severity_threshold_and_analysis_types_narrow_the_result(module_call: Call,
                                                                 core_analysis: dict[str, Any]) -> None:
    errors_only = module_call("coding_analyze_file", file_path="app/pkg/core.py", severity_threshold="error").structured
    assert errors_only is not None
    assert errors_only["issues"] and {i["severity"] for i in errors_only["issues"]} == {"error"}
    assert errors_only["issue_counts"]["error"] == core_analysis["issue_counts"]["error"]
    assert errors_only["issue_counts"]["warning"] == errors_only["issue_counts"]["info"] == 0

    security = module_call("coding_analyze_file", file_path="app/pkg/core.py",
                           analysis_types=["security"], severity_threshold="warning").structured
    assert security is not None
    assert {i["category"] for i in security["issues"]} == {"security"}
    assert {i["rule"] for i in security["issues"]} == {"B602", "B307"}
    assert [run["analysis_type"] for run in security["analyses"]] == ["security"]


def test_non_python_file_gets_complexity_from_lizard(planted: Path, module_call: Call) -> None:
    outcome = module_call("coding_analyze_file", file_path="app/web/branchy.js")
    assert not outcome.is_error, outcome.text
    result = outcome.structured
    assert result is not None and result["language"] == "javascript"
    issue = _find(result["issues"], "complexity", plant_line(planted / "app/web/branchy.js", "js-complex"))
    assert issue["tool"] == "lizard" and "branchy" in issue["message"]
    statuses = {run["analysis_type"]: run["status"] for run in result["analyses"]}
    assert statuses["complexity"] == "ok"
    assert statuses["lint"] == statuses["type"] == statuses["security"] == "skipped"
    assert result["success"] is True

    only_types = module_call("coding_analyze_file", file_path="app/web/branchy.js", analysis_types=["type"])
    assert only_types.is_error
    assert "not available for javascript" in only_types.text and "complexity" in only_types.text


def test_project_analysis_aggregates_files(planted: Path, project_analysis: dict[str, Any],
                                           core_analysis: dict[str, Any]) -> None:
    result = project_analysis
    assert result["success"] is True
    assert result["files_analyzed"] == 3  # __init__.py, core.py, branchy.js; README.txt is not source
    assert set(result["files_with_issues"]) == {"app/pkg/core.py", "app/web/branchy.js"}
    summary = result["issue_summary"]
    assert result["total_issues"] == summary["error"] + summary["warning"] + summary["info"]
    assert summary["error"] == core_analysis["issue_counts"]["error"]
    assert 0 <= result["quality_score"] < 100
    metrics = result["metrics"]
    assert metrics["total_loc"] == sum(len(p.read_text().splitlines())
                                       for p in (planted / "app").rglob("*") if p.suffix in {".py", ".js"})
    assert metrics["max_complexity"] >= core_analysis["metrics"]["max_complexity"]
    assert sum(result["complexity_distribution"].values()) == metrics["functions_analyzed"]
    top = result["top_issues"]
    assert top and len(top) <= 20 and top[0]["severity"] == "error"
    ranks = ["error", "warning", "info"]
    assert [ranks.index(i["severity"]) for i in top] == sorted(ranks.index(i["severity"]) for i in top)
    assert result["file_summaries"][0]["path"] == "app/pkg/core.py"  # the worst file comes first


def test_include_and_exclude_patterns(module_call: Call) -> None:
    only_py = module_call("coding_analyze_project", path="app", include_patterns=["**/*.py"]).structured
    assert only_py is not None and only_py["files_analyzed"] == 2
    assert "app/web/branchy.js" not in only_py["files_with_issues"]
    no_core = module_call("coding_analyze_project", path="app", exclude_patterns=["**/core.py"],
                          analysis_types=["complexity"]).structured
    assert no_core is not None and no_core["files_analyzed"] == 2
    assert no_core["files_with_issues"] == ["app/web/branchy.js"]


def test_gitignored_blacklisted_and_outside_files_are_not_analyzed(root: Path, call: Call,
                                                                   tmp_path: Path) -> None:
    (root / "keep.py").write_text("import os\n")
    (root / "ignored.py").write_text("import sys\n")
    (root / ".gitignore").write_text("ignored.py\n")
    outside = tmp_path / "outside.py"
    outside.write_text("import json\n")
    (root / "linked.py").symlink_to(outside)
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "vendored.py").write_text("import re\n")
    result = call("coding_analyze_project", path=".", analysis_types=["lint"]).structured
    assert result is not None
    assert result["files_analyzed"] == 1
    assert result["files_with_issues"] == ["keep.py"]


def test_missing_analyzer_is_a_per_type_error(root: Path, ctx: ToolContext, catalog: Catalog) -> None:
    write_planted_project(root)
    ctx.services = ctx.services.with_values(ReviewSettings(executables={"bandit": str(root / "no-such-bandit")}))
    outcome = catalog.call("coding_analyze_file", {"file_path": "app/pkg/core.py",
                                                   "analysis_types": ["lint", "security"]}, ctx)
    assert not outcome.is_error, outcome.text
    result = outcome.structured
    assert result is not None and result["success"] is False
    runs = {run["analysis_type"]: run for run in result["analyses"]}
    assert runs["lint"]["status"] == "ok"
    assert runs["security"]["status"] == "error" and "bandit" in runs["security"]["message"]
    assert runs["security"]["hint"]
    assert "security (bandit)" in result["error"]
    assert {i["category"] for i in result["issues"]} == {"lint"}
    assert "FAILED" in outcome.text


def _fake_analyzer(directory: Path, name: str, body: str) -> str:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_hung_analyzer_is_stopped_at_the_timeout(root: Path, ctx: ToolContext, catalog: Catalog,
                                                 tmp_path: Path) -> None:
    (root / "a.py").write_text("import os\n")
    fake = _fake_analyzer(tmp_path, "ruff", "sleep 60")
    ctx.services = ctx.services.with_values(ReviewSettings(executables={"ruff": fake}, timeout_seconds=5))
    result = catalog.call("coding_analyze_file", {"file_path": "a.py", "analysis_types": ["lint", "security"]},
                          ctx).structured
    assert result is not None and result["success"] is False
    runs = {run["analysis_type"]: run for run in result["analyses"]}
    assert runs["lint"]["status"] == "error" and "longer than 5 s" in runs["lint"]["message"]
    assert runs["security"]["status"] == "ok"


def test_unreadable_analyzer_output_is_a_clear_error(root: Path, ctx: ToolContext, catalog: Catalog,
                                                     tmp_path: Path) -> None:
    (root / "a.py").write_text("import os\n")
    fake = _fake_analyzer(tmp_path, "bandit", "echo 'this is not json'")
    crashing = _fake_analyzer(tmp_path, "radon", "echo 'Traceback: boom' >&2; exit 3")
    ctx.services = ctx.services.with_values(ReviewSettings(executables={"bandit": fake, "radon": crashing}))
    result = catalog.call("coding_analyze_file", {"file_path": "a.py"}, ctx).structured
    assert result is not None
    runs = {run["analysis_type"]: run for run in result["analyses"]}
    assert runs["security"]["status"] == "error" and "not JSON" in runs["security"]["message"]
    assert runs["complexity"]["status"] == "error" and "status 3" in runs["complexity"]["message"]
    assert "boom" in runs["complexity"]["message"]
    assert runs["lint"]["status"] == "ok"


def test_a_cancelled_call_stops_its_analyzers(root: Path, ctx: ToolContext, catalog: Catalog,
                                              tmp_path: Path) -> None:
    (root / "a.py").write_text("import os\n")
    hanging = _fake_analyzer(tmp_path, "ruff", "sleep 60")
    ctx.services = ctx.services.with_values(ReviewSettings(executables={"ruff": hanging}, timeout_seconds=60))
    timer = threading.Timer(0.5, ctx.cancelled.set)
    timer.start()
    try:
        result = catalog.call("coding_analyze_file", {"file_path": "a.py", "analysis_types": ["lint"]},
                              ctx).structured
    finally:
        timer.cancel()
    assert result is not None and result["success"] is False
    assert [run["message"] for run in result["analyses"]] == ["ruff was cancelled"]
    again = catalog.call("coding_analyze_file", {"file_path": "a.py", "analysis_types": ["type"]}, ctx).structured
    assert again is not None and again["analyses"][0]["message"] == "mypy was cancelled"


def test_a_syntax_error_does_not_hide_other_files_type_errors(root: Path, call: Call) -> None:
    (root / "broken.py").write_text("def broken(:\n    pass\n")
    (root / "typed.py").write_text("x: int = 'text'\n")
    result = call("coding_analyze_project", path=".", analysis_types=["lint", "type"]).structured
    assert result is not None and result["success"] is True
    issues = result["top_issues"]
    assert any(i["file"] == "typed.py" and i["category"] == "type" and i["rule"] == "assignment" for i in issues)
    assert any(i["file"] == "broken.py" and i["category"] == "lint" and i["severity"] == "error" for i in issues)


def test_analysis_writes_nothing_into_the_project(planted: Path, module_call: Call) -> None:
    before = snapshot(planted)
    names_before = sorted(p.name for p in planted.rglob("*"))
    outcome = module_call("coding_analyze_project", path=".")
    assert not outcome.is_error
    assert snapshot(planted) == before
    assert sorted(p.name for p in planted.rglob("*")) == names_before  # no caches, no __pycache__


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("coding_analyze_file", {"file_path": "../outside.py"}, "outside the workspace"),
        ("coding_analyze_file", {"file_path": "/etc/passwd"}, "outside the workspace"),
        ("coding_analyze_file", {"file_path": "missing.py"}, "does not exist"),
        ("coding_analyze_file", {"file_path": "app"}, "is a directory"),
        ("coding_analyze_file", {"file_path": "app/README.txt"}, "not supported"),
        ("coding_analyze_file", {"file_path": "app/pkg/core.py", "analysis_types": ["style"]}, "analysis_types"),
        ("coding_analyze_file", {"file_path": "app/pkg/core.py", "analysis_types": []}, "analysis_types is empty"),
        ("coding_analyze_file", {"file_path": "app/pkg/core.py", "severity_threshold": "fatal"},
         "severity_threshold"),
        ("coding_analyze_file", {"file_path": "app/pkg/core.py", "severity": "error"}, "unknown argument"),
        ("coding_analyze_project", {"path": "../"}, "outside the workspace"),
        ("coding_analyze_project", {"path": "nope"}, "does not exist"),
        ("coding_analyze_project", {"path": "app/pkg/core.py"}, "not a directory"),
        ("coding_analyze_project", {"path": "app", "include_patterns": ["../**"]}, "contains '..'"),
        ("coding_analyze_project", {"path": "app", "exclude_patterns": [""]}, "is empty"),
        ("coding_analyze_project", {"path": "app", "output_path": "../report.json"}, "outside the workspace"),
        ("coding_analyze_project", {"path": "app", "output_path": "app"}, "is a directory"),
        ("coding_analyze_project", {"path": "app", "output_path": "app/pkg/core.py/r.json"}, "which is a file"),
        ("coding_analyze_project", {"path": "app", "output_path": ".git/r.json"}, ".git"),
        ("coding_analyze_project", {"path": "app", "report_format": "pdf"}, "report_format"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(root: Path, call: Call, tool: str,
                                                        arguments: dict[str, Any], expected: str) -> None:
    write_planted_project(root)
    (root / ".git").mkdir()
    before = snapshot(root.parent)
    outcome = call(tool, **arguments)
    assert outcome.is_error
    assert expected in outcome.text
    assert "Hint:" in outcome.text or "must be" in outcome.text
    assert snapshot(root.parent) == before
    assert not (root.parent / "report.json").exists()


def test_empty_directory_is_analyzed_with_a_note(root: Path, call: Call) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "notes.md").write_text("# notes\n")
    outcome = call("coding_analyze_project", path="docs")
    assert not outcome.is_error
    assert outcome.structured is not None and outcome.structured["files_analyzed"] == 0
    assert "No supported source files" in outcome.text


def test_analyzers_come_from_the_interpreters_environment() -> None:
    from codeward.engines.review.runner import locate

    for name in ("ruff", "mypy", "bandit", "radon", "vulture", "lizard"):
        found = locate(name, ReviewSettings())
        assert found.ok, found.error_text()
        assert os.access(found.data, os.X_OK)
