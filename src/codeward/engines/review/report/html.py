"""The HTML report: one self-contained page (inline CSS and SVG charts, no script, no fetches)."""

from __future__ import annotations

from html import escape

from codeward.engines.review.models import COMPLEXITY_RANKS, FileSummary, GateReport, Issue
from codeward.engines.review.report.charts import Bar, StackedRow, column_chart, stacked_bar_chart
from codeward.engines.review.report.data import MAX_REPORTED_ISSUES, ReportData

SEVERITY_COLORS = {"error": "#d64545", "warning": "#e8a33d", "info": "#4a90d9"}
RANK_COLORS = ("#3f9142", "#7bb661", "#e8c13d", "#e8913d", "#d65c45", "#a3263a")
RANK_RANGES = ("1-5", "6-10", "11-20", "21-30", "31-40", "41+")
CATEGORY_COLOR = "#6c63c7"
WORST_FILES = 10

CSS = """
body{font-family:system-ui,'DejaVu Sans','Liberation Sans',sans-serif;margin:0;background:#f5f7fa;color:#1f2933}
main{max-width:1000px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 10px}
.sub{color:#52606d;margin:0 0 18px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:12px}
.card{background:#fff;border-radius:8px;padding:12px 14px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.card .v{font-size:24px;font-weight:650}.card .k{color:#52606d;font-size:13px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(470px,1fr));gap:12px}
.panel{background:#fff;border-radius:8px;padding:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);overflow-x:auto}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{padding:6px 8px;border-bottom:1px solid #e4e7eb;text-align:left;vertical-align:top}
th{background:#eef1f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{font-weight:600;border-radius:4px;padding:1px 6px;color:#fff;font-size:12px}
.sev.error{background:#d64545}.sev.warning{background:#e8a33d}.sev.info{background:#4a90d9}
.wide{margin-top:12px}.bad{color:#d64545}code{font-size:12px}li{margin:4px 0}
"""


def severity_chart(data: ReportData) -> str:
    counts = data.issue_summary
    bars = [Bar(name, getattr(counts, name), SEVERITY_COLORS[name]) for name in ("error", "warning", "info")]
    return column_chart("issues-by-severity", "Issues by severity", bars, empty_text="no issues")


def complexity_chart(data: ReportData) -> str:
    distribution = data.complexity_distribution
    bars = [Bar(rank, distribution.get(rank, 0), color, f"{rank} ({span})")
            for (rank, _), color, span in zip(COMPLEXITY_RANKS, RANK_COLORS, RANK_RANGES, strict=True)]
    return column_chart("complexity-distribution", "Functions by cyclomatic complexity", bars,
                        empty_text="no per-function complexity in these results")


def category_chart(data: ReportData) -> str:
    bars = [Bar(name, count, CATEGORY_COLOR, name.replace("_", " ")) for name, count in data.issues_by_category.items()]
    return column_chart("issues-by-category", "Issues by analysis type", bars, width=940, height=220,
                        empty_text="no issues")


def worst_files(data: ReportData) -> list[FileSummary]:
    return [s for s in sorted(data.file_summaries, key=FileSummary.badness) if s.issue_counts.total][:WORST_FILES]


def worst_files_chart(data: ReportData) -> str:
    rows = [StackedRow(s.path, tuple(Bar(name, getattr(s.issue_counts, name), SEVERITY_COLORS[name])
                                     for name in ("error", "warning", "info")))
            for s in worst_files(data)]
    legend = [Bar(name, 0, color) for name, color in SEVERITY_COLORS.items()]
    return stacked_bar_chart("worst-files", "Files with the most issues", rows, legend,
                             empty_text="no file has issues")


def _number(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.{digits}f}"


def _cards(data: ReportData) -> str:
    metrics = data.metrics
    cards = [
        ("Quality score", _number(data.quality_score)),
        ("Files analysed", _number(data.files_analyzed)),
        ("Issues", _number(data.total_issues)),
        ("Errors", _number(data.issue_summary.error)),
        ("Lines", _number(metrics.total_loc)),
        ("Avg complexity", _number(metrics.avg_complexity, 2)),
        ("Max complexity", _number(metrics.max_complexity)),
        ("Maintainability", _number(metrics.avg_maintainability)),
    ]
    body = "".join(f'<div class="card"><div class="v">{escape(v)}</div><div class="k">{escape(k)}</div></div>'
                   for k, v in cards)
    return f'<div class="cards" id="summary-cards">{body}</div>'


def _issue_rows(issues: list[Issue]) -> str:
    rows = []
    for issue in issues[:MAX_REPORTED_ISSUES]:
        rows.append(
            f'<tr><td><span class="sev {issue.severity}">{issue.severity}</span></td>'
            f"<td><code>{escape(issue.file)}:{issue.line}</code></td><td>{escape(issue.category)}</td>"
            f"<td><code>{escape(issue.rule)}</code></td><td>{escape(issue.message)}"
            f'<br><small>{escape(issue.suggestion)}</small></td></tr>')
    return "".join(rows)


