"""Loading the configuration: defaults, the user file, the project file, the environment.

Each layer is validated on its own (so an error names the file, or the variable, it is in)
and then laid over the one below, key by key: the project file wins over the user file, the
environment over both, and the command line over everything (the commands apply their flags).
Two exceptions: ``[server] blacklist`` globs add up across layers (a project cannot unprotect
what the user protects), and a ``[model.profiles.NAME]`` or ``[mcp.servers.ALIAS]`` table of
a higher layer replaces the lower one's table of that name whole.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from codeward.config.base import ADDITIVE, PROJECT_ONLY, Origin, defaults, expand_env, marked
from codeward.config.environment import BY_KEY, environment_tables
from codeward.config.errors import ConfigError, config_error, describe, describe_lines, display_path
from codeward.config.files import (
    ConfigFile,
    find_project_config,
    find_seed_servers,
    read_config_file,
    user_config_path,
)
from codeward.config.mcp import DEFAULT_PIN_FILE, GatewayConfig, ServerConfig, alias_for_url
from codeward.config.model import ModelConfigError
from codeward.config.root import Config

T = TypeVar("T", bound=BaseModel)


def load_config(explicit: str | None = None, cwd: Path | None = None, *,
                environ: Mapping[str, str] | None = None, user: bool = True,
                notify: Callable[[str], None] | None = None) -> Config:
    """The configuration in effect: defaults < user file < project file < environment.

    ``explicit`` is a ``--config`` path (TOML or ``mcpServers`` JSON); without it the nearest
    ``codeward.toml`` from ``cwd`` up to the repository root is used, if any. ``user=False``
    leaves the user file out. Notices about the seed's keys go to ``notify`` (default: stderr).
    """
    say = notify or _stderr
    env = os.environ if environ is None else environ
    here = (cwd or Path.cwd()).resolve()
    config = defaults(Config)
    user_path: Path | None = None
    if user:
        candidate = user_config_path(env)
        if candidate.is_file():
            user_path = candidate
            config = merge(config, validate_file(_read(candidate, "user", say)))
    project_path = find_project_config(explicit, here)
    if project_path is not None:
        config = merge(config, validate_file(_read(project_path, "project", say)))
    config = _with_seed_servers(config, find_seed_servers(explicit, project_path, here), say)
    config = merge(config, _environment_layer(env, here))
    return _finish(config, project_path, user_path, here, env)


def _with_seed_servers(config: Config, path: Path | None, say: Callable[[str], None]) -> Config:
    """``config`` plus the servers of a discovered ``mcp_config.json`` (a server ``codeward.toml`` defines
    under the same alias wins). A file that is not a servers file is named in a notice, never fatal: it may
    be another tool's."""
    if path is None:
        return config
    try:
        found = validate_file(read_config_file(path, "project")).mcp.servers
    except ConfigError as exc:
        say(f"[codeward] notice: {display_path(path)} was not read as MCP servers: {exc}")
        return config
    known = {server.alias for server in config.mcp.servers}
    added = tuple(server for server in found if server.alias not in known)
    if not added:
        return config
    return config.model_copy(update={"mcp": config.mcp.model_copy(update={"servers": (*config.mcp.servers, *added)})})


def _read(path: Path, origin: Origin, notify: Callable[[str], None]) -> ConfigFile:
    file = read_config_file(path, origin)
    for notice in file.notices:
        notify(f"[codeward] notice: {notice}")
    return file


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def defaults_with_environment(environ: Mapping[str, str] | None = None) -> Config:
    """The defaults with the environment's overrides: for a context built without a configuration."""
    env = os.environ if environ is None else environ
    here = Path.cwd()
    return _finish(merge(defaults(Config), _environment_layer(env, here)), None, None, here, env)


def validate_file(file: ConfigFile) -> Config:
    """One file as a :class:`Config` layer (only what it sets counts as set)."""
    config = validate_layer(Config, file.data, file.origin, file.path.parent, file.label)
    if file.origin == "user":
        _refuse_project_only(config, file)
    mcp = fold_servers(config.mcp, file.path.parent, file.label)
    return config.model_copy(update={"mcp": mcp}) if mcp is not config.mcp else config


def validate_layer(model: type[T], data: Mapping[str, Any], origin: Origin, base_dir: Path, label: str,
                   env_names: Mapping[tuple[str, ...], str] | None = None) -> T:
    """``data`` validated as ``model``; every problem at once in one :class:`ConfigError`."""
    try:
        return model.model_validate(data, context={"origin": origin, "base_dir": base_dir})
    except ValidationError as exc:
        raise describe(exc, model, data, label, env_names, json=origin == "json") from None


