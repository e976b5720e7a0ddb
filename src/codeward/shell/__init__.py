"""The shell runner behind ``run_shell``: the seed's ``shell_runner`` made safe by default.

- :mod:`~codeward.shell.settings` — ``[shell]`` in ``codeward.toml`` (:class:`ShellSettings`).
- :mod:`~codeward.shell.envfile` — the project's ``mcp_env.toml`` (PATH entries, variables).
- :mod:`~codeward.shell.confine` — the workspace as sandbox binds, secrets and git hooks kept.
- :mod:`~codeward.shell.host` — unsandboxed runs that still leave no process behind.
- :mod:`~codeward.shell.qa` — asking the configured model to explain a failure.
- :mod:`~codeward.shell.log` — one JSON line per run.
- :mod:`~codeward.shell.runner` — the run itself and its report.
"""

from codeward.shell.runner import ShellCommand, run_command
from codeward.shell.settings import ShellSettings, shell_settings_of

__all__ = ["ShellCommand", "ShellSettings", "run_command", "shell_settings_of"]
