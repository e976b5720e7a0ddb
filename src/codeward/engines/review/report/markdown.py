"""The Markdown report: the HTML report's content as GitHub-flavoured tables."""

from __future__ import annotations

from codeward.engines.review.models import COMPLEXITY_RANKS, Issue
from codeward.engines.review.report.data import MAX_REPORTED_ISSUES, ReportData
from codeward.engines.review.report.html import RANK_RANGES, worst_files


def _cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return [*lines, ""]


def render_markdown(data: ReportData, title: str, recommendations: list[str] | None) -> tuple[str, list[str]]:
    counts = data.issue_summary
    metrics = data.metrics
    lines = [f"# {title}", "", f"`{data.path}` — {data.files_analyzed} files, {data.total_issues} issues.", ""]
    sections: list[str] = []
    failed = data.failed_analyses()
    if failed:
        sections.append("analyses")
        lines += ["## Analyses that failed", "", "The numbers below do not include what these would have found.", ""]
        lines += [f"- **{r.analysis_type}** ({r.tool}): {r.message} {r.hint}".rstrip() for r in failed]
        lines.append("")
    lines += ["## Summary", ""]
    lines += _table(["Measure", "Value"], [
        ["Quality score", _number(data.quality_score)], ["Files analysed", data.files_analyzed],
        ["Errors", counts.error], ["Warnings", counts.warning], ["Info", counts.info],
        ["Lines", metrics.total_loc], ["Average complexity", _number(metrics.avg_complexity)],
        ["Max complexity", _number(metrics.max_complexity)],
        ["Average maintainability", _number(metrics.avg_maintainability)],
    ])
    sections += ["summary", "metrics"]
    if data.gates is not None:
        sections.append("gates")
        gates = data.gates
        lines += [f"## Quality gates: {gates.overall_status.upper()} ({gates.gates_passed}/{gates.gates_checked} "
                  "passed)", ""]
        lines += _table(["Gate", "Result", "Actual", "Threshold", "Margin", "Note"],
                        [[f"`{g.gate}`", "pass" if g.passed else "**FAIL**", _number(g.actual),
                          _number(g.threshold) + (" (default)" if g.default else ""), _number(g.margin), g.message]
                         for g in gates.results])
    lines += ["## Metrics", "", "Functions by cyclomatic complexity:", ""]
    lines += _table(["Rank", "Complexity", "Functions"],
                    [[rank, span, data.complexity_distribution.get(rank, 0)]
                     for (rank, _), span in zip(COMPLEXITY_RANKS, RANK_RANGES, strict=True)])
    if data.issues_by_category:
        lines += ["Issues by analysis type:", ""]
        lines += _table(["Type", "Issues"], [[k, v] for k, v in data.issues_by_category.items()])
    worst = worst_files(data)
    if worst:
        lines += ["Files with the most issues:", ""]
        lines += _table(["File", "Errors", "Warnings", "Info", "Max complexity", "Maintainability"],
                        [[f"`{s.path}`", s.issue_counts.error, s.issue_counts.warning, s.issue_counts.info,
                          _number(s.max_complexity), _number(s.maintainability_index)] for s in worst])
    issues = sorted(data.all_issues(), key=Issue.sort_key)
    sections.append("issues")
    lines += ["## Issues", ""]
    if issues:
        lines += _table(["Severity", "Where", "Type", "Rule", "Message", "Fix"],
                        [[i.severity, f"`{i.file}:{i.line}`", i.category, f"`{i.rule}`", i.message, i.suggestion]
                         for i in issues[:MAX_REPORTED_ISSUES]])
        if len(issues) > MAX_REPORTED_ISSUES:
            lines += [f"… and {len(issues) - MAX_REPORTED_ISSUES} more.", ""]
    else:
        lines += ["No issues.", ""]
    skipped = data.skipped_analyses()
    if skipped:
        lines += ["## Analyses skipped", ""]
        lines += [f"- **{r.analysis_type}** ({r.tool}): {r.message}" for r in skipped]
        lines.append("")
    if recommendations is not None:
        sections.append("recommendations")
        lines += ["## Recommendations", ""]
        lines += [f"{n}. {item}" for n, item in enumerate(recommendations, 1)]
        lines.append("")
    return "\n".join(lines), sections

