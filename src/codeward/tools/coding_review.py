"""Review tools: static analysis of a file or project, quality gates, and quality reports.

Thin wrappers over :mod:`codeward.engines.review.service`; see ``docs/review.md``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from codeward.engines.review import service
from codeward.engines.review.gates import QualityGates
from codeward.engines.review.models import (
    AnalysisType,
    FileAnalysis,
    GateReport,
    ProjectAnalysis,
    ReportResult,
    Severity,
)
from codeward.engines.review.report import ReportFormat
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import Result
from codeward.tools.codomyrmex_shapes import failed

TypesArg = Annotated[list[AnalysisType] | None, Field(description="Default: all.")]
ThresholdArg = Annotated[Severity, Field(description="The least severe issue reported.")]
GlobsArg = Annotated[list[str] | None, Field(description="Gitignore-style, relative to path.")]


@tool(toolset="coding", read_only=True, output=FileAnalysis, title="Analyze a source file", failure=failed("Analysis"),
      examples=[{"file_path": "src/inventory/models.py", "analysis_types": ["lint", "complexity"]}])
def coding_analyze_file(
    ctx: ToolContext,
    file_path: str,
    analysis_types: TypesArg = None,
    severity_threshold: ThresholdArg = "info",
) -> Result[FileAnalysis | None]:
    """Static analysis of one file (ruff, mypy, bandit, radon, vulture; shellcheck, cppcheck, biome, lizard
    for other languages): issues with line and rule, and metrics."""
    return service.analyze_file(ctx, file_path, analysis_types, severity_threshold)


@tool(toolset="coding", idempotent=True, write_paths=("output_path",), output=ProjectAnalysis,
      title="Analyze a project", failure=failed("Project analysis"),
      examples=[{"path": "src", "analysis_types": ["lint", "complexity"], "severity_threshold": "warning"}])
def coding_analyze_project(
    ctx: ToolContext,
    path: str,
    include_patterns: GlobsArg = None,
    exclude_patterns: GlobsArg = None,
    output_path: Annotated[str | None, Field(description="Also save a report here.")] = None,
    report_format: ReportFormat = "json",
    analysis_types: TypesArg = None,
    severity_threshold: ThresholdArg = "info",
) -> Result[ProjectAnalysis | None]:
    """Static analysis of every source file under a folder (.gitignore honoured): totals, a quality score,
    the top issues and the files with issues."""
    reviewed = service.analyze_project(
        ctx, path, include_patterns=include_patterns, exclude_patterns=exclude_patterns,
        analysis_types=analysis_types, severity_threshold=severity_threshold, output_path=output_path,
        report_format=report_format)
    return reviewed.cast(reviewed.data.analysis if reviewed.data is not None else None)


@tool(toolset="coding", read_only=True, output=GateReport, title="Check quality gates",
      failure=failed("Quality gate check"),
      examples=[{"path": "src", "gates": {"avg_complexity": 8, "max_complexity": 20, "max_errors": 0}}])
def coding_check_quality_gates(
    ctx: ToolContext,
    path: str,
    gates: QualityGates | None = None,
    fail_on_violation: Annotated[bool, Field(description="false: 'warn', not 'fail'.")] = True,
) -> Result[GateReport | None]:
    """Check a folder or file against quality gates: each gate's threshold, measured value and margin
    (negative when violated)."""
    return service.check_quality_gates(ctx, path, gates, fail_on_violation)


@tool(toolset="coding", idempotent=True, write_paths=("output_path",), output=ReportResult,
      title="Generate a quality report", failure=failed("Report generation"),
      examples=[
          {
              "analysis_results": {
                  "file_path": "src/inventory/legacy.py",
                  "language": "python",
                  "issues": [{"file": "src/inventory/legacy.py", "line": 13, "column": 5, "severity": "warning",
                              "category": "lint", "rule": "SIM113", "tool": "ruff",
                              "message": "Use sum() instead of a for loop", "suggestion": "return sum(prices)"}],
                  "metrics": {"lines_of_code": 16, "cyclomatic_complexity": 1.5},
              },
              "output_path": "reports/legacy.md",
              "format": "markdown",
              "title": "legacy.py review",
          },
      ])
def coding_generate_report(
    ctx: ToolContext,
    analysis_results: Annotated[dict[str, Any], Field(description="A coding_analyze_* result.")],
    output_path: Annotated[str, Field(description="Overwritten.")],
    format: ReportFormat = "html",
    include_charts: Annotated[bool, Field(description="html only.")] = True,
    include_recommendations: bool = True,
    title: Annotated[str | None, Field(max_length=200)] = None,
) -> Result[ReportResult | None]:
    """Write a code quality report (HTML with charts, Markdown, JSON or SARIF) from analysis results."""
    return service.generate_report(ctx, analysis_results, output_path, format, include_charts,
                                   include_recommendations, title)
