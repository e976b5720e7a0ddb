"""Complexity of non-Python code with lizard (C, C++, Java, JavaScript, Go, Rust...), CSV output.

lizard's CSV rows are ``nloc, ccn, tokens, params, length, location, file, function,
long_name, start, end``; no header is printed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.engines.review.analyzers.radon import WARN_ABOVE, complexity_issue

CCN, FILE, FUNCTION, START = 1, 6, 7, 9
COLUMNS = 11


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    completed = runner.run("lizard", ["--csv", "--", *paths(files)], ok_exit_codes=(0,))
    index = FileIndex(files, runner.workdir)
    findings = Findings()
    for each in files:
        findings.complexities[each.path] = []
    for row in csv.reader(io.StringIO(completed.stdout)):
        if not row or row[0] == "NLOC":
            continue
        if len(row) < COLUMNS:
            raise failure(f"lizard printed a CSV row of {len(row)} columns, expected {COLUMNS}: {row!r:.200}")
        source = index.lookup(row[FILE])
        if source is None:
            continue
        complexity = float(row[CCN])
        findings.complexities[source.path].append(complexity)
        if complexity > WARN_ABOVE:
            findings.issues.append(complexity_issue(source, row[FUNCTION], int(row[START]), 0, complexity, "lizard"))
    return findings
