"""Type-check with mypy, one run over all files, JSON output, never the project's config.

mypy reads no configuration from the analysed project (a plugin named there would run
code), writes no cache, follows imports silently and ignores missing third-party stubs.
A syntax error stops mypy for every file, so files with syntax errors are reported and the
rest are checked again without them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from codeward.coding.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.coding.review.models import Issue

CONFIG_NAME = "mypy.ini"
FLAGS = ("--output", "json", "--cache-dir", os.devnull, "--no-error-summary", "--show-column-numbers",
         "--ignore-missing-imports", "--follow-imports", "silent", "--no-site-packages", "--check-untyped-defs",
         "--show-error-codes")
FATAL = 2
ERROR_CODES_URL = "https://mypy.readthedocs.io/en/stable/error_code_list.html"


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    config = runner.workdir / CONFIG_NAME
    config.write_text("[mypy]\n", encoding="utf-8")
    index = FileIndex(files, runner.workdir)
    issues, blocked = _check(files, runner, index, str(config))
    if blocked:
        remaining = [f for f in files if f.path not in blocked]
        if remaining:
            more, _ = _check(remaining, runner, index, str(config))
            issues += more
    return Findings(issues=issues)


def _check(files: Sequence[SourceFile], runner: ToolRunner, index: FileIndex,
           config: str) -> tuple[list[Issue], set[Any]]:
    completed = runner.run("mypy", ["--config-file", config, *FLAGS, "--", *paths(files)], ok_exit_codes=(0, 1, 2))
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
                      "or analyze the packages one at a time.")
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