def fold_servers(mcp: GatewayConfig, base_dir: Path, label: str) -> GatewayConfig:
    """``urls`` and ``import`` of an ``[mcp]`` table turned into servers beside its own tables."""
    if not mcp.urls and not mcp.imports:
        return mcp
    servers = list(mcp.servers)
    problems: list[str] = []
    for url in mcp.urls:
        alias = alias_for_url(url, {s.alias for s in servers})
        try:
            servers.append(ServerConfig.model_validate({"url": url, "alias": alias}))
        except ValidationError as exc:
            problems.extend(f"[mcp] urls entry {url!r}: {line}" for line in describe_lines(exc, ServerConfig, {}))
    for name in mcp.imports:
        imported = (base_dir / Path(expand_env(name)).expanduser())
        try:
            if not imported.is_file():
                raise ConfigError(f"{display_path(imported)} does not exist; fix the path (relative to {label})")
            layer = validate_file(read_config_file(imported.resolve(), "project"))
        except ConfigError as exc:
            problems.append(f"[mcp] import {name!r}: {exc}")
            continue
        for server in layer.mcp.servers:
            if any(s.alias == server.alias for s in servers):
                problems.append(f"[mcp] import {name!r}: server {server.alias!r} is also defined here; "
                                "rename one of them")
            else:
                servers.append(server)
    if problems:
        raise config_error(label, problems)
    return mcp.model_copy(update={"servers": tuple(servers)})


def merge(low: T, high: T) -> T:
    """``high`` laid over ``low``: what ``high`` sets wins, tables merge key by key."""
    values: dict[str, Any] = {}
    for name, info in type(high).model_fields.items():
        below, above = getattr(low, name), getattr(high, name)
        if name not in high.model_fields_set:
            values[name] = below
        elif name not in low.model_fields_set:
            values[name] = above
        elif isinstance(above, BaseModel) and isinstance(below, BaseModel):
            values[name] = merge(below, above)
        elif marked(info, ADDITIVE) and isinstance(above, tuple) and isinstance(below, tuple):
            values[name] = tuple(dict.fromkeys((*below, *above)))
        elif isinstance(above, dict) and isinstance(below, dict):
            values[name] = {**below, **above}
        elif name == "servers" and isinstance(high, GatewayConfig):
            replaced = {s.alias for s in above}
            values[name] = (*(s for s in below if s.alias not in replaced), *above)
        else:
            values[name] = above
    merged = type(high).model_construct(_fields_set=low.model_fields_set | high.model_fields_set, **values)
    return merged


def _environment_layer(environ: Mapping[str, str], cwd: Path) -> Config:
    tables = environment_tables(environ)
    if not tables:
        return defaults(Config)
    return validate_layer(Config, tables, "environment", cwd, "environment", BY_KEY)


def _refuse_project_only(config: Config, file: ConfigFile) -> None:
    problems: list[str] = []
    for table_name in config.model_fields_set:
        table = getattr(config, table_name)
        if not isinstance(table, BaseModel):
            continue
        for key in table.model_fields_set:
            if marked(type(table).model_fields[key], PROJECT_ONLY):
                problems.append(f"[{table_name}] {key} belongs to a project: set it in the project's "
                                f"codeward.toml (or pass it on the command line), not in the user file")
    if problems:
        raise config_error(file.label, problems)


def _finish(config: Config, project: Path | None, user: Path | None, cwd: Path,
            environ: Mapping[str, str]) -> Config:
    """What the tables derive from each other once merged (the one conversion each needs)."""
    base = project.parent if project else cwd
    mcp = config.mcp.model_copy(update={
        "source": project,
        "pin_file": config.mcp.pin_file or (base / DEFAULT_PIN_FILE).resolve(),
    })
    shell = config.shell.model_copy(update={"models": config.model})
    coding = config.coding
    if coding.model is None:
        try:
            profile = config.model.resolve(coding.profile or None, environ)
        except ModelConfigError as exc:
            if coding.profile:
                where = display_path(project) if project else "configuration"
                raise ConfigError(f"{where}: [coding] profile {coding.profile!r}: {exc}") from None
        else:
            coding = coding.model_copy(update={"model": profile.model, "model_base_url": profile.base_url,
                                               "model_api_key": profile.api_key(environ)})
    finished = config.model_copy(update={"mcp": mcp, "shell": shell, "coding": coding})
    finished._path = project
    finished._user_path = user
    return finished
