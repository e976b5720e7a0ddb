"""coding_check_quality_gates: gates pass and fail as configured, with honest margins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.config import ReviewSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot
from tests.review_fixtures import Call, caller, planted_project, write_planted_project

LENIENT = {"avg_complexity": 50, "min_maintainability": 1, "max_errors": 100, "max_warnings": 100}


@pytest.fixture(scope="module")
def planted_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return planted_project(tmp_path_factory, "gates")


@pytest.fixture(scope="module")
def module_call(planted_root: Path, catalog: Catalog) -> Call:
    return caller(planted_root, catalog)


@pytest.fixture(scope="module")
def analysis(module_call: Call) -> dict[str, Any]:
    result = module_call("coding_analyze_project", path="app").structured
    assert result is not None
    return result


def _gates(outcome: ToolOutcome) -> dict[str, dict[str, Any]]:
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    return {result["gate"]: result for result in outcome.structured["results"]}


def test_default_gates_fail_on_the_planted_errors(module_call: Call, analysis: dict[str, Any]) -> None:
    outcome = module_call("coding_check_quality_gates", path="app")
    report = outcome.structured
    assert report is not None
    assert report["success"] is False and report["overall_status"] == "fail"
    gates = _gates(outcome)
    assert set(gates) == {"avg_complexity", "min_maintainability", "max_errors", "max_warnings"}
    assert all(g["default"] for g in gates.values())
    assert report["gates_checked"] == 4
    assert report["gates_passed"] == sum(g["passed"] for g in gates.values())
    errors = gates["max_errors"]
    assert errors["threshold"] == 0
    assert errors["actual"] == analysis["issue_summary"]["error"] > 0
    assert errors["margin"] == -errors["actual"] and errors["passed"] is False
    complexity = gates["avg_complexity"]
    assert complexity["threshold"] == 10 and complexity["actual"] == analysis["metrics"]["avg_complexity"]
    assert complexity["margin"] == pytest.approx(10 - complexity["actual"]) and complexity["passed"] is True
    maintainability = gates["min_maintainability"]
    assert maintainability["actual"] == analysis["metrics"]["avg_maintainability"]
    assert maintainability["margin"] == pytest.approx(maintainability["actual"] - 50)
    assert "FAIL max_errors" in outcome.text


def test_warn_instead_of_fail_when_violations_are_tolerated(module_call: Call) -> None:
    report = module_call("coding_check_quality_gates", path="app", fail_on_violation=False).structured
    assert report is not None
    assert report["overall_status"] == "warn" and report["success"] is False


def test_lenient_gates_pass_with_positive_margins(module_call: Call, analysis: dict[str, Any]) -> None:
    outcome = module_call("coding_check_quality_gates", path="app", gates=LENIENT)
    report = outcome.structured
    assert report is not None and report["overall_status"] == "pass" and report["success"] is True
    gates = _gates(outcome)
    assert gates["max_errors"]["margin"] == 100 - analysis["issue_summary"]["error"]
    assert gates["max_warnings"]["margin"] == 100 - analysis["issue_summary"]["warning"]
    assert all(g["passed"] and g["margin"] >= 0 for g in gates.values())


def test_one_tight_gate_fails_alone(module_call: Call, analysis: dict[str, Any]) -> None:
    tight = analysis["metrics"]["avg_complexity"] - 0.5
    gates = _gates(module_call("coding_check_quality_gates", path="app", gates={**LENIENT, "avg_complexity": tight}))
    assert [name for name, g in gates.items() if not g["passed"]] == ["avg_complexity"]
    assert gates["avg_complexity"]["margin"] == pytest.approx(-0.5)
    assert not gates["avg_complexity"]["default"] and gates["max_errors"]["default"] is False


def test_max_complexity_bounds_the_most_complex_function(module_call: Call, analysis: dict[str, Any]) -> None:
    """The planted function is far above the average: max_complexity sees it, avg_complexity does not."""
    worst = analysis["metrics"]["max_complexity"]
    assert worst > analysis["metrics"]["avg_complexity"] + 5
    gates = _gates(module_call("coding_check_quality_gates", path="app",
                               gates={**LENIENT, "max_complexity": worst - 1}))
    assert gates["max_complexity"]["actual"] == worst and gates["max_complexity"]["passed"] is False
    assert gates["avg_complexity"]["passed"] is True


def test_a_default_gate_can_be_turned_off(module_call: Call) -> None:
    gates = _gates(module_call("coding_check_quality_gates", path="app",
                               gates={"max_errors": 100, "max_warnings": "off"}))
    assert "max_warnings" not in gates
    assert set(gates) == {"max_errors", "avg_complexity", "min_maintainability"}


def test_quality_score_gate_only_when_asked(module_call: Call, analysis: dict[str, Any]) -> None:
    score = analysis["quality_score"]
    gates = _gates(module_call("coding_check_quality_gates", path="app",
                               gates={**LENIENT, "min_quality_score": score + 1}))
    assert gates["min_quality_score"]["actual"] == score and gates["min_quality_score"]["passed"] is False


def test_clean_code_passes_the_default_gates(module_call: Call) -> None:
    outcome = module_call("coding_check_quality_gates", path="clean")
    report = outcome.structured
    assert report is not None and report["overall_status"] == "pass", outcome.text
    assert report["gates_passed"] == report["gates_checked"] == 4


def test_a_gate_whose_analysis_failed_fails(root: Path, ctx: ToolContext, catalog: Catalog) -> None:
    """Complexity could not be measured: the complexity gates say so and fail instead of passing blind."""
    (root / "ok.py").write_text('"""Fine."""\n\n\ndef one() -> int:\n    return 1\n')
    ctx.services = ctx.services.with_values(ReviewSettings(executables={"radon": str(root / "missing-radon")}))
    outcome = catalog.call("coding_check_quality_gates", {"path": ".", "gates": {"max_complexity": 5}}, ctx)
    gates = _gates(outcome)
    for name in ("avg_complexity", "max_complexity", "min_maintainability", "max_errors", "max_warnings"):
        assert gates[name]["passed"] is False, name
        assert "could not run" in gates[name]["message"] and gates[name]["actual"] is None
    assert outcome.text.startswith("ANALYSIS FAILED: complexity (radon)")


def test_a_single_file_can_be_gated(module_call: Call) -> None:
    report = module_call("coding_check_quality_gates", path="clean/tidy.py").structured
    assert report is not None and report["overall_status"] == "pass"


def test_an_analyzer_that_cannot_run_fails_the_gates(root: Path, ctx: ToolContext, catalog: Catalog) -> None:
    (root / "ok.py").write_text('"""Fine."""\n\nVALUE = 1\n')
    ctx.services = ctx.services.with_values(ReviewSettings(executables={"mypy": str(root / "missing-mypy")}))
    outcome = catalog.call("coding_check_quality_gates", {"path": "."}, ctx)
    report = outcome.structured
    assert report is not None and report["overall_status"] == "fail"
    gates = _gates(outcome)
    assert gates["analyses_completed"]["passed"] is False
    assert "type (mypy)" in gates["analyses_completed"]["message"]
    assert report["analysis_problems"][0]["tool"] == "mypy"


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        ({"max_bugs": 3}, "unknown quality gate 'max_bugs'"),
        ({"max_complexty": 3}, "Did you mean max_complexity?"),
        ({"max_warnings": "sometimes"}, "gates.max_warnings"),
        ({"max_complexity": -1}, "must not be negative"),
        ({"min_maintainability": 150}, "must be at most 100"),
        ({"max_errors": 1.5}, "valid integer"),
        ({"max_warnings": "many"}, "gates.max_warnings"),
        ({"min_quality_score": 101}, "must be at most 100"),
    ],
)
def test_bad_gates_are_clear_errors(root: Path, call: Call, gates: dict[str, Any], expected: str) -> None:
    write_planted_project(root)
    before = snapshot(root)
    outcome = call("coding_check_quality_gates", path="app", gates=gates)
    assert outcome.is_error
    assert expected in outcome.text
    assert snapshot(root) == before


def test_bad_paths_are_clear_errors(call: Call) -> None:
    assert "outside the workspace" in call("coding_check_quality_gates", path="/").text
    assert "does not exist" in call("coding_check_quality_gates", path="nowhere").text
