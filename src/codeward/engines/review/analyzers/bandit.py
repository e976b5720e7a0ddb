"""Security scan with bandit, JSON output; bandit's severity maps HIGH/MEDIUM/LOW to ours.

The project's bandit configuration (``[tool.bandit]`` or ``.bandit``) applies unless the
review is isolated. Without one, codeward's default skips B101 (``assert``) in tests, where
asserting is the point, as ruff users do with a per-file ignore of its twin S101. A finding
on a line whose ``# noqa`` names that twin (``# noqa: S101``), or is bare, is dropped too:
ruff users silence bandit's rules under ruff's names. bandit's own ``# nosec`` works as ever.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pathspec

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.engines.review.models import Issue, Severity

SEVERITY: dict[str, Severity] = {"HIGH": "error", "MEDIUM": "warning", "LOW": "info"}
TEST_FILES = pathspec.GitIgnoreSpec.from_lines(["test_*.py", "*_test.py", "tests/", "test/", "testing/",
                                                "conftest.py"])
"""Where asserting is the point: codeward skips B101 there unless the project configures bandit."""
ASSERT_USED = "B101"
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def _config_args(runner: ToolRunner) -> list[str]:
    return list(runner.project.bandit_args) if not runner.config.isolated else []


def _project_configured(runner: ToolRunner) -> bool:
    return not runner.config.isolated and bool(runner.project.bandit_args)


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    completed = runner.run("bandit", ["--format", "json", "--quiet", *_config_args(runner), "--", *paths(files)],
                           ok_exit_codes=(0, 1))
    try:
        report: dict[str, Any] = json.loads(completed.stdout)
    except json.JSONDecodeError as exc:
        detail = completed.stderr_tail() or completed.stdout[:300]
        raise failure(f"bandit printed something that is not JSON ({exc.msg}): {detail}") from exc
    index = FileIndex(files, runner.workdir)
    issues = []
    lines = _SourceLines()
    configured = _project_configured(runner)
    for record in report.get("results", []):
        source = index.lookup(record["filename"])
        if source is None:
            continue
        test_id = str(record.get("test_id") or "bandit")
        if test_id == ASSERT_USED and not configured and TEST_FILES.match_file(source.display):
            continue
        if _silenced(lines.get(source.path, int(record.get("line_number") or 0)), test_id):
            continue
        cwe = (record.get("issue_cwe") or {}).get("id")
        confidence = str(record.get("issue_confidence", "")).lower()
        message = f"{record['issue_text']} (confidence {confidence}" + (f", CWE-{cwe})" if cwe else ")")
        link = record.get("more_info")
        issues.append(Issue(
            file=source.display, severity=SEVERITY.get(str(record.get("issue_severity")), "warning"),
            line=int(record.get("line_number") or 0), column=int(record.get("col_offset") or 0) + 1,
            message=message, rule=test_id, category="security",
            suggestion=f"Avoid the pattern or prove the input is trusted; see {link}" if link
            else "Avoid the pattern or prove the input is trusted.",
            tool="bandit", url=link or None,
        ))
    return Findings(issues=issues)


def ruff_twin(test_id: str) -> str | None:
    """ruff's flake8-bandit code for a bandit test (B101 -> S101), or None for non-B ids."""
    return "S" + test_id[1:] if len(test_id) == 4 and test_id[0] == "B" and test_id[1:].isdigit() else None


def _silenced(line: str, test_id: str) -> bool:
    match = NOQA.search(line)
    if match is None:
        return False
    codes = match["codes"]
    if not codes:
        return True
    twin = ruff_twin(test_id)
    named = {code.upper() for code in re.split(r"[\s,]+", codes) if code}
    return twin in named or test_id in named


class _SourceLines:
    """The lines of the files findings point at, read once each (the files were selected through the gate)."""

    def __init__(self) -> None:
        self._files: dict[Path, list[str]] = {}

    def get(self, path: Path, line: int) -> str:
        if path not in self._files:
            try:
                self._files[path] = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._files[path] = []
        text = self._files[path]
        return text[line - 1] if 0 < line <= len(text) else ""
