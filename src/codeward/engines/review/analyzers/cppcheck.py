"""C and C++ with cppcheck (XML output version 2), one run over all files.

cppcheck reports bugs (null dereferences, out-of-bounds access, leaks) as errors, suspicious
code as warnings, and style, performance and portability advice as info. Its notes about
the analysis itself (missing includes, the checkers report) are not findings about the code
and are left out. ``// cppcheck-suppress id`` comments are honoured (``--inline-suppr``).
cppcheck writes nothing: no build directory is given.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, failure, paths
from codeward.engines.review.models import Issue, Severity

SEVERITY: dict[str, Severity] = {"error": "error", "warning": "warning", "style": "info", "performance": "info",
                                 "portability": "info"}
NOT_ABOUT_THE_CODE = frozenset({"missingInclude", "missingIncludeSystem", "checkersReport", "toomanyconfigs",
                                "unmatchedSuppression", "normalCheckLevelMaxBranches", "noValidConfiguration"})
CHECKS = "warning,style,performance,portability"
"""Paths are absolute (codeward resolves them), so none can be read as an option: cppcheck has no `--`."""


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    completed = runner.run("cppcheck", ["--xml", "--xml-version=2", f"--enable={CHECKS}", "--inline-suppr",
                                        "--quiet", "--error-exitcode=0", *paths(files)], ok_exit_codes=(0,))
    try:
        root = ElementTree.fromstring(completed.stderr.strip() or "<results/>")
    except ElementTree.ParseError as exc:
        raise failure(f"cppcheck printed XML that cannot be read ({exc}): {completed.stderr_tail()}") from exc
    index = FileIndex(files, runner.workdir)
    issues = []
    for error in root.iter("error"):
        rule = error.get("id") or "cppcheck"
        severity = SEVERITY.get(error.get("severity") or "")
        location = error.find("location")
        if severity is None or rule in NOT_ABOUT_THE_CODE or location is None:
            continue
        source = index.lookup(location.get("file") or "")
        if source is None:
            continue
        cwe = error.get("cwe")
        issues.append(Issue(
            file=source.display, severity=severity, line=int(location.get("line") or 0),
            column=int(location.get("column") or 0),
            message=(error.get("verbose") or error.get("msg") or rule) + (f" (CWE-{cwe})" if cwe else ""),
            rule=rule, category="lint",
            suggestion=f"Fix the code, or silence this one with `// cppcheck-suppress {rule}` on the line before.",
            tool="cppcheck",
        ))
    return Findings(issues=issues)
