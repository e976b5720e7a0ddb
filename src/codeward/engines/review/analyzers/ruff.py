"""Lint with ruff, as JSON: the project's own rules, or (isolated) pyflakes, pycodestyle, bugbear."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.engines.review.models import Issue, Severity

RULES = "E4,E7,E9,F,B,W"
"""Isolated reviews: ruff's default set (E4, E7, E9, F) plus flake8-bugbear and pycodestyle warnings."""
REPORT = "/dev/stdout"
"""Where ruff writes its JSON (the command line beats a configured ``output-file``)."""
ERROR_PREFIXES = ("E9", "F63", "F7", "F82", "PLE")
INFO_PREFIXES = ("W", "E5", "I", "UP", "D", "N")


def severity_of(code: str | None) -> Severity:
    """Syntax errors and undefined names are errors, style is info, the rest are warnings."""
    if not code or not code[0].isupper() or code.startswith(ERROR_PREFIXES):
        return "error"
    if code.startswith(INFO_PREFIXES):
        return "info"
    return "warning"


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    """ruff's findings as ``ruff check`` gives them: with the project's configuration unless isolated.

    Whatever the configuration says, ruff never fixes files (``--no-fix``), writes no cache and
    writes its report to its standard output (``--output-file /dev/stdout`` overrides a configured
    ``output-file``); ``--force-exclude`` applies the project's ``exclude`` to the files codeward
    names, as it does in a walk.
    """
    common = ["--no-cache", "--no-fix", "--output-format", "json", "--output-file", REPORT, "--exit-zero"]
    if runner.config.isolated:
        arguments = ["check", "--isolated", *common, "--select", RULES, "--", *paths(files)]
    else:
        arguments = ["check", *common, "--force-exclude", "--", *paths(files)]
    completed = runner.run("ruff", arguments, ok_exit_codes=(0,))
    try:
        records: list[dict[str, Any]] = json.loads(completed.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise failure(f"ruff printed something that is not JSON ({exc.msg})") from exc
    index = FileIndex(files, runner.workdir)
    issues = []
    for record in records:
        source = index.lookup(record["filename"])
        if source is None:
            continue
        code = record.get("code")
        fix = record.get("fix") or {}
        url = record.get("url")
        suggestion = fix.get("message") or (f"See {url}" if url else "Fix the code at this place.")
        location = record.get("location") or {}
        issues.append(Issue(
            file=source.display, severity=severity_of(code), line=int(location.get("row") or 0),
            column=int(location.get("column") or 0), message=record["message"],
            rule=code if code and code[0].isupper() else "syntax-error", category="lint",
            suggestion=suggestion, tool="ruff", url=url or None,
        ))
    return Findings(issues=issues)
