"""Every output format of ``codeward review`` by name, as one table (dispatch is a lookup)."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from codeward.engines.review.report import ReportData, render
from codeward.engines.review.report.lines import render_github, render_text

Render = Callable[[ReportData, str], str]

FORMATS: MappingProxyType[str, Render] = MappingProxyType({
    "text": lambda data, title: render_text(data, title, None)[0],
    "md": lambda data, title: render(data, "markdown", title=title)[0],
    "markdown": lambda data, title: render(data, "markdown", title=title)[0],
    "html": lambda data, title: render(data, "html", title=title)[0],
    "json": lambda data, title: render(data, "json", title=title)[0],
    "sarif": lambda data, title: render(data, "sarif", title=title)[0],
    "github": lambda data, title: render_github(data, title, None)[0],
})
FORMAT_NAMES = tuple(FORMATS)


def render_format(name: str, data: ReportData, *, title: str) -> str:
    """The report in format ``name`` (one of :data:`FORMAT_NAMES`)."""
    return FORMATS[name](data, title)
