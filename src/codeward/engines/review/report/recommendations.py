"""Improvement advice derived from an analysis: what to fix first, and how."""

from __future__ import annotations

from collections import Counter

from codeward.engines.review.models import Issue
from codeward.engines.review.report.data import ReportData

MI_LOW = 50.0


def recommend(data: ReportData) -> list[str]:
    """Concrete next steps, most urgent first; a single line of praise when there is nothing to do."""
    advice: list[str] = []
    issues = data.all_issues()
    by_category = Counter(data.issues_by_category) or Counter(issue.category for issue in issues)
    failed = [run for run in data.analyses if run.status == "error"]
    if failed:
        advice.append("Make the failed analyses run (" + ", ".join(f"{r.analysis_type}: {r.tool}" for r in failed)
                      + "): until they do, their issues are invisible to this report and to the quality gates.")
    errors = data.issue_summary.error
    if errors:
        first = next((issue for issue in issues if issue.severity == "error"), None)
        where = f" Start with {first.file}:{first.line} ({first.rule}: {first.message})." if first else ""
        advice.append(f"Fix the {errors} error-level issue{'s' * (errors != 1)} first.{where}")
    security = by_category.get("security", 0)
    if security:
        rules = sorted({issue.rule for issue in issues if issue.category == "security"})
        advice.append(f"Review the {security} security finding{'s' * (security != 1)}"
                      + (f" ({', '.join(rules[:6])})" if rules else "")
                      + ": never pass untrusted input to a shell, eval or pickle; use argument lists and "
                        "literal parsers instead.")
    types = by_category.get("type", 0)
    if types:
        advice.append(f"Resolve the {types} type error{'s' * (types != 1)}: each is a call or value that "
                      "does not match its declared type, which is often a real bug.")
    complex_functions = sum(count for rank, count in data.complexity_distribution.items() if rank not in "AB")
    worst = next((issue for issue in sorted(issues, key=Issue.sort_key) if issue.rule == "cyclomatic-complexity"),
                 None)
    if complex_functions or worst:
        count = complex_functions or sum(1 for issue in issues if issue.rule == "cyclomatic-complexity")
        example = f" (for example in {worst.file}:{worst.line})" if worst else ""
        advice.append(f"Refactor the {count} function{'s' * (count != 1)} with cyclomatic complexity over 10"
                      f"{example}: split them, return early, or replace branch chains with tables.")
    mi = data.metrics.avg_maintainability
    if mi is not None and mi < MI_LOW:
        low = [s.path for s in sorted(data.file_summaries, key=lambda s: s.maintainability_index or 100.0)
               if s.maintainability_index is not None][:3]
        advice.append(f"Raise maintainability (average {mi:g}, below {MI_LOW:g}): begin with "
                      f"{', '.join(low) or 'the largest files'}.")
    dead = by_category.get("dead_code", 0)
    if dead:
        advice.append(f"Remove the {dead} piece{'s' * (dead != 1)} of unused code, after checking for dynamic "
                      "uses (framework hooks, getattr).")
    lint = by_category.get("lint", 0)
    if lint:
        advice.append(f"Clean up the {lint} lint finding{'s' * (lint != 1)}; many have automatic fixes "
                      "(`ruff check --fix`).")
    if not advice:
        advice.append("No issues found: keep the quality gates in CI (`codeward review PATH`) to keep it that way.")
    return advice
