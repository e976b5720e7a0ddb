"""Dead code with vulture, over all files at once so that uses in one file count for another.

vulture has no JSON output; its line format (``path:line: message (N% confidence)``) is
stable and parsed here. Findings of 90% confidence and more (unused imports, unreachable
code) are warnings; the 60% ones (an unused function may be called dynamically) are info.
The project's ``[tool.vulture]`` settings (exclude, ignore_names, ignore_decorators,
min_confidence, whitelist modules in ``paths``) apply unless the review is isolated; they are
passed as flags, so no setting can change the output format.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, paths
from codeward.engines.review.models import Issue

LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<message>.+?) \((?P<confidence>\d+)% confidence[^)]*\)$")
WARNING_CONFIDENCE = 90
NO_DEAD_CODE, INVALID_INPUT, DEAD_CODE = 0, 1, 3


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    options: list[str] = []
    whitelists: list[str] = []
    if not runner.config.isolated:
        options = list(runner.project.vulture_args)
        whitelists = [str(path) for path in runner.project.vulture_paths]
    completed = runner.run("vulture", [*options, "--", *paths(files), *whitelists],
                           ok_exit_codes=(NO_DEAD_CODE, INVALID_INPUT, DEAD_CODE))
    index = FileIndex(files, runner.workdir)
    issues = []
    for line in completed.stdout.splitlines():
        match = LINE.match(line.strip())
        if not match:
            continue
        source = index.lookup(match["path"])
        if source is None:
            continue
        message = match["message"]
        confidence = int(match["confidence"])
        kind = message.split(" '")[0]
        issues.append(Issue(
            file=source.display, severity="warning" if confidence >= WARNING_CONFIDENCE else "info",
            line=int(match["line"]), column=0, message=f"{message} ({confidence}% confidence)",
            rule=kind.replace(" ", "-"), category="dead_code", suggestion=_suggestion(kind), tool="vulture",
        ))
    return Findings(issues=issues)


def _suggestion(kind: str) -> str:
    if kind.startswith("unreachable"):
        return "Delete the unreachable code, or fix the condition that makes it unreachable."
    return (f"Remove the {kind.removeprefix('unused ')} if nothing uses it; if it is used dynamically "
            "(framework hooks, getattr), keep it and whitelist it for vulture.")
