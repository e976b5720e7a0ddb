"""The shapes review results take: issues, metrics, per-file and per-project analyses.

Field names follow the coding module's tool specification (``issues[].severity``,
``metrics.maintainability_index``, ``issue_summary``...), so a client written against that
specification reads these results unchanged. A few fields are added where a report or a
quality gate needs more than the specification lists (``analyses``, ``file_summaries``,
``complexity_distribution``); nothing listed there is missing.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning", "info"]
AnalysisType = Literal["lint", "type", "security", "complexity", "maintainability", "dead_code"]

SEVERITIES: tuple[Severity, ...] = get_args(Severity)
"""Most severe first."""
ANALYSIS_TYPES: tuple[AnalysisType, ...] = get_args(AnalysisType)
SEVERITY_RANK: dict[str, int] = {"error": 3, "warning": 2, "info": 1}
COMPLEXITY_RANKS: tuple[tuple[str, int], ...] = (("A", 5), ("B", 10), ("C", 20), ("D", 30), ("E", 40), ("F", 10**9))
"""Radon's ranks: a function's rank is the first whose upper bound its complexity does not exceed."""


def at_least(severity: str, threshold: str) -> bool:
    """Whether an issue of ``severity`` is reported under a ``threshold``."""
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]


def complexity_rank(complexity: float) -> str:
    return next(rank for rank, upper in COMPLEXITY_RANKS if complexity <= upper)


class Issue(BaseModel):
    """One finding of one analyzer, at a place in a file."""

    file: str = Field(description="File path relative to the workspace root.")
    severity: Severity
    line: int = Field(description="1-based line (0 when the finding concerns the whole file).")
    column: int = Field(description="1-based column (0 when unknown).")
    message: str
    rule: str = Field(description="The analyzer's rule identifier, e.g. F401, arg-type, B602.")
    category: AnalysisType
    suggestion: str = Field(description="How to fix it.")
    tool: str = Field(description="The analyzer that reported it (ruff, mypy, bandit, radon, vulture, lizard, "
                                  "shellcheck, cppcheck, biome).")
    url: str | None = Field(default=None, description="The rule's documentation, when the analyzer names it.")
    also_reported_by: list[str] = Field(
        default_factory=list, description="Other analyzers that reported the same finding (merged into this one).")

    def sort_key(self) -> tuple[int, str, int, int, str]:
        return (-SEVERITY_RANK[self.severity], self.file, self.line, self.column, self.rule)

    def one_line(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.severity} [{self.category}/{self.rule}] {self.message}"


class IssueCounts(BaseModel):
    error: int = 0
    warning: int = 0
    info: int = 0

    @classmethod
    def of(cls, issues: list[Issue]) -> IssueCounts:
        counts = {severity: 0 for severity in SEVERITIES}
        for issue in issues:
            counts[issue.severity] += 1
        return cls(**counts)

    @property
    def total(self) -> int:
        return self.error + self.warning + self.info

    def text(self) -> str:
        return f"{self.error} errors, {self.warning} warnings, {self.info} info"


class AnalyzerRun(BaseModel):
    """How one analysis type went: ``ok``, ``skipped`` (does not apply) or ``error`` (and why)."""

    analysis_type: AnalysisType
    tool: str
    status: Literal["ok", "skipped", "error"]
    message: str = ""
    hint: str = ""


class FileMetrics(BaseModel):
    lines_of_code: int = Field(description="Total lines of the file.")
    cyclomatic_complexity: float | None = Field(
        default=None, description="Average cyclomatic complexity of its functions (null: not measured or none).")
    maintainability_index: float | None = Field(
        default=None, description="Maintainability index, 0-100 (null: not measured; Python only).")
    functions: int = Field(default=0, description="Functions and methods measured.")
    max_complexity: float | None = Field(default=None, description="Complexity of its most complex function.")


class FileAnalysis(BaseModel):
    """The result of ``coding_analyze_file``."""

    success: bool = Field(description="True when every requested analysis ran.")
    file_path: str
    language: str
    issues: list[Issue]
    metrics: FileMetrics
    issue_counts: IssueCounts
    analyses: list[AnalyzerRun] = Field(description="What each analysis type did (ran, skipped or failed, and why).")
    error: str | None = Field(default=None, description="Which analyses failed, when success is false.")

    def render(self) -> str:
        lines = _analysis_lines(self.analyses, "error")
        lines.append(f"{self.file_path} ({self.language}): {self.issue_counts.text()}")
        metrics = self.metrics
        lines.append(
            f"metrics: {metrics.lines_of_code} lines, complexity {_number(metrics.cyclomatic_complexity)} avg / "
            f"{_number(metrics.max_complexity)} max, maintainability {_number(metrics.maintainability_index)}")
        lines += [issue.one_line() + (f"\n    fix: {issue.suggestion}" if issue.suggestion else "")
                  for issue in self.issues]
        lines += _analysis_lines(self.analyses, "skipped")
        return "\n".join(lines)


class ProjectMetrics(BaseModel):
    total_loc: int = 0
    avg_complexity: float | None = Field(default=None, description="Average complexity over all functions.")
    avg_maintainability: float | None = Field(
        default=None, description="Maintainability index averaged over files, weighted by their lines.")
    max_complexity: float | None = None
    functions_analyzed: int = 0


class FileSummary(BaseModel):
    """One file's numbers, as the report's file table and worst-files chart need them."""

    path: str
    language: str
    lines_of_code: int = 0
    cyclomatic_complexity: float | None = None
    max_complexity: float | None = None
    maintainability_index: float | None = None
    issue_counts: IssueCounts = Field(default_factory=IssueCounts)

    def badness(self) -> tuple[int, float, float]:
        """Sort key, worst first: weighted issues, then peak complexity, then low maintainability."""
        counts = self.issue_counts
        weighted = 10 * counts.error + 3 * counts.warning + counts.info
        return (-weighted, -(self.max_complexity or 0.0), self.maintainability_index or 100.0)


class ProjectAnalysis(BaseModel):
    """The result of ``coding_analyze_project`` (and the input of ``coding_generate_report``)."""

    model_config = ConfigDict(extra="ignore")

    success: bool = True
    path: str = "."
    files_analyzed: int = 0
    total_issues: int = 0
    issue_summary: IssueCounts = Field(default_factory=IssueCounts)
    quality_score: float | None = Field(default=None, description="0-100; see docs/review.md for the formula.")
    metrics: ProjectMetrics = Field(default_factory=ProjectMetrics)
    top_issues: list[Issue] = Field(default_factory=list, description="The most severe issues, at most 20.")
    files_with_issues: list[str] = Field(default_factory=list)
    output_path: str | None = Field(default=None, description="Where the report was saved, when asked.")
    issues_by_category: dict[str, int] = Field(default_factory=dict)
    complexity_distribution: dict[str, int] = Field(
        default_factory=dict, description="Functions per complexity rank: A 1-5, B 6-10, C 11-20, D 21-30, "
                                          "E 31-40, F over 40.")
    file_summaries: list[FileSummary] = Field(default_factory=list, description="Worst files first, at most 200.")
    analyses: list[AnalyzerRun] = Field(default_factory=list)
    error: str | None = None

    def render(self) -> str:
        metrics = self.metrics
        lines = [
            *_analysis_lines(self.analyses, "error"),
            f"{self.path}: {self.files_analyzed} files, {self.total_issues} issues "
            f"({self.issue_summary.text()}), quality score {_number(self.quality_score)}",
            f"metrics: {metrics.total_loc} lines, complexity {_number(metrics.avg_complexity)} avg / "
            f"{_number(metrics.max_complexity)} max over {metrics.functions_analyzed} functions, "
            f"maintainability {_number(metrics.avg_maintainability)}",
        ]
        if self.top_issues:
            lines.append("top issues:")
            lines += ["  " + issue.one_line() for issue in self.top_issues]
        if self.files_with_issues:
            shown = self.files_with_issues[:50]
            more = len(self.files_with_issues) - len(shown)
            lines.append("files with issues: " + ", ".join(shown) + (f" (+{more} more)" if more else ""))
        if self.output_path:
            lines.append(f"report saved to {self.output_path}")
        lines += _analysis_lines(self.analyses, "skipped")
        return "\n".join(lines)


class GateResult(BaseModel):
    gate: str
    passed: bool
    threshold: float
    actual: float | None = Field(description="The measured value (null when nothing could be measured).")
    margin: float | None = Field(
        description="Distance from the threshold: positive when passing, negative when violated.")
    default: bool = Field(default=False, description="True when the threshold is the gate's default (not given).")
    message: str = ""


class GateReport(BaseModel):
    """The result of ``coding_check_quality_gates``."""

    success: bool = Field(description="True when every gate passed.")
    gates_checked: int
    gates_passed: int
    results: list[GateResult]
    overall_status: Literal["pass", "fail", "warn"] = Field(
        description="pass: all gates passed; fail: a gate failed (fail_on_violation); warn: a gate failed but "
                    "fail_on_violation is false.")
    path: str = "."
    analysis_problems: list[AnalyzerRun] = Field(
        default_factory=list, description="Analyses that could not run, so the gates could not see their issues.")

    def render(self) -> str:
        """Failed analyses first (they make gates blind), then every gate checked, defaults marked."""
        lines = _analysis_lines(self.analysis_problems, "error")
        lines.append(f"quality gates for {self.path}: {self.overall_status.upper()} "
                     f"({self.gates_passed}/{self.gates_checked} passed)")
        for result in self.results:
            mark = "PASS" if result.passed else "FAIL"
            origin = " (default)" if result.default and result.gate != "analyses_completed" else ""
            lines.append(f"  {mark} {result.gate}: actual {_number(result.actual)}, threshold "
                         f"{_number(result.threshold)}{origin}, margin {_number(result.margin)}"
                         + (f" ({result.message})" if result.message else ""))
        return "\n".join(lines)


class ReportResult(BaseModel):
    """The result of ``coding_generate_report``."""

    success: bool
    output_path: str
    format: Literal["html", "markdown", "json", "sarif"]
    size_bytes: int
    sections_included: list[str]

    def render(self) -> str:
        return (f"Wrote a {self.format} report to {self.output_path} ({self.size_bytes:,} bytes; sections: "
                f"{', '.join(self.sections_included)}).")


def _number(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def _analysis_lines(analyses: list[AnalyzerRun], status: Literal["error", "skipped"]) -> list[str]:
    """Failed analyses (shown first: they make the numbers incomplete) or skipped ones (shown last)."""
    lines = []
    for run in analyses:
        if run.status != status:
            continue
        if status == "error":
            lines.append(f"ANALYSIS FAILED: {run.analysis_type} ({run.tool}): {run.message}"
                         + (f"\n    hint: {run.hint}" if run.hint else ""))
        else:
            lines.append(f"analysis {run.analysis_type} skipped: {run.message}")
    return lines
