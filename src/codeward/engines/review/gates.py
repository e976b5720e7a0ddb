"""Quality gates: thresholds on a project analysis, each with its measured value and margin.

Every gate is named for what it measures: ``max_complexity`` bounds the most complex
function, ``avg_complexity`` the average. The gates with a default are always checked (a
default gate is turned off with the value ``off``); the others only when given. A gate's
margin is its distance from the threshold, positive when it passes and negative when it is
violated. A gate whose analysis could not run fails: it cannot see what that analysis would
have found.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from codeward.engines.review.models import (
    ANALYSIS_TYPES,
    AnalysisType,
    AnalyzerRun,
    GateReport,
    GateResult,
    ProjectAnalysis,
)
from codeward.kernel.result import ErrorKind, Result

OFF = "off"
"""The threshold that turns a default gate off."""
Threshold = float | Literal["off"] | None


class QualityGates(BaseModel):
    """Thresholds: an omitted one keeps its default, "off" turns it off."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})

    max_errors: int | Literal["off"] | None = Field(default=None, description="default 0")
    max_warnings: int | Literal["off"] | None = Field(default=None, description="default 50")
    avg_complexity: Threshold = Field(default=None, description="cyclomatic; default 10")
    max_complexity: Threshold = Field(default=None, description="of any one function; off by default")
    min_maintainability: Threshold = Field(default=None, description="index 0-100; default 50")
    min_quality_score: Threshold = Field(default=None, description="0-100; off by default")


@dataclass(frozen=True)
class Gate:
    """One threshold: what it measures, its default (None: only when given) and the analyses it needs."""

    name: str
    kind: Literal["max", "min"]
    default: float | None
    upper_bound: float | None
    measure: Callable[[ProjectAnalysis], float | None]
    needs: tuple[AnalysisType, ...]
    description: str
    integer: bool = False


GATES: tuple[Gate, ...] = (
    Gate("max_errors", "max", 0, None, lambda a: a.issue_summary.error, ANALYSIS_TYPES,
         "error-level issues", integer=True),
    Gate("max_warnings", "max", 50, None, lambda a: a.issue_summary.warning, ANALYSIS_TYPES,
         "warning-level issues", integer=True),
    Gate("avg_complexity", "max", 10.0, None, lambda a: a.metrics.avg_complexity, ("complexity",),
         "average cyclomatic complexity of the functions"),
    Gate("max_complexity", "max", None, None, lambda a: a.metrics.max_complexity, ("complexity",),
         "cyclomatic complexity of the most complex function"),
    Gate("min_maintainability", "min", 50.0, 100.0, lambda a: a.metrics.avg_maintainability, ("maintainability",),
         "average maintainability index (0-100)"),
    Gate("min_quality_score", "min", None, 100.0, lambda a: a.quality_score, ANALYSIS_TYPES,
         "quality score (0-100)"),
)
GATE_NAMES = tuple(gate.name for gate in GATES)
BY_NAME = {gate.name: gate for gate in GATES}


def gates_help() -> str:
    """Every gate with its default, for ``--help`` and error hints."""
    return "; ".join(f"{g.name} ({g.description}, " + (f"default {g.default:g})" if g.default is not None
                                                        else "off unless given)") for g in GATES)


@dataclass(frozen=True)
class Chosen:
    """A gate to check: its threshold, and whether that is the default (not given by the caller)."""

    threshold: float
    default: bool


def thresholds(gates: QualityGates | Mapping[str, Any] | None) -> Result[dict[str, Chosen]]:
    """The gates to check with their thresholds, or an error naming the bad gate and the fix."""
    given: dict[str, Any] = {}
    if isinstance(gates, QualityGates):
        given = {**gates.model_dump(), **(gates.model_extra or {})}
    elif gates is not None:
        given = dict(gates)
    given = {name: value for name, value in given.items() if value is not None}  # None: use the default
    for name in given:
        if name not in BY_NAME:
            return Result.fail(ErrorKind.INVALID_INPUT, f"unknown quality gate {name!r}", _unknown_hint(name),
                               data={})
    chosen: dict[str, Chosen] = {}
    for gate in GATES:
        value = given.get(gate.name, gate.default)
        if value is None or (isinstance(value, str) and value.strip().lower() == OFF):
            continue
        problem = _threshold_problem(gate, value)
        if problem:
            return Result.fail(ErrorKind.INVALID_INPUT, f"quality gate {gate.name} {problem}, got {value!r}",
                               _threshold_hint(gate), data={})
        chosen[gate.name] = Chosen(float(value), gate.name not in given)
    return Result.success(chosen)


