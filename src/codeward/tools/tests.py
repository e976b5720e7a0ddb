"""``run_tests``: the project's tests, run in the shell sandbox, answered as structured results.

The tests are the project's own code, so they run exactly where ``run_shell`` runs a script —
the same sandbox, the same limits, their writes brought back through the same gate and
recorded in the call's checkpoint (:func:`codeward.engines.shell.runner.execute`); there is no second
way to run anything. pytest is found from the project's configuration and asked for a JUnit
report, which becomes the structured answer: counts, and for each failure its test id, the
file and line where it failed and the message. Any other runner is given as a command and
reported by its exit code and output. The whole log is saved under ``.codeward/outputs/``.
"""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from codeward.config.shell import ShellSettings
from codeward.engines.sandbox.choice import Executor
from codeward.engines.shell.runner import MAX_SCRIPT_CHARS, ShellCommand, execute
from codeward.engines.shell.settings import HARD_MAX_TIMEOUT_S
from codeward.engines.shell.test_results import TestSummary, parse_junit, uses_pytest
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.steps import save_output
from codeward.kernel.workspace import Access

MARKER = "<<<codeward-junit-report>>>"
JUNIT_PATH = "/tmp/codeward-junit.xml"
"""Inside the sandbox: its /tmp is private, so the report never lands in the project."""
TAIL_CHARS = 4_000
_SELECTOR = re.compile(r"^[^\x00\n]+$")


class FailedTest(BaseModel):
    test_id: str
    kind: Literal["failed", "error"]
    path: str
    line: int
    message: str


class TestReport(BaseModel):
    runner: str
    command: str
    status: Literal["passed", "failed", "no tests", "error", "timeout"]
    exit_code: int | None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failures: list[FailedTest] = Field(default_factory=list)
    failures_shown: int = 0
    log: str = Field(default="", description="The whole output, saved under .codeward/outputs/ (read_file).")
    output_tail: str = Field(default="", description="The end of the output when there is no structured report.")

    def render(self) -> str:
        counts = f"{self.passed} passed, {self.failed} failed, {self.errors} errors, {self.skipped} skipped"
        lines = [f"{self.status.upper()}: {counts} in {self.seconds:.2f} s ({self.runner}: {self.command}; "
                 f"exit code {self.exit_code})"]
        for failure in self.failures:
            where = f"{failure.path}:{failure.line}" if failure.line else failure.path
            lines.append(f"{failure.kind.upper()} {failure.test_id} ({where}): {failure.message}")
        hidden = self.failed + self.errors - len(self.failures)
        if hidden > 0:
            lines.append(f"[... {hidden} more failures; the log has them all]")
        if self.output_tail:
            lines += ["output (end):", self.output_tail]
        if self.log:
            lines.append(f"log: {self.log}")
        return "\n".join(lines)


@tool(toolset="shell", destructive=True, open_world=False, title="Run the project's tests", output=TestReport,
      examples=[{"targets": ["tests"], "timeout_s": 120}, {"targets": ["tests/test_store.py"], "keyword": "tax"}])
