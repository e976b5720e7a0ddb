"""``codeward review PATH``: analyze, report and check the quality gates, for CI.

Exit status: 0 when every gate passes, 1 when a gate is violated (or an analyzer could not
run), 2 when the command itself is wrong (bad path, unknown gate or format).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from codeward.coding.review import service
from codeward.coding.review.gates import evaluate, parse_cli_gates
from codeward.coding.review.report import ReportFormat, check_output_path, from_review, render, write_report
from codeward.context import ToolContext
from codeward.result import Result
from codeward.workspace import Workspace

EXIT_PASS, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2
FORMATS: dict[str, ReportFormat] = {"html": "html", "md": "markdown", "markdown": "markdown", "json": "json"}


def run_review_cli(path: str, fmt: str, gates: list[str] | None, output: str | None, *,
                   root: Path | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Review ``path`` (inside ``root``, default the current directory) and return the exit status.

    The report goes to ``output`` (inside the root) or, without one, to standard output; the
    gate results go to standard error. ``gates`` are ``NAME=VALUE`` items (defaults otherwise).
    """
    out = stdout or sys.stdout
    err = stderr or sys.stderr

    def fail(result: Result[Any]) -> int:
        print(f"codeward review: {result.error_text()}", file=err)
        return EXIT_USAGE

    report_format = FORMATS.get(fmt.lower())
    if report_format is None:
        print(f"codeward review: ERROR (invalid_input): unknown format {fmt!r}\nHint: use one of html, md, json.",
              file=err)
        return EXIT_USAGE
    chosen = parse_cli_gates(gates)
    if not chosen.ok:
        return fail(chosen)
    try:
        workspace = Workspace.create([root or Path.cwd()])
    except ValueError as exc:
        print(f"codeward review: {exc}", file=err)
        return EXIT_USAGE
    ctx = ToolContext(workspace)
    destination = None
    if output is not None:
        checked = check_output_path(workspace, output, "--output")
        if not checked.ok:
            return fail(checked)
        destination = checked.data
    reviewed = service.analyze_project(ctx, path, directories_only=False)
    if not reviewed.ok or reviewed.data is None:
        return fail(reviewed)
    for note in reviewed.notes:
        print(f"codeward review: {note}", file=err)
    analysis = reviewed.data.analysis
    text, _sections = render(from_review(analysis, reviewed.data.issues), report_format,
                             title=f"Code Quality Report — {analysis.path}")
    if destination is None:
        out.write(text)
    else:
        written = write_report(workspace, destination, text)
        if not written.ok:
            return fail(written)
        print(f"codeward review: wrote {workspace.display(destination)} ({written.data:,} bytes)", file=err)
    verdict = evaluate(analysis, chosen.data, fail_on_violation=True)
    print(verdict.render(), file=err)
    return EXIT_PASS if verdict.success else EXIT_VIOLATION