def _file_rows(summaries: list[FileSummary]) -> str:
    rows = []
    for s in summaries:
        mi_class = ' class="n bad"' if s.maintainability_index is not None and s.maintainability_index < 20 else \
            ' class="n"'
        rows.append(
            f"<tr><td><code>{escape(s.path)}</code></td><td>{escape(s.language)}</td>"
            f'<td class="n">{s.lines_of_code}</td><td class="n">{_number(s.cyclomatic_complexity, 2)}</td>'
            f'<td class="n">{_number(s.max_complexity)}</td><td{mi_class}>{_number(s.maintainability_index)}</td>'
            f'<td class="n">{s.issue_counts.error}</td><td class="n">{s.issue_counts.warning}</td>'
            f'<td class="n">{s.issue_counts.info}</td></tr>')
    return "".join(rows)


def _gates_section(gates: GateReport) -> str:
    rows = "".join(
        f"<tr><td><code>{escape(g.gate)}</code></td><td>{'pass' if g.passed else '<b class=bad>FAIL</b>'}</td>"
        f'<td class="n">{_number(g.actual, 2)}</td><td class="n">{_number(g.threshold, 2)}'
        f"{' (default)' if g.default else ''}</td><td class=\"n\">{_number(g.margin, 2)}</td>"
        f"<td>{escape(g.message)}</td></tr>" for g in gates.results)
    return (f'<section id="gates"><h2>Quality gates: {escape(gates.overall_status.upper())} '
            f"({gates.gates_passed}/{gates.gates_checked} passed)</h2><table><thead><tr><th>Gate</th><th>Result</th>"
            "<th>Actual</th><th>Threshold</th><th>Margin</th><th>Note</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></section>")


def render_html(data: ReportData, title: str, include_charts: bool, recommendations: list[str] | None
                ) -> tuple[str, list[str]]:
    """The page and the names of the sections it contains."""
    sections = ["summary"]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{escape(data.path)} — {data.files_analyzed} files, {data.total_issues} issues '
        f"({data.issue_summary.error} errors, {data.issue_summary.warning} warnings, "
        f"{data.issue_summary.info} info)</p>",
    ]
    failed = data.failed_analyses()
    if failed:
        sections.insert(0, "analyses")
        items = "".join(f"<li><b>{escape(r.analysis_type)}</b> ({escape(r.tool)}): {escape(r.message)} "
                        f"{escape(r.hint)}</li>" for r in failed)
        parts += ['<section id="analyses" class="bad"><h2>Analyses that failed</h2><p>The numbers below do not '
                  f"include what these would have found.</p><ul>{items}</ul></section>"]
    parts += ['<section id="summary">', _cards(data), "</section>"]
    if data.gates is not None:
        sections.append("gates")
        parts.append(_gates_section(data.gates))
    if include_charts:
        sections.append("charts")
        pair = "".join(f'<div class="panel">{chart}</div>' for chart in (severity_chart(data), complexity_chart(data)))
        wide = [category_chart(data)] if data.issues_by_category else []
        wide.append(worst_files_chart(data))
        parts += ['<section id="charts"><h2>Charts</h2>', f'<div class="charts">{pair}</div>',
                  *(f'<div class="panel wide">{chart}</div>' for chart in wide), "</section>"]
    issues = sorted(data.all_issues(), key=Issue.sort_key)
    sections.append("issues")
    shown = "all" if data.issues is not None else "top"
    more = len(issues) - MAX_REPORTED_ISSUES
    parts += [f'<section id="issues"><h2>Issues ({shown} {min(len(issues), MAX_REPORTED_ISSUES)})</h2>',
              "<table><thead><tr><th>Severity</th><th>Where</th><th>Type</th><th>Rule</th><th>Message</th></tr>"
              f"</thead><tbody>{_issue_rows(issues)}</tbody></table>"
              + (f"<p>… and {more} more.</p>" if more > 0 else "")
              + ("" if issues else "<p>No issues.</p>"), "</section>"]
    sections.append("metrics")
    parts += ['<section id="files"><h2>Files and metrics</h2>',
              "<table><thead><tr><th>File</th><th>Language</th><th>Lines</th><th>Avg CC</th><th>Max CC</th>"
              "<th>MI</th><th>Errors</th><th>Warnings</th><th>Info</th></tr></thead>"
              f"<tbody>{_file_rows(data.file_summaries)}</tbody></table>", "</section>"]
    skipped = data.skipped_analyses()
    if skipped:
        items = "".join(f"<li><b>{escape(r.analysis_type)}</b> ({escape(r.tool)}): {escape(r.message)}</li>"
                        for r in skipped)
        parts += [f'<section id="skipped"><h2>Analyses skipped</h2><ul>{items}</ul></section>']
    if recommendations is not None:
        sections.append("recommendations")
        items = "".join(f"<li>{escape(item)}</li>" for item in recommendations)
        parts += [f'<section id="recommendations"><h2>Recommendations</h2><ol>{items}</ol></section>']
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n", sections
