"""Python complexity and maintainability with radon (``cc`` and ``mi``, JSON output).

Every function and method's cyclomatic complexity feeds the metrics and the distribution;
functions above :data:`WARN_ABOVE` become issues. A file's maintainability index (0-100)
feeds the metrics; files ranked B (10-19) or C (below 10) by radon become issues.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.engines.review.models import Issue, Severity, complexity_rank

WARN_ABOVE = 10
"""Functions more complex than this (radon rank C and worse) are reported."""
ERROR_ABOVE = 30
"""Functions more complex than this (radon ranks E and F) are errors."""
MI_WARN_BELOW = 10.0
MI_INFO_BELOW = 20.0
FUNCTION_TYPES = ("function", "method")


def complexity_issue(source: SourceFile, name: str, line: int, column: int, complexity: float, tool: str) -> Issue:
    severity: Severity = "error" if complexity > ERROR_ABOVE else "warning"
    return Issue(
        file=source.display, severity=severity, line=line, column=column,
        message=f"{name} has cyclomatic complexity {complexity:g} (rank {complexity_rank(complexity)}; "
                f"over {WARN_ABOVE} is hard to test)",
        rule="cyclomatic-complexity", category="complexity",
        suggestion=f"Split {name} into smaller functions, replace branch chains with a lookup table, or return "
                   "early.", tool=tool,
    )


def _load(stdout: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(stdout or "{}")
    except json.JSONDecodeError as exc:
        raise failure(f"radon {what} printed something that is not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise failure(f"radon {what} printed JSON of an unexpected shape")
    return data


def analyze_complexity(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    completed = runner.run("radon", ["cc", "--json", "--", *paths(files)], ok_exit_codes=(0,))
    index = FileIndex(files, runner.workdir)
    findings = Findings()
    for raw_path, blocks in _load(completed.stdout, "cc").items():
        source = index.lookup(raw_path)
        if source is None or not isinstance(blocks, list):
            continue  # a file radon could not parse ({"error": ...}); the lint analysis reports why
        values = findings.complexities.setdefault(source.path, [])
        for block in blocks:
            if block.get("type") not in FUNCTION_TYPES:
                continue
            complexity = float(block["complexity"])
            values.append(complexity)
            if complexity > WARN_ABOVE:
                name = f"{block['classname']}.{block['name']}" if block.get("classname") else block["name"]
                findings.issues.append(complexity_issue(source, name, int(block["lineno"]),
                                                        int(block.get("col_offset", 0)) + 1, complexity, "radon"))
    return findings


def analyze_maintainability(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    completed = runner.run("radon", ["mi", "--json", "--", *paths(files)], ok_exit_codes=(0,))
    index = FileIndex(files, runner.workdir)
    findings = Findings()
    for raw_path, record in _load(completed.stdout, "mi").items():
        source = index.lookup(raw_path)
        if source is None or not isinstance(record, dict) or "mi" not in record:
            continue
        score = round(float(record["mi"]), 2)
        findings.maintainability[source.path] = score
        if score < MI_INFO_BELOW:
            severity: Severity = "warning" if score < MI_WARN_BELOW else "info"
            findings.issues.append(Issue(
                file=source.display, severity=severity, line=0, column=0,
                message=f"maintainability index {score:g} (radon rank {record.get('rank', '?')}; 20 and above "
                        "is good)",
                rule="maintainability-index", category="maintainability",
                suggestion="Shorten the file's long, branchy functions and split the module by concern.",
                tool="radon",
            ))
    return findings