def run_tests(
    ctx: ToolContext,
    targets: Annotated[list[str], Field(description="Files, folders or node ids (path::name); none: all.")
                       ] = [],  # noqa: B006
    keyword: Annotated[str, Field(description="A pytest -k expression.")] = "",
    command: Annotated[str, Field(description="Another runner (npm test, cargo test...): judged by exit code.")
                       ] = "",
    timeout_s: Annotated[float, Field(gt=0, le=HARD_MAX_TIMEOUT_S)] = 300,
    max_failures: Annotated[int, Field(ge=1, le=500)] = 30,
) -> Result[TestReport | None]:
    """Run the project's tests in the sandbox: pytest, with counts and each failure's test, file:line and
    message; or another runner's command."""
    settings = ctx.services.get(ShellSettings)
    root = ctx.workspace.primary
    if command.strip():
        if targets or keyword:
            return Result.fail(ErrorKind.INVALID_INPUT, "targets and keyword select pytest tests; with command, "
                               "put the selection in the command", "Drop targets/keyword, or drop command.")
        script, runner, shown = command, "command", command.strip()
    else:
        arguments = _pytest_arguments(ctx, targets, keyword)
        if not arguments.ok:
            return _failed(arguments)
        found = uses_pytest(root)
        if not found:
            return Result.fail(ErrorKind.NOT_FOUND, "no pytest configuration or tests found in the project",
                               "Give the runner's command (command='npm test'), or add a [tool.pytest.ini_options] "
                               "table to pyproject.toml.")
        shown = "pytest " + " ".join(shlex.quote(a) for a in arguments.data)
        script = _pytest_script(arguments.data)
        runner = f"pytest ({found})"
    if len(script) > MAX_SCRIPT_CHARS:
        return Result.fail(ErrorKind.TOO_LARGE, "the command is too long", "Run fewer targets at once.")
    executed = execute(ctx, ShellCommand(script, "bash", timeout_s), settings, Executor.TESTS)
    if not executed.ok or executed.data is None:
        return _failed(executed)
    run = executed.data
    stdout, _, junit = run.result.stdout.partition(f"\n{MARKER}\n")
    log_text = f"$ {shown}\n{stdout}\n--- stderr ---\n{run.result.stderr}"
    log = save_output(log_text, ctx, "run_tests") or ""
    report = TestReport(runner=runner, command=shown, status="error", exit_code=run.result.exit_code, log=log)
    summary = parse_junit(junit.encode("utf-8", "surrogateescape"), root) if junit.strip() else None
    if run.timed_out or run.cancelled:
        report.status = "timeout"
    if summary is not None:
        _fill(report, summary, max_failures)
        if report.status != "timeout":
            report.status = "passed" if not (summary.failed or summary.errors) and summary.total else \
                "no tests" if not summary.total else "failed"
    else:
        report.output_tail = (stdout + run.result.stderr)[-TAIL_CHARS:]
        if report.status != "timeout":
            report.status = "passed" if run.result.exit_code == 0 else \
                "no tests" if (not command and run.result.exit_code == 5) else "failed" if command else "error"
    return Result(data=report, notes=list(dict.fromkeys([*run.notes, *run.result.notes])))


def _pytest_arguments(ctx: ToolContext, targets: list[str], keyword: str) -> Result[list[str]]:
    arguments: list[str] = []
    for target in targets:
        path, _, rest = target.partition("::")
        if not _SELECTOR.match(target) or target.startswith("-"):
            return Result.fail(ErrorKind.INVALID_INPUT, f"target {target!r} is not a test path",
                               "Give files, folders or node ids such as tests/test_app.py::test_login.")
        resolved = ctx.workspace.resolve(path, Access.READ, param="target")
        if not resolved.ok:
            return _failed(resolved)
        if not resolved.data.exists():
            return Result.fail(ErrorKind.NOT_FOUND, f"target {path!r} does not exist",
                               "List the tests folder (list_directory) to see the test files.")
        rel = ctx.workspace.display(resolved.data)
        arguments.append(f"{rel}::{rest}" if rest else rel)
    if keyword:
        if "\n" in keyword or "\x00" in keyword:
            return Result.fail(ErrorKind.INVALID_INPUT, "keyword holds a newline or NUL",
                               "Give one pytest -k expression, e.g. 'login and not slow'.")
        arguments += ["-k", keyword]
    return Result.success(arguments)


def _pytest_script(arguments: list[str]) -> str:
    """A bash script: pytest with a JUnit report in the sandbox's /tmp, then the report after a marker."""
    quoted = " ".join(shlex.quote(argument) for argument in arguments)
    return "\n".join([
        "export PYTHONDONTWRITEBYTECODE=1",
        'PY=python3; [ -x .venv/bin/python ] && PY=.venv/bin/python; [ -x venv/bin/python ] && PY=venv/bin/python',
        f'"$PY" -m pytest -q -rfE --tb=short --color=no -p no:cacheprovider -o junit_family=xunit1 '
        f"--junitxml={JUNIT_PATH} {quoted}",
        "code=$?",
        f"printf '\\n%s\\n' {shlex.quote(MARKER)}",
        f"cat {JUNIT_PATH} 2>/dev/null",
        "exit $code",
    ])


def _fill(report: TestReport, summary: TestSummary, limit: int) -> None:
    report.passed, report.failed, report.errors = summary.passed, summary.failed, summary.errors
    report.skipped, report.seconds = summary.skipped, round(summary.seconds, 3)
    report.failures = [FailedTest(test_id=f.test_id, kind="failed" if f.kind == "failed" else "error", path=f.path,
                                  line=f.line, message=f.message) for f in summary.failures[:limit]]
    report.failures_shown = len(report.failures)


def _failed(result: Result[Any]) -> Result[Any]:
    return result.cast(None)
