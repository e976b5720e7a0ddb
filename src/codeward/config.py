"""``codeward.toml``: roots, blacklist globs, enabled toolsets, output cap — read once, then immutable.

Found in the current directory, or given with ``--config``. Relative paths in the file are
relative to the file. Other parts of codeward read their own tables (``[mcp]``, ``[model]``,
...) from :attr:`Config.raw`.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeward.context import Settings

CONFIG_NAME = "codeward.toml"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file, key and fix."""


@dataclass(frozen=True)
class Config:
    path: Path | None = None
    roots: tuple[Path, ...] = ()
    blacklist: tuple[str, ...] = ()
    toolsets: tuple[str, ...] | None = None
    settings: Settings = field(default_factory=Settings)
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${VAR}`` with the environment's value (empty when unset)."""
    env = os.environ if environ is None else environ
    return _ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)


def find_config(explicit: str | None, cwd: Path | None = None) -> Path | None:
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {explicit!r} does not exist; check the --config path")
        return path.resolve()
    candidate = (cwd or Path.cwd()) / CONFIG_NAME
    return candidate.resolve() if candidate.is_file() else None


def load_config(explicit: str | None = None, cwd: Path | None = None) -> Config:
    """Read ``codeward.toml`` (or the given file); no file means defaults."""
    path = find_config(explicit, cwd)
    if path is None:
        return Config()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path.name}: invalid TOML: {exc}; fix the syntax at that line") from exc
    server = raw.get("server", {})
    if not isinstance(server, dict):
        raise ConfigError(f"{path.name}: [server] must be a table")
    roots = tuple((path.parent / expand_env(str(r))).resolve() for r in _list_of_str(server, "roots", path))
    blacklist = _list_of_str(server, "blacklist", path)
    toolsets_list = server.get("toolsets")
    toolsets = tuple(_list_of_str(server, "toolsets", path)) if toolsets_list is not None else None
    cap_tokens = server.get("output_cap_tokens", 25_000)
    if not isinstance(cap_tokens, int) or cap_tokens < 100:
        raise ConfigError(f"{path.name}: [server] output_cap_tokens must be an integer >= 100, got {cap_tokens!r}")
    settings = Settings(output_cap_chars=cap_tokens * 4)
    return Config(path, roots, tuple(blacklist), toolsets, settings, raw)


def _list_of_str(table: Mapping[str, Any], key: str, path: Path) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path.name}: [server] {key} must be a list of strings, got {value!r}")
    return list(value)
