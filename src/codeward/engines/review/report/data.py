"""What a report is made from: a project analysis, validated, with the full issue list if known.

``coding_generate_report`` accepts the result of ``coding_analyze_project`` or
``coding_analyze_file`` (or any subset of their fields, as callers often pass a summary);
this module checks the types and fills in what can be derived, so the renderers never meet
a malformed value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from codeward.engines.review.models import (
    AnalyzerRun,
    FileMetrics,
    FileSummary,
    GateReport,
    Issue,
    IssueCounts,
    ProjectAnalysis,
    ProjectMetrics,
)
from codeward.kernel.result import ErrorKind, Result

MAX_REPORTED_ISSUES = 1000
PROJECT_FIELDS = frozenset(ProjectAnalysis.model_fields) | {"issues"}
FILE_FIELDS = frozenset({"file_path", "issues", "metrics", "issue_counts", "language"})
"""Fields of a ``coding_analyze_file`` result; such a result is reported as a one-file project."""


class ReportData(ProjectAnalysis):
    """A project analysis plus, when the caller has it, every issue (not only the top ones)."""

    issues: list[Issue] | None = None
    gates: GateReport | None = None

    def all_issues(self) -> list[Issue]:
        return self.issues if self.issues is not None else self.top_issues

    def failed_analyses(self) -> list[AnalyzerRun]:
        """Analyses that could not run: every report shows them first, since its numbers miss them."""
        return [run for run in self.analyses if run.status == "error"]

    def skipped_analyses(self) -> list[AnalyzerRun]:
        return [run for run in self.analyses if run.status == "skipped"]


def from_review(analysis: ProjectAnalysis, issues: list[Issue], gates: GateReport | None = None) -> ReportData:
    return ReportData(**dict(analysis), issues=issues, gates=gates)


def parse_results(raw: object) -> Result[ReportData]:
    """Validate caller-supplied analysis results; errors name the field and what it must be."""
    empty = ReportData()
    if not isinstance(raw, Mapping):
        return Result.fail(ErrorKind.INVALID_INPUT, f"analysis_results must be an object, got {type(raw).__name__}",
                           "Pass the result of coding_analyze_project or coding_analyze_file.", data=empty)
    known = set(raw) & (PROJECT_FIELDS | FILE_FIELDS)
    if not known:
        return Result.fail(ErrorKind.INVALID_INPUT, "analysis_results has none of the fields of an analysis "
                           f"(got: {', '.join(sorted(map(str, raw))[:10]) or 'nothing'})",
                           "Pass the result of coding_analyze_project (files_analyzed, total_issues, "
                           "issue_summary, metrics, top_issues...) or of coding_analyze_file.", data=empty)
    try:
        if "file_path" in raw and "files_analyzed" not in raw:
            return Result.success(_from_file(raw))
        return Result.success(_derive(ReportData.model_validate(dict(raw))))
    except ValidationError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT, "analysis_results is malformed: " + _describe(exc),
                           "Pass the result of coding_analyze_project or coding_analyze_file unchanged.",
                           data=empty)


def _derive(data: ReportData) -> ReportData:
    """Fill totals that the caller left out but that follow from what they gave."""
    updates: dict[str, Any] = {}
    issues = data.issues
    if issues is not None and "issue_summary" not in data.model_fields_set:
        updates["issue_summary"] = IssueCounts.of(issues)
    summary = updates.get("issue_summary", data.issue_summary)
    if "total_issues" not in data.model_fields_set and summary.total:
        updates["total_issues"] = summary.total
    if issues is not None and not data.top_issues:
        updates["top_issues"] = sorted(issues, key=Issue.sort_key)[:20]
    if issues is not None and not data.files_with_issues:
        updates["files_with_issues"] = sorted({issue.file for issue in issues})
    return data.model_copy(update=updates) if updates else data


def _from_file(raw: Mapping[str, Any]) -> ReportData:
    issues = [Issue.model_validate(item) for item in raw.get("issues") or []]
    metrics = FileMetrics.model_validate(raw.get("metrics") or {"lines_of_code": 0})
    counts = IssueCounts.model_validate(raw["issue_counts"]) if "issue_counts" in raw else IssueCounts.of(issues)
    path = str(raw["file_path"])
    summary = FileSummary(path=path, language=str(raw.get("language") or "unknown"),
                          lines_of_code=metrics.lines_of_code, cyclomatic_complexity=metrics.cyclomatic_complexity,
                          max_complexity=metrics.max_complexity, maintainability_index=metrics.maintainability_index,
                          issue_counts=counts)
    return ReportData(
        success=bool(raw.get("success", True)), path=path, files_analyzed=1, total_issues=counts.total,
        issue_summary=counts,
        metrics=ProjectMetrics(total_loc=metrics.lines_of_code, avg_complexity=metrics.cyclomatic_complexity,
                               avg_maintainability=metrics.maintainability_index,
                               max_complexity=metrics.max_complexity, functions_analyzed=metrics.functions),
        top_issues=sorted(issues, key=Issue.sort_key)[:20], files_with_issues=[path] if issues else [],
        file_summaries=[summary], issues=issues,
    )


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "analysis_results"
        given = repr(error.get("input"))
        parts.append(f"{where}: {error['msg']} (got {given if len(given) <= 40 else given[:37] + '...'})")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
