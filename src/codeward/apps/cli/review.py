"""``codeward review PATH...``: analyze, report and check the quality gates, for CI and pre-commit.

Exit status: 0 when every gate passes, 1 when a gate is violated (or an analyzer could not
run), 2 when the command itself is wrong (bad path, unknown gate, format or timeout).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from codeward.apps.cli.common import configs_of
from codeward.apps.cli.parser import quiet
from codeward.apps.cli.tool_hints import for_the_terminal
from codeward.config import ReviewSettings, load_config
from codeward.engines.review.gates import evaluate, gates_help, parse_cli_gates
from codeward.engines.review.report import check_output_path, from_review, person_output_path, write_report
from codeward.engines.review.report.formats import FORMAT_NAMES, render_format
from codeward.kernel.result import ErrorKind, Result
from codeward.serving.stack import build_stack

if TYPE_CHECKING:
    from codeward.config import Config

EXIT_PASS, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


def register(sub: Any) -> None:
    review = sub.add_parser("review", help="static review with quality gates (CI-ready exit code)",
                            description="Analyze files or folders (ruff, mypy, bandit, radon/lizard, vulture; "
                            "shellcheck, cppcheck, biome when installed) with the project's own analyzer "
                            "configuration, write a report and check quality gates: exit 1 when a gate fails. "
                            f"Gates: {gates_help()}.")
    review.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                        help="files or folders to review (default: .)")
    review.add_argument("--format", choices=FORMAT_NAMES, default="md",
                        help="report format: text (one line per finding), md, html, json, sarif (SARIF 2.1.0), "
                        "github (workflow annotations) (default md)")
    review.add_argument("--gates", nargs="*", metavar="NAME=VALUE",
                        help="gate thresholds over the defaults, e.g. max_errors=0 avg_complexity=8; NAME=off "
                        "turns a default gate off")
    review.add_argument("--output", help="write the report to this file (inside the project) instead of stdout")
    review.add_argument("--timeout", metavar="SECONDS",
                        help="seconds each analyzer may run before it is stopped (default 120)")
    review.add_argument("--isolated", action="store_true",
                        help="ignore the project's ruff/mypy/bandit/vulture/biome configuration and use "
                        "codeward's fixed rules (for untrusted code)")
    review.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return run_review_cli(args.paths, args.format, args.gates, args.output, timeout=args.timeout,
                          isolated=args.isolated, progress=not quiet(args), project=configs_of(args)[0])


class StderrProgress:
    """Prints the engine's progress on standard error, one line per event (CI logs keep them)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        if not message:
            return
        with self._lock:
            print(f"codeward review: [{done:g}/{total:g}] {message}" if total else f"codeward review: {message}",
                  file=self._stream, flush=True)

    def log(self, level: str, message: str) -> None:
        with self._lock:
            print(f"codeward review: {level}: {message}", file=self._stream, flush=True)


def parse_timeout(raw: str | float | None) -> Result[float]:
    """``--timeout``: seconds each analyzer may run, a number in (0, MAX_TIMEOUT_SECONDS]."""
    from codeward.engines.review.runner import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS

    if raw is None:
        return Result.success(DEFAULT_TIMEOUT_SECONDS)
    hint = (f"Give the seconds each analyzer may run, more than 0 and at most {MAX_TIMEOUT_SECONDS:g}, "
            f"e.g. --timeout 300 (default {DEFAULT_TIMEOUT_SECONDS:g}).")
    try:
        value = float(raw)
    except ValueError:
        return Result.fail(ErrorKind.INVALID_INPUT, f"--timeout {raw!r} is not a number of seconds", hint, data=0.0)
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT_SECONDS:
        return Result.fail(ErrorKind.INVALID_INPUT, f"--timeout {raw!r} is out of range", hint, data=0.0)
    return Result.success(value)


def review_root(paths: Sequence[str]) -> Path:
    """The workspace a review runs in: the current directory when every path is inside it, else the
    folder the paths share (``codeward review /other/project`` reviews that project, as ``index``
    does), so the project's own analyzer configuration applies there."""
    import os

    here = Path.cwd().resolve()
    resolved = [Path(p).resolve() for p in paths]
    if all(p == here or p.is_relative_to(here) for p in resolved):
        return here
    return Path(os.path.commonpath([p if p.is_dir() else p.parent for p in resolved]))


