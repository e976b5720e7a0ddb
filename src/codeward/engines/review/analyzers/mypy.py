"""Type-check with mypy, one run over all files, JSON output, with the project's settings.

Unless the review is isolated, the project's mypy configuration applies (strictness,
per-module overrides, ``exclude``), rewritten by :mod:`..project_config` without the options
that would run code or write files, and mypy runs in the configuration's folder as it does for
the project's developers. Isolated reviews (and projects without a mypy configuration) use a
fixed configuration. Either way mypy writes no cache, follows imports silently and ignores
missing third-party stubs (the project's dependencies are not installed next to codeward).
A syntax error stops mypy for every file, so files with syntax errors are reported and the
rest are checked again without them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.engines.review.models import Issue

CONFIG_NAME = "mypy.ini"
FLAGS = ("--output", "json", "--cache-dir", os.devnull, "--no-error-summary", "--show-column-numbers",
         "--ignore-missing-imports", "--follow-imports", "silent", "--no-site-packages", "--show-error-codes")
ISOLATED_FLAGS = ("--check-untyped-defs",)
FATAL = 2
ERROR_CODES_URL = "https://mypy.readthedocs.io/en/stable/error_code_list.html"


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    config = runner.workdir / CONFIG_NAME
    settings = None if runner.config.isolated else runner.project.mypy
    cwd = runner.workdir
    flags = FLAGS + (ISOLATED_FLAGS if runner.config.isolated else ())
    if settings is None:
        config.write_text("[mypy]\n", encoding="utf-8")
    else:
        config.write_text(settings.ini, encoding="utf-8")
        cwd = settings.directory
        files = [f for f in files if not _excluded(f.path, settings.directory, settings.exclude)]
        if not files:
            return Findings()
    index = FileIndex(files, cwd)
    issues, blocked = _check(files, runner, index, [str(config), *flags], cwd)
    if blocked:
        remaining = [f for f in files if f.path not in blocked]
        if remaining:
            more, _ = _check(remaining, runner, index, [str(config), *flags], cwd)
            issues += more
    return Findings(issues=issues)


def _excluded(path: Path, directory: Path, pattern: re.Pattern[str] | None) -> bool:
    """mypy's ``exclude`` regex, matched as mypy does: on the path relative to where it runs."""
    if pattern is None:
        return False
    relative = os.path.relpath(path, directory).replace(os.sep, "/")
    return bool(pattern.search(relative))


def _check(files: Sequence[SourceFile], runner: ToolRunner, index: FileIndex,
           options: list[str], cwd: Path) -> tuple[list[Issue], set[Any]]:
    completed = runner.run("mypy", ["--config-file", *options, "--", *paths(files)], ok_exit_codes=(0, 1, 2), cwd=cwd)
    records = []
    for line in completed.stdout.splitlines():
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise failure(f"mypy printed a line that is not JSON ({exc.msg}): {line[:200]}") from exc
    if completed.returncode == FATAL and not records:
        detail = completed.stderr_tail() or completed.stdout.strip()[-600:]
        raise failure(f"mypy stopped before checking: {detail}",
                      "Duplicate module names are the usual cause: exclude one copy with exclude_patterns, "
                      "or analyze the packages one at a time. A setting in the project's mypy configuration "
                      "may be at fault too: try an isolated review.")
    issues: list[Issue] = []
    blocked = set()
    for record in records:
        source = index.lookup(record.get("file") or "")
        if source is None:
            continue
        code = record.get("code") or "misc"
        if code == "syntax":
            blocked.add(source.path)
        issues.append(Issue(
            file=source.display, severity="error" if record.get("severity") == "error" else "info",
            line=int(record.get("line") or 0), column=_column(record.get("column")),
            message=record.get("message") or "", rule=code, category="type",
            suggestion=record.get("hint") or _suggestion(code), tool="mypy", url=ERROR_CODES_URL,
        ))
    return issues, blocked if completed.returncode == FATAL else set()


def _column(raw: object) -> int:
    """mypy's JSON columns are 0-based (-1 when unknown); ours are 1-based (0 when unknown)."""
    return raw + 1 if isinstance(raw, int) and raw >= 0 else 0


def _suggestion(code: str) -> str:
    return (f"Make the types agree, or silence this one line with `# type: ignore[{code}]` if mypy is wrong; "
            f"see https://mypy.readthedocs.io/en/stable/error_code_list.html")
