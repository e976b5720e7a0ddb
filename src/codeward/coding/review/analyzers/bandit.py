"""Security scan with bandit, JSON output; bandit's severity maps HIGH/MEDIUM/LOW to ours."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from codeward.coding.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.coding.review.models import Issue, Severity

SEVERITY: dict[str, Severity] = {"HIGH": "error", "MEDIUM": "warning", "LOW": "info"}


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    completed = runner.run("bandit", ["--format", "json", "--quiet", "--", *paths(files)], ok_exit_codes=(0, 1))
    try:
        report: dict[str, Any] = json.loads(completed.stdout)
    except json.JSONDecodeError as exc:
        detail = completed.stderr_tail() or completed.stdout[:300]
        raise failure(f"bandit printed something that is not JSON ({exc.msg}): {detail}") from exc
    index = FileIndex(files, runner.workdir)
    issues = []
    for record in report.get("results", []):
        source = index.lookup(record["filename"])
        if source is None:
            continue
        cwe = (record.get("issue_cwe") or {}).get("id")
        confidence = str(record.get("issue_confidence", "")).lower()
        message = f"{record['issue_text']} (confidence {confidence}" + (f", CWE-{cwe})" if cwe else ")")
        link = record.get("more_info")
        issues.append(Issue(
            file=source.display, severity=SEVERITY.get(str(record.get("issue_severity")), "warning"),
            line=int(record.get("line_number") or 0), column=int(record.get("col_offset") or 0) + 1,
            message=message, rule=str(record.get("test_id") or "bandit"), category="security",
            suggestion=f"Avoid the pattern or prove the input is trusted; see {link}" if link
            else "Avoid the pattern or prove the input is trusted.",
            tool="bandit", url=link or None,
        ))
    return Findings(issues=issues)
