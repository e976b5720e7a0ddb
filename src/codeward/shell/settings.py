"""How ``run_shell`` may run scripts: the ``[shell]`` table of ``codeward.toml``.

The settings travel in ``ToolContext.extras["shell_settings"]`` (see :func:`shell_settings_of`);
when absent, the safe defaults apply: sandboxed, no network, secrets hidden, no model asked.
The table is the operator's: unlike ``mcp_env.toml`` (which lives in the project, where an
agent can write), nothing in it can be changed by the scripts it governs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from codeward.config import Config, ConfigError, expand_env

EXTRAS_KEY = "shell_settings"
TABLE = "shell"
HARD_MAX_TIMEOUT_S = 3600.0
"""No setting can allow a longer single script than this."""


@dataclass(frozen=True)
class ShellSettings:
    """Switches of the shell runner; every default is the safe choice."""

    sandbox: bool = True
    """Run scripts in the bwrap sandbox. ``false`` runs them as the server's user, with every
    result saying so."""
    network: bool = False
    """Give sandboxed scripts the network (the unsandboxed mode always has it)."""
    hide_secrets: bool = True
    """Cover files the workspace blacklists (``.env``, keys, ...) with empty stand-ins in the sandbox."""
    pass_env: tuple[str, ...] = ()
    """Host environment variables passed into the sandbox (and usable in ``mcp_env.toml`` ``${VAR}``)."""
    ro_paths: tuple[str, ...] = ()
    """Host directories made visible read-only in the sandbox (toolchains outside ``/usr``)."""
    max_timeout_s: float = 600.0
    output_chars: int = 30_000
    """Characters of each stream shown; longer output keeps its start and end around a marker."""
    max_output_bytes: int = 1_000_000
    """Bytes of each stream collected; a script printing 16 times more is killed."""
    memory_mb: int = 4096
    """Memory of a sandboxed run, all its processes together."""
    max_processes: int = 1024
    """Processes and threads of a sandboxed run."""
    log: bool = True
    """Append every run to ``.codeward/logs/shell.jsonl`` in the primary root."""
    qa_on_failure: bool = False
    """When a script fails, ask the configured model to explain the error (``QA ANALYSIS``)."""
    qa_model: str = ""
    """Model profile for the explanation; empty means ``[model] default`` or the OPENAI_* variables."""
    model_config: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """The whole configuration, where the ``[model]`` profiles are read from (not a ``[shell]`` key)."""

    def __post_init__(self) -> None:
        if not 0 < self.max_timeout_s <= HARD_MAX_TIMEOUT_S:
            raise ValueError(f"max_timeout_s must be between 0 and {HARD_MAX_TIMEOUT_S:g}, got {self.max_timeout_s}")
        minimums = {"output_chars": 1000, "max_output_bytes": 10_000, "memory_mb": 64, "max_processes": 8}
        for name, minimum in minimums.items():
            if getattr(self, name) < minimum:
                raise ValueError(f"{name} must be at least {minimum}, got {getattr(self, name)}")


TABLE_KEYS = tuple(f.name for f in fields(ShellSettings) if f.name != "model_config")


def shell_settings_of(extras: Mapping[str, Any]) -> ShellSettings:
    """The settings a context carries, or the safe defaults."""
    value = extras.get(EXTRAS_KEY)
    return value if isinstance(value, ShellSettings) else ShellSettings()


def shell_settings_from_config(config: Config) -> ShellSettings:
    """``[shell]`` of a loaded configuration; raises :class:`ConfigError` naming a bad key."""
    where = f"{config.path.name if config.path else 'codeward.toml'}: [{TABLE}]"
    table = config.raw.get(TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - set(TABLE_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; known: {sorted(TABLE_KEYS)}")
    defaults = ShellSettings()
    values: dict[str, Any] = {}
    for key, value in table.items():
        values[key] = _checked(where, key, value, getattr(defaults, key))
    if "ro_paths" in values:
        values["ro_paths"] = tuple(str((config.base_dir / expand_env(p)).resolve()) for p in values["ro_paths"])
    try:
        return ShellSettings(**values, model_config=config.raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _checked(where: str, key: str, value: Any, default: Any) -> Any:
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} {key} must be a list of strings, got {value!r}")
        return tuple(value)
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise ConfigError(f"{where} {key} must be like {default!r}, got {value!r}")
    return float(value) if isinstance(default, float) else value


def host_variables(names: tuple[str, ...], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``pass_env`` variables that are set on the host."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in names if name in env}


def readable_dirs(paths: tuple[str, ...]) -> tuple[list[Path], list[str]]:
    """``ro_paths`` that exist (to bind), and a note for each that does not."""
    found: list[Path] = []
    notes: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.exists():
            found.append(path.resolve())
        else:
            notes.append(f"[shell] ro_paths entry {raw} does not exist; it was not made visible in the sandbox")
    return found, notes
