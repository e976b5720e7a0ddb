"""``[shell]``: how ``run_shell`` may run scripts.

The table is the operator's: unlike ``mcp_env.toml`` (which lives in the project, where an
agent can write), nothing in it can be changed by the scripts it governs. Every default is
the safe choice: sandboxed, no network, secrets hidden, no model asked.
"""

from __future__ import annotations

from pydantic import field_validator

from codeward.config.base import Bool, ConfigPath, Field, Int, Str, Strings, Table, code_only, defaults
from codeward.config.model import ModelSettings

HARD_MAX_TIMEOUT_S = 3600.0
"""No setting can allow a longer single script than this."""
_MINIMUMS = {"output_chars": 1000, "max_output_bytes": 10_000, "memory_mb": 64, "max_processes": 8,
             "max_processes_running": 1, "process_output_kb": 4}


class ShellSettings(Table):
    """Switches of the shell runner."""

    sandbox: Bool = True
    """Run scripts in the bwrap sandbox. ``false`` runs them as the server's user, with every
    result saying so."""
    network: Bool = False
    """Give sandboxed scripts the network (the unsandboxed mode always has it)."""
    hide_secrets: Bool = True
    """Cover files the workspace blacklists (``.env``, keys, ...) with empty stand-ins in the sandbox."""
    allow_secret_history: Bool = False
    """Show scripts a repository's object store even when its history holds a file the workspace
    keeps secret (``git show HEAD:.env`` then prints it). Off, such a store is hidden and the
    result says why."""
    pass_env: Strings = ()
    """Host environment variables passed into the sandbox (and usable in ``mcp_env.toml`` ``${VAR}``)."""
    ro_paths: tuple[ConfigPath, ...] = ()
    """Host directories made visible read-only in the sandbox (toolchains outside ``/usr``)."""
    max_timeout_s: float = Field(default=600.0, strict=True)
    """The longest a script may run, in seconds (at most 3600)."""
    output_chars: Int = 30_000
    """Characters of each stream shown; longer output keeps its start and end around a marker."""
    max_output_bytes: Int = 1_000_000
    """Bytes of each stream collected; a script printing 16 times more is killed."""
    memory_mb: Int = 4096
    """Memory of a sandboxed run, all its processes together."""
    max_processes: Int = 1024
    """Processes and threads of a sandboxed run."""
    max_processes_running: Int = 4
    """Long-running processes (``process_start``) one client may have at once."""
    process_output_kb: Int = 256
    """Output kept per long-running process (stdout and stderr together); older output is dropped."""
    process_lifetime_s: float = Field(default=3600.0, strict=True, gt=0)
    """The longest a long-running process may run, in seconds; then it is killed (its writes wait for
    ``process_stop``)."""
    process_idle_s: float = Field(default=900.0, strict=True, gt=0)
    """A long-running process nobody read, wrote to or heard from for this long is killed."""
    warm_box: Bool = True
    """Prepare the next script's sandbox ahead, after each run (one waiting box per server, the same
    binds, secrets, limits and disk cap; dropped after two idle minutes), so a script does not wait
    for its box to be built."""
    log: Bool = True
    """Append every run to ``.codeward/logs/shell.jsonl`` in the primary root."""
    qa_on_failure: Bool = False
    """When a script fails, ask the configured model to explain the error (``QA ANALYSIS``)."""
    qa_model: Str = ""
    """Model profile for the explanation; empty means ``[model] default`` or the OPENAI_* variables."""
    models: ModelSettings = code_only(defaults(ModelSettings), "is the [model] table, which the loader "
                                      "attaches; configure profiles under [model.profiles.NAME]")
    """The ``[model]`` table the QA step picks its profile from."""

    @field_validator("max_timeout_s")
    @classmethod
    def _timeout(cls, value: float) -> float:
        if not 0 < value <= HARD_MAX_TIMEOUT_S:
            raise ValueError(f"must be between 0 and {HARD_MAX_TIMEOUT_S:g} seconds")
        return value

    @field_validator(*_MINIMUMS)
    @classmethod
    def _at_least(cls, value: int, info: object) -> int:
        minimum = _MINIMUMS[getattr(info, "field_name", "")]
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value
