"""One line per finding: the concise terminal format and GitHub Actions workflow annotations.

``text`` reads like ruff's concise output (``path:line:col: RULE message``) so editors and
pre-commit show it as users expect. ``github`` prints workflow commands
(``::error file=...,line=...::message``) that GitHub Actions turns into annotations on the
changed lines; failed analyses and failed gates become annotations without a file.
"""

from __future__ import annotations

from codeward.engines.review.models import Issue
from codeward.engines.review.report.data import ReportData

GITHUB_LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def _where(issue: Issue) -> str:
    """``file:line:column`` as editors read it; the column (or line) left out when the analyzer gave none."""
    if not issue.line:
        return issue.file
    return f"{issue.file}:{issue.line}:{issue.column}" if issue.column else f"{issue.file}:{issue.line}"


def render_text(data: ReportData, title: str, recommendations: list[str] | None) -> tuple[str, list[str]]:
    lines = [f"ANALYSIS FAILED: {run.analysis_type} ({run.tool}): {run.message}" for run in data.failed_analyses()]
    for issue in sorted(data.all_issues(), key=lambda i: (i.file, i.line, i.column, i.rule)):
        also = f" (also {', '.join(issue.also_reported_by)})" if issue.also_reported_by else ""
        lines.append(f"{_where(issue)}: {issue.rule} [{issue.tool}] {issue.severity}: {issue.message}{also}")
    counts = data.issue_summary
    lines.append(f"Found {data.total_issues} issues ({counts.error} errors, {counts.warning} warnings, "
                 f"{counts.info} info) in {data.files_analyzed} files.")
    return "\n".join(lines) + "\n", ["issues"]


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, **properties: str | int) -> str:
    """A workflow command such as ``::warning file=a.py,line=3,title=ruff F401::message``."""
    props = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::{level} {props}::{_escape_data(message)}" if props else f"::{level}::{_escape_data(message)}"


def render_github(data: ReportData, title: str, recommendations: list[str] | None) -> tuple[str, list[str]]:
    lines = [annotation("error", f"{run.message} {run.hint}".rstrip(),
                        title=f"codeward: {run.analysis_type} analysis ({run.tool}) could not run")
             for run in data.failed_analyses()]
    for issue in sorted(data.all_issues(), key=lambda i: (i.file, i.line, i.column, i.rule)):
        where: dict[str, str | int] = {"file": issue.file}
        if issue.line:
            where["line"] = issue.line
            if issue.column:
                where["col"] = issue.column
        lines.append(annotation(GITHUB_LEVELS[issue.severity], f"{issue.message}\n{issue.suggestion}".strip(),
                                **where, title=f"{issue.tool} {issue.rule}"))
    if data.gates is not None:
        lines += [annotation("error", f"{g.gate}: {g.message or 'violated'} (threshold {g.threshold:g})",
                             title=f"codeward: quality gate {g.gate} failed")
                  for g in data.gates.results if not g.passed]
    return "\n".join(lines) + ("\n" if lines else ""), ["issues"]
