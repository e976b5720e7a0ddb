"""The shell runner behind ``run_shell``: the seed's ``shell_runner`` made safe by default.

- :mod:`~codeward.engines.shell.settings` — ``[shell]`` in ``codeward.toml`` (:class:`ShellSettings`).
- :mod:`~codeward.engines.shell.envfile` — the project's ``mcp_env.toml`` (PATH entries, variables).
- :mod:`~codeward.engines.shell.host` — unsandboxed runs that still leave no process behind.
- :mod:`~codeward.engines.shell.qa` — asking the configured model to explain a failure.
- :mod:`~codeward.engines.shell.log` — one JSON line per run.
- :mod:`~codeward.engines.shell.runner` — the run itself (in a :mod:`~codeward.engines.contained` box) and its report.
"""

from codeward.engines.shell.runner import ShellCommand, run_command
from codeward.engines.shell.settings import ShellSettings

__all__ = ["ShellCommand", "ShellSettings", "run_command"]
