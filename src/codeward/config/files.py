"""Finding and reading configuration files.

* The project file: ``--config FILE``, else ``codeward.toml`` in the working directory or the
  nearest parent, searching no higher than the repository root (the directory holding
  ``.git``) or the home directory — as git and ruff find theirs.
* The user file: ``$XDG_CONFIG_HOME/codeward/config.toml`` (default ``~/.config/...``).

Either may be TOML or a Claude-Desktop ``{"mcpServers": {...}}`` JSON document, which reads
as the ``[mcp.servers]`` tables it describes.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.config.base import Origin
from codeward.config.errors import ConfigError, display_path

CONFIG_NAME = "codeward.toml"
USER_CONFIG_NAME = "config.toml"
REPOSITORY_MARKER = ".git"


@dataclass(frozen=True)
class ConfigFile:
    """One file's content, before validation."""

    path: Path
    data: Mapping[str, Any]
    origin: Origin
    """``project``/``user`` for TOML, ``json`` for an ``mcpServers`` document."""

    @property
    def label(self) -> str:
        return display_path(self.path)


def find_project_config(explicit: str | None, cwd: Path | None = None) -> Path | None:
    """The project file: the one given, or the nearest ``codeward.toml`` up to the repository root."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {explicit!r} does not exist; check the --config path")
        return path.resolve()
    start = (cwd or Path.cwd()).resolve()
    home = _home()
    for directory in (start, *start.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            _check_owner(candidate)
            return candidate
        if (directory / REPOSITORY_MARKER).exists() or directory == home:
            return None
    return None


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user file is (whether or not it exists)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or ""
    root = Path(base).expanduser() if base and Path(base).expanduser().is_absolute() else _home() / ".config"
    return root / "codeward" / USER_CONFIG_NAME


def read_config_file(path: Path, origin: Origin) -> ConfigFile:
    """A file's TOML (or ``mcpServers`` JSON) content; a syntax error names the line and column."""
    label = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {label}: {exc}") from exc
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        return ConfigFile(path, {"mcp": {"servers": mcp_servers_of(_json(text, label), label)}}, "json")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: invalid TOML: {exc}; fix the syntax there "
                          "(a JSON file should hold {\"mcpServers\": {...}})") from exc
    return ConfigFile(path, data, origin)


def mcp_servers_of(data: Any, label: str) -> Mapping[str, Any]:
    """The ``mcpServers`` object of a Claude-Desktop style document."""
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise ConfigError(f'{label}: expected a JSON object with an "mcpServers" object, as in '
                          "claude_desktop_config.json; codeward's own settings go in a codeward.toml")
    servers: Mapping[str, Any] = data["mcpServers"]
    return servers


def _json(text: str, label: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{label}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc


def _home() -> Path:
    try:
        return Path.home().resolve()
    except (RuntimeError, KeyError):  # no HOME and no passwd entry
        return Path("/")


def _check_owner(path: Path) -> None:
    """A file found by searching upward must be the person's own (or root's), as git checks.

    Otherwise anyone who can write a parent directory (``/tmp``, a shared checkout) could
    configure the tools of everyone working below it.
    """
    if not hasattr(os, "getuid"):
        return
    owner = path.stat().st_uid
    if owner not in (os.getuid(), 0):
        raise ConfigError(f"{display_path(path)} belongs to another user (uid {owner}); codeward does not use "
                          "a configuration someone else can change. Pass --config with it to use it anyway, "
                          "or run from a directory below your own codeward.toml")
