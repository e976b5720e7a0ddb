"""Shell scripts with shellcheck (``--format=json1``), one run over all scripts.

shellcheck reads the project's ``.shellcheckrc`` files itself (rule selection, shell
dialect); an isolated review passes ``--norc``. Its levels map error to error, warning to
warning, info and style to info. Rules are ``SC2086`` and link to the shellcheck wiki.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.engines.review.models import Issue, Severity

SEVERITY: dict[str, Severity] = {"error": "error", "warning": "warning", "info": "info", "style": "info"}
CLEAN, FOUND = 0, 1


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    rc = ["--norc"] if runner.config.isolated else []
    completed = runner.run("shellcheck", ["--format=json1", *rc, "--", *paths(files)], ok_exit_codes=(CLEAN, FOUND))
    try:
        report: dict[str, Any] = json.loads(completed.stdout or '{"comments": []}')
    except json.JSONDecodeError as exc:
        raise failure(f"shellcheck printed something that is not JSON ({exc.msg}): {completed.stderr_tail()}") from exc
    index = FileIndex(files, runner.workdir)
    issues = []
    for comment in report.get("comments", []):
        source = index.lookup(str(comment.get("file") or ""))
        if source is None:
            continue
        rule = f"SC{comment.get('code')}"
        url = f"https://www.shellcheck.net/wiki/{rule}"
        issues.append(Issue(
            file=source.display, severity=SEVERITY.get(str(comment.get("level")), "warning"),
            line=int(comment.get("line") or 0), column=int(comment.get("column") or 0),
            message=str(comment.get("message") or ""), rule=rule, category="lint",
            suggestion=f"See {url}, or silence it with `# shellcheck disable={rule}` on the line before.",
            tool="shellcheck", url=url,
        ))
    return Findings(issues=issues)