def run_review_cli(paths: str | Sequence[str], fmt: str, gates: list[str] | None, output: str | None, *,
                   timeout: str | float | None = None, isolated: bool = False, progress: bool = True,
                   config: ReviewSettings | None = None, root: Path | None = None, stdout: TextIO | None = None,
                   stderr: TextIO | None = None, project: Config | None = None) -> int:
    """Review ``paths`` (inside ``root``, default the current directory) and return the exit status.

    The report goes to ``output`` (inside the root) or, without one, to standard output; failed
    analyses, progress and the gate results go to standard error. ``gates`` are ``NAME=VALUE``
    items over the defaults (``NAME=off`` turns a default gate off). ``isolated`` ignores the
    project's analyzer configuration (for untrusted code). ``config`` carries the other review
    settings (analyzer executables...); ``timeout`` and ``isolated`` override its fields.
    ``project`` is the codeward configuration the stack is built from (default: the one found
    from the working directory). Without ``root``, paths outside the working directory make
    their folder the root (:func:`review_root`).
    """
    from codeward.engines.review import service

    out = stdout or sys.stdout
    err = stderr or sys.stderr

    def fail(result: Result[Any]) -> int:
        print(f"codeward review: {for_the_terminal(result.error_text())}", file=err)
        return EXIT_USAGE

    if fmt.lower() not in FORMAT_NAMES:
        print(f"codeward review: ERROR (invalid_input): unknown format {fmt!r}\n"
              f"Hint: use one of {', '.join(FORMAT_NAMES)}.", file=err)
        return EXIT_USAGE
    chosen = parse_cli_gates(gates)
    if not chosen.ok:
        return fail(chosen)
    seconds = parse_timeout(timeout)
    if not seconds.ok:
        return fail(seconds)
    listed = [paths] if isinstance(paths, str) else list(paths) or ["."]
    try:
        stack = build_stack(project or load_config(), [root or review_root(listed)])
    except ValueError as exc:
        print(f"codeward review: {exc}", file=err)
        return EXIT_USAGE
    base = config or stack.services.get(ReviewSettings)
    review = base.model_copy(update={"timeout_seconds": seconds.data if timeout is not None else base.timeout_seconds,
                                     "isolated": isolated or base.isolated})
    ctx = stack.context(reporter=StderrProgress(err) if progress else None)
    ctx = ctx.child(services=ctx.services.with_values(review))
    workspace = stack.workspace
    destination: Path | None = None
    if output is not None:
        # A person names the file as a shell would (relative to the current folder) and may write it
        # anywhere they can; inside the project it passes the workspace's gate as a tool's would. The
        # MCP tools' output_path stays inside the project (check_output_path alone).
        wanted = Path(os.path.abspath(Path(output).expanduser()))
        if workspace.contains(Path(os.path.realpath(wanted))):
            checked = check_output_path(workspace, str(wanted), "--output")
        else:
            checked = person_output_path(wanted, "--output")
        if not checked.ok:
            return fail(checked)
        destination = checked.data
    reviewed = service.review_paths(ctx, listed)
    if not reviewed.ok or reviewed.data is None:
        return fail(reviewed)
    for note in reviewed.notes:
        print(f"codeward review: {note}", file=err)
    analysis = reviewed.data.analysis
    verdict = evaluate(analysis, chosen.data, fail_on_violation=True)
    text = render_format(fmt.lower(), from_review(analysis, reviewed.data.issues, verdict),
                         title=f"Code Quality Report — {analysis.path}")
    if destination is None:
        out.write(text)
    else:
        inside = workspace.contains(destination)
        written = write_report(workspace if inside else None, destination, text)
        if not written.ok:
            return fail(written)
        shown = workspace.display(destination) if inside else str(destination)
        print(f"codeward review: wrote {shown} ({written.data:,} bytes)", file=err)
    print(verdict.render(), file=err)
    return EXIT_PASS if verdict.success else EXIT_VIOLATION