def _unknown_hint(name: str) -> str:
    close = difflib.get_close_matches(name, GATE_NAMES, n=1)
    guess = f"Did you mean {close[0]}? " if close else ""
    return f"{guess}Known gates: {gates_help()}."


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
    return f"Give {gate.name} a number {bound}{default}, or {OFF} to skip it."


def evaluate(analysis: ProjectAnalysis, chosen: Mapping[str, Chosen], fail_on_violation: bool) -> GateReport:
    """Check each chosen gate against an analysis; a gate whose analysis failed fails too."""
    problems = [run for run in analysis.analyses if run.status == "error"]
    results = [_check(gate, analysis, chosen[gate.name], problems) for gate in GATES if gate.name in chosen]
    if problems:
        names = ", ".join(f"{run.analysis_type} ({run.tool})" for run in problems)
        results.append(GateResult(gate="analyses_completed", passed=False, threshold=0.0,
                                  actual=float(len(problems)), margin=-float(len(problems)), default=True,
                                  message=f"could not run: {names}; the gates cannot see what they would find"))
    passed = sum(result.passed for result in results)
    all_passed = passed == len(results)
    status: Literal["pass", "fail", "warn"] = "pass" if all_passed else ("fail" if fail_on_violation else "warn")
    return GateReport(success=all_passed, gates_checked=len(results), gates_passed=passed, results=results,
                      overall_status=status, path=analysis.path, analysis_problems=problems)


def _check(gate: Gate, analysis: ProjectAnalysis, chosen: Chosen, problems: list[AnalyzerRun]) -> GateResult:
    threshold = chosen.threshold
    blind = [run for run in problems if run.analysis_type in gate.needs]
    if blind:
        names = ", ".join(f"{run.analysis_type} ({run.tool})" for run in blind)
        return GateResult(gate=gate.name, passed=False, threshold=threshold, actual=None, margin=None,
                          default=chosen.default, message=f"not measured: {names} could not run")
    actual = gate.measure(analysis)
    if actual is None:
        return GateResult(gate=gate.name, passed=True, threshold=threshold, actual=None, margin=None,
                          default=chosen.default, message="nothing to measure (no functions or no Python files)")
    margin = threshold - actual if gate.kind == "max" else actual - threshold
    margin = round(margin, 2)
    passed = margin >= 0
    relation = "at most" if gate.kind == "max" else "at least"
    message = "" if passed else f"{actual:g} is not {relation} {threshold:g}"
    return GateResult(gate=gate.name, passed=passed, threshold=threshold, actual=round(float(actual), 2),
                      margin=margin, default=chosen.default, message=message)


def parse_cli_gates(items: list[str] | None) -> Result[dict[str, Chosen]]:
    """``["max_errors=0", "avg_complexity=8", "max_warnings=off"]`` as thresholds, for the command line."""
    given: dict[str, Any] = {}
    for item in items or []:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            return Result.fail(ErrorKind.INVALID_INPUT, f"gate {item!r} is not NAME=VALUE",
                               f"Write gates like max_errors=0 avg_complexity=8 max_warnings=off; known: "
                               f"{', '.join(GATE_NAMES)}.", data={})
        if raw.strip().lower() == OFF:
            given[name] = OFF
            continue
        try:
            given[name] = float(raw)
        except ValueError:
            return Result.fail(ErrorKind.INVALID_INPUT, f"gate {name} has a value that is not a number: {raw!r}",
                               f"Write a number after '=', e.g. avg_complexity=8, or {OFF} to skip the gate.",
                               data={})
    return thresholds(given)
