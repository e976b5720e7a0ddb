"""Quality gates: thresholds on a project analysis, each with its measured value and margin.

The four gates of the specification are always checked (with their defaults unless given);
``min_quality_score`` is checked when given. A gate's margin is its distance from the
threshold, positive when it passes and negative when it is violated. When an analysis
could not run, the gates cannot see what it would have found, so the check does not pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from codeward.coding.review.models import GateReport, GateResult, ProjectAnalysis
from codeward.result import ErrorKind, Result


class QualityGates(BaseModel):
    """Thresholds; omitted ones use their defaults (min_quality_score is only checked when given)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})

    max_complexity: float | None = Field(default=None, description="Maximum average cyclomatic complexity "
                                                                   "(default 10).")
    min_maintainability: float | None = Field(default=None, description="Minimum average maintainability "
                                                                        "index, 0-100 (default 50).")
    max_errors: int | None = Field(default=None, description="Maximum error-level issues (default 0).")
    max_warnings: int | None = Field(default=None, description="Maximum warning-level issues (default 50).")
    min_quality_score: float | None = Field(default=None, description="Minimum quality score, 0-100 "
                                                                      "(not checked unless given).")


@dataclass(frozen=True)
class Gate:
    name: str
    kind: Literal["max", "min"]
    default: float | None
    upper_bound: float | None
    measure: Callable[[ProjectAnalysis], float | None]
    integer: bool = False


GATES: tuple[Gate, ...] = (
    Gate("max_complexity", "max", 10.0, None, lambda a: a.metrics.avg_complexity),
    Gate("min_maintainability", "min", 50.0, 100.0, lambda a: a.metrics.avg_maintainability),
    Gate("max_errors", "max", 0, None, lambda a: a.issue_summary.error, integer=True),
    Gate("max_warnings", "max", 50, None, lambda a: a.issue_summary.warning, integer=True),
    Gate("min_quality_score", "min", None, 100.0, lambda a: a.quality_score),
)
GATE_NAMES = tuple(gate.name for gate in GATES)


def thresholds(gates: QualityGates | Mapping[str, Any] | None) -> Result[dict[str, float]]:
    """The threshold of every gate to check, or an error naming the bad gate and the fix."""
    given: dict[str, Any] = {}
    if isinstance(gates, QualityGates):
        given = {**gates.model_dump(), **(gates.model_extra or {})}
    elif gates is not None:
        given = dict(gates)
    given = {name: value for name, value in given.items() if value is not None}  # None: use the default
    unknown = [name for name in given if name not in GATE_NAMES]
    if unknown:
        return Result.fail(ErrorKind.INVALID_INPUT, f"unknown quality gate {unknown[0]!r}",
                           f"Known gates: {', '.join(GATE_NAMES)}.", data={})
    chosen: dict[str, float] = {}
    for gate in GATES:
        value = given.get(gate.name, gate.default)
        if value is None:
            continue
        problem = _threshold_problem(gate, value)
        if problem:
            return Result.fail(ErrorKind.INVALID_INPUT, f"quality gate {gate.name} {problem}, got {value!r}",
                               _threshold_hint(gate), data={})
        chosen[gate.name] = float(value)
    return Result.success(chosen)


def _threshold_problem(gate: Gate, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "must be a finite number"
    if gate.integer and not float(value).is_integer():
        return "must be a whole number"
    if value < 0:
        return "must not be negative"
    if gate.upper_bound is not None and value > gate.upper_bound:
        return f"must be at most {gate.upper_bound:g}"
    return ""


def _threshold_hint(gate: Gate) -> str:
    bound = f"between 0 and {gate.upper_bound:g}" if gate.upper_bound is not None else "0 or more"
    default = f" (default {gate.default:g})" if gate.default is not None else ""
    return f"Give {gate.name} a number {bound}{default}."


def evaluate(analysis: ProjectAnalysis, chosen: Mapping[str, float], fail_on_violation: bool) -> GateReport:
    """Check each chosen gate against an analysis."""
    results = [_check(gate, analysis, chosen[gate.name]) for gate in GATES if gate.name in chosen]
    problems = [run for run in analysis.analyses if run.status == "error"]
    if problems:
        names = ", ".join(f"{run.analysis_type} ({run.tool})" for run in problems)
        results.append(GateResult(gate="analyses_completed", passed=False, threshold=0.0,
                                  actual=float(len(problems)), margin=-float(len(problems)),
                                  message=f"could not run: {names}; the gates cannot see what they would find"))
    passed = sum(result.passed for result in results)
    all_passed = passed == len(results)
    status: Literal["pass", "fail", "warn"] = "pass" if all_passed else ("fail" if fail_on_violation else "warn")
    return GateReport(success=all_passed, gates_checked=len(results), gates_passed=passed, results=results,
                      overall_status=status, path=analysis.path, analysis_problems=problems)


def _check(gate: Gate, analysis: ProjectAnalysis, threshold: float) -> GateResult:
    actual = gate.measure(analysis)
    if actual is None:
        return GateResult(gate=gate.name, passed=True, threshold=threshold, actual=None, margin=None,
                          message="nothing to measure (no functions or no Python files)")
    margin = threshold - actual if gate.kind == "max" else actual - threshold
    margin = round(margin, 2)
    passed = margin >= 0
    relation = "at most" if gate.kind == "max" else "at least"
    message = "" if passed else f"{actual:g} is not {relation} {threshold:g}"
    return GateResult(gate=gate.name, passed=passed, threshold=threshold, actual=round(float(actual), 2),
                      margin=margin, message=message)


def parse_cli_gates(items: list[str] | None) -> Result[dict[str, float]]:
    """``["max_errors=0", "max_complexity=8"]`` as thresholds, for the command line."""
    given: dict[str, Any] = {}
    for item in items or []:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            return Result.fail(ErrorKind.INVALID_INPUT, f"gate {item!r} is not NAME=VALUE",
                               f"Write gates like max_errors=0 max_complexity=8; known: {', '.join(GATE_NAMES)}.",
                               data={})
        try:
            given[name] = float(raw)
        except ValueError:
            return Result.fail(ErrorKind.INVALID_INPUT, f"gate {name} has a value that is not a number: {raw!r}",
                               "Write a number after '=', e.g. max_complexity=8.", data={})
    return thresholds(given)
