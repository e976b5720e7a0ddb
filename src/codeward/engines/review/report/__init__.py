"""Review reports in HTML (with inline SVG charts), Markdown, JSON and SARIF, written inside the workspace.

Rendering is pure and deterministic (no timestamps), so the same analysis gives the same
bytes. Writing goes through the Workspace gate and is atomic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from codeward.engines.files.textfile import TextFile, write_text
from codeward.engines.review.report.data import ReportData, from_review, parse_results
from codeward.engines.review.report.html import render_html
from codeward.engines.review.report.json_report import render_json
from codeward.engines.review.report.markdown import render_markdown
from codeward.engines.review.report.recommendations import recommend
from codeward.engines.review.report.sarif import render_sarif
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access, Workspace

ReportFormat = Literal["html", "markdown", "json", "sarif"]
DEFAULT_TITLE = "Code Quality Report"
Renderer = Callable[[ReportData, str, bool, "list[str] | None"], tuple[str, list[str]]]

RENDERERS: MappingProxyType[str, Renderer] = MappingProxyType({
    "html": render_html,
    "markdown": lambda data, title, _charts, advice: render_markdown(data, title, advice),
    "json": lambda data, title, _charts, advice: render_json(data, title, advice),
    "sarif": lambda data, title, _charts, advice: render_sarif(data, title, advice),
})


def render(data: ReportData, fmt: ReportFormat, *, title: str = DEFAULT_TITLE, include_charts: bool = True,
           include_recommendations: bool = True) -> tuple[str, list[str]]:
    """The report text and the names of its sections."""
    advice = recommend(data) if include_recommendations else None
    return RENDERERS[fmt](data, title or DEFAULT_TITLE, include_charts, advice)


def check_output_path(workspace: Workspace, raw: str, param: str = "output_path") -> Result[Path]:
    """Where a report may be written: inside the workspace, not a directory. Touches nothing."""
    resolved = workspace.resolve(raw, Access.WRITE, param=param)
    if not resolved.ok:
        return resolved
    real = resolved.data
    if real.is_dir():
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {workspace.display(real)} is a directory",
                           "Give a file name, e.g. reports/quality.html.", data=real)
    for parent in real.parents:
        if parent.exists():
            if not parent.is_dir():
                return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {raw!r} goes through "
                                   f"{workspace.display(parent)}, which is a file", "Choose another folder.",
                                   data=real)
            break
    return resolved


def person_output_path(real: Path, param: str = "--output") -> Result[Path]:
    """Where a person at the terminal asked for a report outside the project: any path they can write,
    but not a directory nor under a file. Touches nothing. (A tool's output stays in the workspace.)"""
    if real.is_dir():
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {real} is a directory",
                           "Give a file name, e.g. ~/reports/quality.html.", data=real)
    for parent in real.parents:
        if parent.exists():
            if not parent.is_dir():
                return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {real} goes through {parent}, which is a file",
                                   "Choose another folder.", data=real)
            break
    return Result.success(real)


def write_report(workspace: Workspace | None, real: Path, text: str) -> Result[int]:
    """Write (or overwrite) the report atomically; the size in bytes on success. ``workspace`` is the one
    the path was resolved in (``None``: a person's path outside the project)."""
    display = workspace.display(real) if workspace is not None else str(real)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot create the folder for {display}: {exc.strerror}",
                           "Choose an output path in a writable folder.", data=0)
    written = write_text(real, TextFile(""), text, display, workspace)  # reports are always UTF-8 with \n
    if not written.ok:
        return written.cast(0)
    return Result.success(real.stat().st_size)


__all__ = ["DEFAULT_TITLE", "ReportData", "ReportFormat", "check_output_path", "from_review", "parse_results",
           "person_output_path", "render", "write_report"]
