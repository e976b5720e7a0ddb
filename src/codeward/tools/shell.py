"""The shell toolset: ``run_shell``, the seed's shell runner, sandboxed by default.

How scripts run comes from the ``[shell]`` table (``ctx.services.get(ShellSettings)``)
(:class:`codeward.engines.shell.settings.ShellSettings`, the ``[shell]`` table); without it the safe
defaults apply. See ``docs/shell.md``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from codeward.config.shell import ShellSettings
from codeward.engines.shell.runner import MAX_SCRIPT_CHARS, ShellCommand, run_command
from codeward.engines.shell.settings import HARD_MAX_TIMEOUT_S
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import Result


@tool(toolset="shell", read_only=False, destructive=True, open_world=True, title="Run a shell script",
      examples=[{"script": "ls src/inventory && grep -c def src/inventory/store.py"}])
def run_shell(
    ctx: ToolContext,
    script: Annotated[str, Field(min_length=1, max_length=MAX_SCRIPT_CHARS)],
    shell: Literal["bash", "sh", "pwsh"] = "bash",
    timeout_s: Annotated[float, Field(gt=0, le=HARD_MAX_TIMEOUT_S)] = 60,
) -> Result[str]:
    """Run a shell script in the project root, sandboxed: the project is writable, nothing else is, there
    is no network and secret files read empty. Returns its stdout, stderr and exit code."""
    return run_command(ctx, ShellCommand(script, shell, timeout_s), ctx.services.get(ShellSettings))
