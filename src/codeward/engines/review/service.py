"""The review operations the tools and the command line share: analyze, gate, report.

Each operation validates all of its inputs (paths through the Workspace, globs, analysis
types, gate thresholds, the report destination) before it runs an analyzer or writes a
byte, so a bad argument is an error and leaves the disk as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.config.review import ReviewSettings
from codeward.engines.contained.project_sandbox import ProjectAccess, ProjectSandbox
from codeward.engines.review.analyzers import SourceFile, types_for
from codeward.engines.review.engine import Review, review
from codeward.engines.review.gates import QualityGates, evaluate, thresholds
from codeward.engines.review.models import (
    ANALYSIS_TYPES,
    AnalysisType,
    FileAnalysis,
    GateReport,
    Issue,
    ProjectAnalysis,
    ReportResult,
    Severity,
)
from codeward.engines.review.project_config import ProjectConfig, discover
from codeward.engines.review.report import (
    DEFAULT_TITLE,
    ReportFormat,
    check_output_path,
    from_review,
    parse_results,
    render,
    write_report,
)
from codeward.engines.review.runner import analyzer_launcher
from codeward.engines.review.selection import (
    MAX_FILES,
    compile_patterns,
    select_files,
    source_file,
    unsupported_file_hint,
)
from codeward.engines.review.summary import file_analysis, project_analysis
from codeward.engines.sandbox.choice import Executor
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

ANALYZERS_NOT_ISOLATED = ("NOT isolated: the analyzers ran as plain host processes ([sandbox] backend = \"process\" in "
                          "codeward.toml), so the project's analyzer configuration could reach host files")


@dataclass(frozen=True)
class ProjectReview:
    """A project analysis together with every issue (the analysis itself lists only the top ones)."""

    analysis: ProjectAnalysis
    issues: list[Issue]


def config_of(ctx: ToolContext) -> ReviewSettings:
    return ctx.services.get(ReviewSettings)


def _types(requested: Sequence[AnalysisType] | None) -> Result[list[AnalysisType]]:
    if requested is None:
        return Result.success(list(ANALYSIS_TYPES))
    if not requested:
        return Result.fail(ErrorKind.INVALID_INPUT, "analysis_types is empty",
                           f"Omit it to run every analysis, or name some of: {', '.join(ANALYSIS_TYPES)}.", data=[])
    return Result.success(list(dict.fromkeys(requested)))


def _run(ctx: ToolContext, files: Sequence[SourceFile], types: Sequence[AnalysisType],
         threshold: Severity) -> Result[Review | None]:
    """Run the analyzers in the project's sandbox (read-only, secrets covered), or refuse naming
    what to install when no sandbox the operator allows works here."""
    config = config_of(ctx)
    opened = ProjectSandbox.open(ctx, Executor.REVIEW, ProjectAccess.READ)
    if not opened.ok or opened.data is None:
        return opened.cast(None)
    box = opened.data
    project = ProjectConfig() if config.isolated else discover([f.path for f in files], ctx.workspace)
    result = review(files, types, threshold, config=config, cancelled=ctx.cancelled, project=project,
                    launcher=lambda private: analyzer_launcher(box, private, config.memory_mb),
                    progress=lambda done, total, message: ctx.progress(done, total, message))
    result.notes.extend(project.notes)
    result.notes.extend(note for note in box.notes if note.startswith("WARNING"))
    if not box.isolated:
        result.notes.append(ANALYZERS_NOT_ISOLATED)
    return Result.success(result)


def _existing(ctx: ToolContext, raw: str, param: str) -> Result[Path]:
    resolved = ctx.workspace.resolve(raw, param=param)
    if resolved.ok and not resolved.data.exists():
        return Result.fail(ErrorKind.NOT_FOUND, f"{param} {raw!r} does not exist",
                           "Check the name with list_directory or search_files.", data=resolved.data)
    return resolved


def analyze_file(ctx: ToolContext, file_path: str, analysis_types: Sequence[AnalysisType] | None,
                 severity_threshold: Severity) -> Result[FileAnalysis | None]:
    resolved = _existing(ctx, file_path, "file_path")
    if not resolved.ok:
        return resolved.cast(None)
    real = resolved.data
    display = ctx.workspace.display(real)
    if real.is_dir():
        return Result.fail(ErrorKind.INVALID_INPUT, f"file_path {display} is a directory",
                           "Use coding_analyze_project for directories.")
    source = source_file(ctx.workspace, real)
    if source is None:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display}: file type {real.suffix or '(none)'} is not "
                           "supported for analysis", unsupported_file_hint())
    types = _types(analysis_types)
    if not types.ok:
        return types.cast(None)
    available = types_for(source.language)
    if analysis_types is not None and not set(types.data) & set(available):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{', '.join(types.data)} analysis is not available for "
                           f"{source.language} files", f"For {source.language}, use: {', '.join(available)}.")
    ran = _run(ctx, [source], types.data, severity_threshold)
    if not ran.ok or ran.data is None:
        return ran.cast(None)
    review_result = ran.data
    if analysis_types is not None and review_result.runs and all(r.status == "skipped" for r in review_result.runs):
        return Result.fail(ErrorKind.UNAVAILABLE, f"nothing could check {display}: "
                           + "; ".join(run.message for run in review_result.runs),
                           f"Install the analyzer named above, or ask for what {source.language} has here: "
                           f"{', '.join(available)}.")
    return Result(data=file_analysis(review_result, source), notes=review_result.notes)


def _project_files(ctx: ToolContext, path: str, include: Sequence[str] | None,
                   exclude: Sequence[str] | None) -> Result[list[SourceFile]]:
    resolved = _existing(ctx, path, "path")
    if not resolved.ok:
        return resolved.cast([])
    real = resolved.data
    if not real.is_dir():
        source = source_file(ctx.workspace, real)
        if source is None:
            return Result.fail(ErrorKind.INVALID_INPUT, f"path {ctx.workspace.display(real)} is neither a "
                               "directory nor a supported source file", unsupported_file_hint(), data=[])
        return Result.success([source])
    included = compile_patterns(include, "include_patterns")
    if not included.ok:
        return included.cast([])
    excluded = compile_patterns(exclude, "exclude_patterns")
    if not excluded.ok:
        return excluded.cast([])
    return select_files(ctx.workspace, real, included.data, excluded.data)


def analyze_project(
    ctx: ToolContext,
    path: str,
    *,
    include_patterns: Sequence[str] | None = None,
    exclude_patterns: Sequence[str] | None = None,
    analysis_types: Sequence[AnalysisType] | None = None,
    severity_threshold: Severity = "info",
    output_path: str | None = None,
    report_format: ReportFormat = "json",
    directories_only: bool = True,
) -> Result[ProjectReview | None]:
    """Analyze every selected file under ``path``; write a report to ``output_path`` when given."""
    if directories_only:
        resolved = _existing(ctx, path, "path")
        if not resolved.ok:
            return resolved.cast(None)
        if not resolved.data.is_dir():
            return Result.fail(ErrorKind.INVALID_INPUT, f"path {ctx.workspace.display(resolved.data)} is a file, "
                               "not a directory", "Use coding_analyze_file for a single file.")
    types = _types(analysis_types)
    if not types.ok:
        return types.cast(None)
    destination: Path | None = None
    if output_path is not None:
        checked = check_output_path(ctx.workspace, output_path)
        if not checked.ok:
            return checked.cast(None)
        destination = checked.data
    files = _project_files(ctx, path, include_patterns, exclude_patterns)
    if not files.ok:
        return files.cast(None)
    display = ctx.workspace.display(ctx.workspace.resolve(path).data)
    ran = _run(ctx, files.data, types.data, severity_threshold)
    if not ran.ok or ran.data is None:
        return ran.cast(None)
    result = ran.data
    analysis = project_analysis(result, display)
    notes: list[str] = list(result.notes)
    if not files.data:
        notes.append(f"No supported source files under {display}. {unsupported_file_hint()}")
    if destination is not None:
        text, _sections = render(from_review(analysis, result.issues), report_format)
        written = write_report(ctx.workspace, destination, text)
        if not written.ok:
            return written.cast(None)
        analysis = analysis.model_copy(update={"output_path": ctx.workspace.display(destination)})
    return Result(data=ProjectReview(analysis, result.issues), notes=notes)


def review_paths(ctx: ToolContext, paths: Sequence[str]) -> Result[ProjectReview | None]:
    """Analyze several files and directories as one project (the command line, pre-commit's file lists)."""
    if len(paths) == 1:
        return analyze_project(ctx, paths[0], directories_only=False)
    if not paths:
        return Result.fail(ErrorKind.INVALID_INPUT, "no path to review", "Name a file or folder, e.g. '.'.")
    chosen: dict[Path, SourceFile] = {}
    for raw in paths:
        files = _project_files(ctx, raw, None, None)
        if not files.ok:
            return files.cast(None)
        chosen.update((f.path, f) for f in files.data)
    if len(chosen) > MAX_FILES:
        return Result.fail(ErrorKind.TOO_LARGE, f"the paths hold more than {MAX_FILES} source files",
                           "Review fewer paths at once.")
    display = f"{len(paths)} paths"
    ran = _run(ctx, list(chosen.values()), list(ANALYSIS_TYPES), "info")
    if not ran.ok or ran.data is None:
        return ran.cast(None)
    result = ran.data
    notes = list(result.notes)
    if not chosen:
        notes.append(f"No supported source files in {display}. {unsupported_file_hint()}")
    return Result(data=ProjectReview(project_analysis(result, display), result.issues), notes=notes)


def check_quality_gates(ctx: ToolContext, path: str, gates: QualityGates | Mapping[str, Any] | None,
                        fail_on_violation: bool) -> Result[GateReport | None]:
    chosen = thresholds(gates)
    if not chosen.ok:
        return chosen.cast(None)
    reviewed = analyze_project(ctx, path, directories_only=False)
    if not reviewed.ok or reviewed.data is None:
        return reviewed.cast(None)
    return Result(data=evaluate(reviewed.data.analysis, chosen.data, fail_on_violation), notes=reviewed.notes)


def generate_report(ctx: ToolContext, analysis_results: object, output_path: str, fmt: ReportFormat,
                    include_charts: bool, include_recommendations: bool, title: str | None
                    ) -> Result[ReportResult | None]:
    data = parse_results(analysis_results)
    if not data.ok:
        return data.cast(None)
    checked = check_output_path(ctx.workspace, output_path)
    if not checked.ok:
        return checked.cast(None)
    text, sections = render(data.data, fmt, title=title or DEFAULT_TITLE, include_charts=include_charts,
                            include_recommendations=include_recommendations)
    written = write_report(ctx.workspace, checked.data, text)
    if not written.ok:
        return written.cast(None)
    return Result.success(ReportResult(success=True, output_path=ctx.workspace.display(checked.data), format=fmt,
                                       size_bytes=written.data, sections_included=sections))
