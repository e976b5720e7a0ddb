"""The seed's other tool names, callable but never listed (``hidden``).

Manual Slop's agent calls ``run_powershell``; the coding module's simplified interface has
``code_execute``, ``code_review_file``, ``code_review_project`` and ``code_debug``. Clients
written against those names keep working, while ``tools/list`` shows each tool once, under
codeward's name: every one here is a thin front of a listed tool, with the seed's simpler
arguments, going through the same checks, sandbox and approval as the tool it fronts.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from codeward.config.shell import ShellSettings
from codeward.engines.review.models import FileAnalysis, ProjectAnalysis
from codeward.engines.shell.runner import MAX_SCRIPT_CHARS, ShellCommand, run_command
from codeward.engines.shell.settings import HARD_MAX_TIMEOUT_S
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.tools.coding_exec import (
    CodeArg,
    DebugOutput,
    ExecutionOutput,
    LanguageName,
    coding_debug_code,
    coding_execute_code,
)
from codeward.tools.coding_review import coding_analyze_file, coding_analyze_project
from codeward.tools.codomyrmex_shapes import failed

NO_PWSH = "PowerShell (pwsh) is not installed"


@tool(toolset="shell", destructive=True, open_world=True, hidden=True, title="Run a PowerShell script")
def run_powershell(
    ctx: ToolContext,
    script: Annotated[str, Field(min_length=1, max_length=MAX_SCRIPT_CHARS, description="The PowerShell script.")],
    timeout_s: Annotated[float, Field(gt=0, le=HARD_MAX_TIMEOUT_S, description="Seconds before it is killed.")] = 60,
) -> Result[str]:
    """Manual Slop's shell tool: run a PowerShell script in the project root, as run_shell does
    with shell="pwsh" (sandboxed the same way); fails naming run_shell where pwsh is not installed."""
    ran = run_command(ctx, ShellCommand(script, "pwsh", timeout_s), ctx.services.get(ShellSettings))
    if any(e.message.startswith(NO_PWSH) for e in ran.errors):
        return Result.fail(ErrorKind.UNAVAILABLE, "run_powershell needs PowerShell (pwsh), which is not installed "
                           "on this machine", "Call run_shell with the script written for bash (run_shell(script=..., "
                           "shell=\"bash\")), or install PowerShell 7 so that `pwsh` is on PATH.", data="")
    return ran


@tool(toolset="coding", output=ExecutionOutput, hidden=True, title="Execute code in a sandbox",
      failure=failed("Execution", status="setup_error"))
def code_execute(
    ctx: ToolContext,
    code: CodeArg,
    language: Annotated[LanguageName, Field(description="Programming language of the code.")] = "python",
    timeout: Annotated[int, Field(ge=1, le=300, description="Wall-clock limit in seconds (1-300).")] = 30,
) -> Result[ExecutionOutput]:
    """The coding module's simplified coding_execute_code: run code (python by default) in the sandbox."""
    return coding_execute_code(ctx, language=language, code=code, stdin="", timeout=timeout, session_id=None,
                               memory_mb=None, network=False)


@tool(toolset="coding", read_only=True, output=FileAnalysis, hidden=True, title="Review a source file",
      failure=failed("Analysis"))
def code_review_file(
    ctx: ToolContext,
    path: Annotated[str, Field(description="The file to review, relative to the workspace root.")],
) -> Result[FileAnalysis | None]:
    """The coding module's simplified coding_analyze_file: every analysis of one file, all severities."""
    return coding_analyze_file(ctx, file_path=path, analysis_types=None, severity_threshold="info")


@tool(toolset="coding", read_only=True, output=ProjectAnalysis, hidden=True, title="Review a project",
      failure=failed("Project analysis"))
def code_review_project(
    ctx: ToolContext,
    path: Annotated[str, Field(description="Directory to review ('.' is the workspace root).")] = ".",
) -> Result[ProjectAnalysis | None]:
    """The coding module's simplified coding_analyze_project: every analysis under a directory, no report file."""
    return coding_analyze_project(ctx, path=path, include_patterns=None, exclude_patterns=None, output_path=None,
                                  report_format="json", analysis_types=None, severity_threshold="info")


@tool(toolset="coding", output=DebugOutput, hidden=True, title="Diagnose failing code",
      failure=failed("Debugging"))
def code_debug(
    ctx: ToolContext,
    code: Annotated[str, Field(description="The source code that failed.")],
    error: Annotated[str, Field(description="What it printed when it failed (the traceback).")],
    language: Annotated[LanguageName | None, Field(description="Language (default: detected).")] = None,
) -> Result[DebugOutput]:
    """The coding module's simplified coding_debug_code: diagnose a failure from its traceback (and, with a
    model configured, propose a fix verified in the sandbox)."""
    return coding_debug_code(ctx, source_code=code, stdout="", stderr=error, exit_code=1, language=language,
                             max_retries=3, stdin="", timeout=30)
