"""Finding and reading configuration files.

* The project file: ``--config FILE``, else ``codeward.toml`` in the working directory or the
  nearest parent, searching no higher than the repository root (the directory holding
  ``.git``) or the home directory — as git and ruff find theirs.
* The user file: ``$XDG_CONFIG_HOME/codeward/config.toml`` (default ``~/.config/...``).

Either may be TOML or a Claude-Desktop ``{"mcpServers": {...}}`` JSON document, which reads
as the ``[mcp.servers]`` tables it describes; Manual Slop's ``mcp_config.json`` form,
``{"servers": [{"name", "command": [...], "env"}]}``, reads the same way. Manual Slop's ``[mcp]``
keys (``enabled``, ``blacklist``, ``allow_symlinks``) are read as codeward's, each with a notice
naming the key to write instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.config.base import Origin
from codeward.config.errors import ConfigError, display_path

CONFIG_NAME = "codeward.toml"
SEED_SERVERS_NAME = "mcp_config.json"
"""Manual Slop's file of servers, read beside ``codeward.toml`` (or where one would be) without ``--config``."""
USER_CONFIG_NAME = "config.toml"
REPOSITORY_MARKER = ".git"


@dataclass(frozen=True)
class ConfigFile:
    """One file's content, before validation."""

    path: Path
    data: Mapping[str, Any]
    origin: Origin
    """``project``/``user`` for TOML, ``json`` for an ``mcpServers`` document."""
    notices: tuple[str, ...] = ()
    """Seed keys read under codeward's names: what to write instead."""

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
    return _nearest(CONFIG_NAME, cwd)


def _nearest(name: str, cwd: Path | None) -> Path | None:
    """The nearest file called ``name`` from ``cwd`` up to the repository root (or the home folder), owner-checked."""
    start = (cwd or Path.cwd()).resolve()
    home = _home()
    for directory in (start, *start.parents):
        candidate = directory / name
        if candidate.is_file():
            _check_owner(candidate)
            return candidate
        if (directory / REPOSITORY_MARKER).exists() or directory == home:
            return None
    return None


def find_seed_servers(explicit: str | None, project: Path | None, cwd: Path | None = None) -> Path | None:
    """``mcp_config.json`` beside the project file, or (without one) the nearest up to the repository root;
    None with ``--config`` (that file says everything)."""
    if explicit:
        return None
    if project is not None:
        candidate = project.parent / SEED_SERVERS_NAME
        return candidate if candidate.is_file() else None
    return _nearest(SEED_SERVERS_NAME, cwd)


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
    import tomllib  # with the first file read: a run without one does not pay for the parser

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: invalid TOML: {exc}; fix the syntax there "
                          "(a JSON file should hold {\"mcpServers\": {...}})") from exc
    data, notices = seed_mcp_keys(data, label)
    return ConfigFile(path, data, origin, tuple(notices))


def mcp_servers_of(data: Any, label: str) -> Mapping[str, Any]:
    """The ``mcpServers`` object of a Claude-Desktop style document (or Manual Slop's ``servers`` list)."""
    if isinstance(data, Mapping) and "mcpServers" not in data and isinstance(data.get("servers"), list):
        return _seed_servers(data["servers"], label)
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise ConfigError(f'{label}: expected a JSON object with an "mcpServers" object, as in '
                          'claude_desktop_config.json (or a "servers" list, as in mcp_config.json); '
                          "codeward's own settings go in a codeward.toml")
    servers: Mapping[str, Any] = data["mcpServers"]
    return servers


def _seed_servers(entries: list[Any], label: str) -> dict[str, Any]:
    """Manual Slop's ``[{"name", "command": [program, *args] | "program", "env", "url"}]`` as ``mcpServers``."""
    servers: dict[str, Any] = {}
    for index, entry in enumerate(entries):
        where = f'{label}: "servers" entry {index + 1}'
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where} must be an object with a name and a command (or url)")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f'{where} needs a "name" string (it becomes the server\'s alias)')
        if name in servers:
            raise ConfigError(f'{where}: the name {name!r} is used twice; rename one of them')
        table = {k: v for k, v in entry.items() if k != "name"}
        command = table.get("command")
        if isinstance(command, list):
            if not command or not all(isinstance(part, str) for part in command):
                raise ConfigError(f'{where} ({name}): "command" must be a non-empty list of strings')
            table["command"], extra = command[0], command[1:]
            table["args"] = [*extra, *table.get("args", [])]
        servers[name] = table
    return servers


def seed_mcp_keys(data: dict[str, Any], label: str) -> tuple[dict[str, Any], list[str]]:
    """Manual Slop's ``[mcp] enabled / blacklist / allow_symlinks`` as codeward's keys, with a notice each.

    ``blacklist`` is ``[server] blacklist`` (added to it); ``enabled = false`` is ``[server]
    toolsets = []`` (no tools), ``true`` the default; ``allow_symlinks = false`` is what codeward
    always does, and ``true`` is refused: no setting lets a tool follow a link out of the roots.
    """
    mcp = data.get("mcp")
    if not isinstance(mcp, dict) or not {"enabled", "blacklist", "allow_symlinks"} & set(mcp):
        return data, []
    mcp = dict(mcp)
    given = data.get("server", {})
    if not isinstance(given, dict):
        raise ConfigError(f"{label}: [server] must be a table")
    server = dict(given)
    notices: list[str] = []
    if "blacklist" in mcp:
        globs = mcp.pop("blacklist")
        if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
            raise ConfigError(f"{label}: [mcp] blacklist must be a list of glob strings, e.g. [\"*.pem\", \".env\"]")
        own = server.get("blacklist", [])
        server["blacklist"] = [*own, *globs] if isinstance(own, list) else own
        notices.append(f"{label}: [mcp] blacklist is read as [server] blacklist (files no tool may read or write); "
                       "move it there")
    if "enabled" in mcp:
        enabled = mcp.pop("enabled")
        if not isinstance(enabled, bool):
            raise ConfigError(f"{label}: [mcp] enabled must be true or false, got {enabled!r}")
        if enabled:
            notices.append(f"{label}: [mcp] enabled = true is codeward's default (the toolsets of [server] toolsets "
                           "are served); remove it")
        elif "toolsets" in server:
            raise ConfigError(f"{label}: [mcp] enabled = false and [server] toolsets both say which tools are "
                              "served; keep [server] toolsets (an empty list serves none) and remove [mcp] enabled")
        else:
            server["toolsets"] = []
            notices.append(f"{label}: [mcp] enabled = false is read as [server] toolsets = [] (no tools are "
                           "served); write that instead")
    if "allow_symlinks" in mcp:
        allow = mcp.pop("allow_symlinks")
        if allow is not False:
            raise ConfigError(f"{label}: [mcp] allow_symlinks = {allow!r} is not possible in codeward: a symlink "
                              "leading out of the workspace roots is always refused. Add the directory it points "
                              "to as a root ([server] roots) and remove allow_symlinks")
        notices.append(f"{label}: [mcp] allow_symlinks = false is what codeward always does (links leading out of "
                       "the roots are refused); remove it")
    return {**data, "mcp": mcp, "server": server}, notices


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
