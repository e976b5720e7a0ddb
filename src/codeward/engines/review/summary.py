"""Shaping a :class:`Review` into the tools' results: per-file metrics, project totals, score.

The quality score is ``100 / (1 + density / 20)`` where ``density`` is the weighted issue
count (error 10, warning 3, info 1) per 100 lines, blended 70/30 with the average
maintainability index when that was measured. A clean project scores 100 (or its
maintainability blend); one weighted issue point per 5 lines halves the issue part.
"""

from __future__ import annotations

from collections import Counter
from statistics import fmean

from codeward.engines.review.analyzers import SourceFile
from codeward.engines.review.engine import Review
from codeward.engines.review.models import (
    ANALYSIS_TYPES,
    COMPLEXITY_RANKS,
    FileAnalysis,
    FileMetrics,
    FileSummary,
    Issue,
    IssueCounts,
    ProjectAnalysis,
    ProjectMetrics,
    complexity_rank,
)

TOP_ISSUES = 20
MAX_FILE_SUMMARIES = 200
DENSITY_HALVING = 20.0
"""Weighted issues per 100 lines at which the issue part of the score is 50."""
ISSUE_SHARE = 0.7


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def file_metrics(review: Review, source: SourceFile) -> FileMetrics:
    values = review.complexities.get(source.path, [])
    return FileMetrics(
        lines_of_code=review.lines.get(source.path, 0),
        cyclomatic_complexity=_round(fmean(values)) if values else None,
        maintainability_index=review.maintainability.get(source.path),
        functions=len(values),
        max_complexity=max(values) if values else None,
    )


def file_analysis(review: Review, source: SourceFile) -> FileAnalysis:
    issues = sorted(review.issues, key=lambda issue: (issue.line, issue.column, issue.category))
    return FileAnalysis(
        success=not review.failed,
        file_path=source.display,
        language=source.language,
        issues=issues,
        metrics=file_metrics(review, source),
        issue_counts=IssueCounts.of(issues),
        analyses=review.runs,
        error=review.failure_text(),
    )


def quality_score(counts: IssueCounts, total_loc: int, avg_maintainability: float | None) -> float:
    weighted = 10 * counts.error + 3 * counts.warning + counts.info
    density = weighted * 100 / max(total_loc, 1)
    issue_part = 100 / (1 + density / DENSITY_HALVING)
    if avg_maintainability is None:
        return round(issue_part, 1)
    return round(ISSUE_SHARE * issue_part + (1 - ISSUE_SHARE) * avg_maintainability, 1)


def project_analysis(review: Review, path: str, output_path: str | None = None) -> ProjectAnalysis:
    counts = IssueCounts.of(review.issues)
    all_complexities = [value for values in review.complexities.values() for value in values]
    total_loc = sum(review.lines.values())
    avg_mi = _weighted_maintainability(review)
    by_file: dict[str, list[Issue]] = {}
    for issue in review.issues:
        by_file.setdefault(issue.file, []).append(issue)
    summaries = [_file_summary(review, source, by_file.get(source.display, [])) for source in review.files]
    summaries.sort(key=FileSummary.badness)
    categories = Counter(issue.category for issue in review.issues)
    ran = {run.analysis_type for run in review.runs if run.status == "ok"}
    by_category: dict[str, int] = {
        kind: categories.get(kind, 0) for kind in ANALYSIS_TYPES if kind in ran or kind in categories}
    distribution = {rank: 0 for rank, _ in COMPLEXITY_RANKS}
    for value in all_complexities:
        distribution[complexity_rank(value)] += 1
    top = sorted(review.issues, key=lambda issue: issue.sort_key())[:TOP_ISSUES]
    return ProjectAnalysis(
        success=not review.failed,
        path=path,
        files_analyzed=len(review.files),
        total_issues=counts.total,
        issue_summary=counts,
        quality_score=quality_score(counts, total_loc, avg_mi) if review.files else None,
        metrics=ProjectMetrics(
            total_loc=total_loc,
            avg_complexity=_round(fmean(all_complexities)) if all_complexities else None,
            avg_maintainability=avg_mi,
            max_complexity=max(all_complexities) if all_complexities else None,
            functions_analyzed=len(all_complexities),
        ),
        top_issues=top,
        files_with_issues=sorted({issue.file for issue in review.issues}),
        output_path=output_path,
        issues_by_category=by_category,
        complexity_distribution=distribution if all_complexities else {},
        file_summaries=summaries[:MAX_FILE_SUMMARIES],
        analyses=review.runs,
        error=review.failure_text(),
    )


def _file_summary(review: Review, source: SourceFile, own: list[Issue]) -> FileSummary:
    metrics = file_metrics(review, source)
    return FileSummary(
        path=source.display, language=source.language, lines_of_code=metrics.lines_of_code,
        cyclomatic_complexity=metrics.cyclomatic_complexity, max_complexity=metrics.max_complexity,
        maintainability_index=metrics.maintainability_index, issue_counts=IssueCounts.of(own),
    )


def _weighted_maintainability(review: Review) -> float | None:
    scores = review.maintainability
    if not scores:
        return None
    weights = {path: review.lines.get(path, 0) for path in scores}
    total = sum(weights.values())
    if total == 0:
        return _round(fmean(scores.values()))
    return _round(sum(scores[path] * weights[path] for path in scores) / total)

