"""Configuration errors: every problem of a file at once, each naming the file, table, key and fix.

Validation errors go through :mod:`codeward.kernel.validation_messages`, the describer tool-argument
errors use, and are located the way they are written: ``[mcp.servers.fs] timeout``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from codeward.kernel.validation_messages import Problem, problems


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file, key and fix."""


def config_error(source: str, lines: Sequence[str]) -> ConfigError:
    """One error for a file's problems (``N problems:`` and a list when there are several)."""
    if len(lines) == 1:
        return ConfigError(f"{source}: {lines[0]}")
    return ConfigError(f"{source}: {len(lines)} problems:\n" + "\n".join(f"  - {line}" for line in lines))


def describe(exc: ValidationError, model: type[BaseModel], raw: Any, source: str,
             env_names: Mapping[tuple[str, ...], str] | None = None, *, json: bool = False) -> ConfigError:
    """A :class:`ConfigError` for ``exc``, raised validating ``raw`` (from ``source``) as ``model``.

    ``env_names`` maps a key path to the environment variable it came from, so a bad value from
    the environment names the variable rather than a table; ``json`` names servers the way an
    ``mcpServers`` document writes them.
    """
    return config_error(source, describe_lines(exc, model, raw, env_names, json=json))


def describe_lines(exc: ValidationError, model: type[BaseModel], raw: Any,
                   env_names: Mapping[tuple[str, ...], str] | None = None, *, json: bool = False) -> list[str]:
    """One line per problem, each naming its table and key."""
    return [_line(problem, raw, env_names or {}, json) for problem in problems(exc, model, _config_keys)]


def display_path(path: Path, cwd: Path | None = None) -> str:
    """A path as a person finds it: relative to the working directory when inside it."""
    here = cwd or Path.cwd()
    try:
        return str(path.relative_to(here))
    except ValueError:
        home = Path.home()
        return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _config_keys(model: type[BaseModel]) -> tuple[str, ...]:
    keys = getattr(model, "config_keys", None)
    return tuple(keys()) if callable(keys) else tuple(model.model_fields)


def _line(problem: Problem, raw: Any, env_names: Mapping[tuple[str, ...], str], json: bool) -> str:
    names = _written(problem.loc, raw)
    variable = env_names.get(tuple(str(n) for n in names))
    if variable is not None:
        return f"environment variable {variable} {problem.fix()}; fix or unset it"
    if problem.kind == "unknown":
        return _unknown(problem, names, raw, json)
    table, key = _split(names, raw)
    where = f"[{'.'.join(table)}] " if table else ""
    if json and table[:2] == ["mcp", "servers"] and len(table) > 2:
        where = f'mcpServers["{table[2]}"] '
    elif json and table == ["mcp"] and key.startswith("servers"):
        where, key = "", key.replace("servers", "mcpServers", 1)
    if not key:
        fix = problem.fix()
        if isinstance(problem.given, Mapping):
            fix = fix.rsplit(" (got ", 1)[0]
        return f"{where}{fix}".strip()
    fix = problem.fix()
    if problem.kind == "invalid" and not _written_in(names, raw):  # a value taken from the table's name
        return f"{where}{fix}"
    if problem.kind == "missing":
        fix += f"; add {key} = ... to the table"
    return f"{where}{key} {fix}"


def _unknown(problem: Problem, names: Sequence[str | int], raw: Any, json: bool) -> str:
    """``[table] unknown key 'x': did you mean 'y'?``, or for a whole table, ``unknown table [x]``."""
    parents = [str(n) for n in names[:-1]]
    fix = problem.fix().removeprefix("is not known; ")
    if isinstance(_child_at(names, raw), Mapping):
        suggestion = problem.suggestion
        hint = f"did you mean [{'.'.join([*parents, suggestion])}]?" if suggestion else fix
        return f"unknown table [{'.'.join(str(n) for n in names)}]: {hint}"
    where = f"[{'.'.join(parents)}] " if parents else ""
    if json and parents[:2] == ["mcp", "servers"] and len(parents) > 2:
        where = f'mcpServers["{parents[2]}"] '
    return f"{where}unknown key {str(problem.name)!r}: {fix}"


def _child_at(names: Sequence[str | int], raw: Any) -> Any:
    node = raw
    for part in names:
        node = _child(node, part)
    return node


def _written_in(names: Sequence[str | int], raw: Any) -> bool:
    """Whether the file itself has a value at this location (not one derived from a table's name)."""
    node = raw
    for part in names:
        present = (isinstance(node, Mapping) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
        if not present:
            return False
        node = _child(node, part)
    return True


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, Mapping):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _written(loc: Sequence[str | int], raw: Any) -> list[str | int]:
    """The location with list positions of keyed tables (``[mcp.servers.x]``) given back their keys."""
    names: list[str | int] = []
    node = raw
    for part in loc:
        if isinstance(part, int) and isinstance(node, Mapping):
            keys = list(node)
            if 0 <= part < len(keys):
                names.append(str(keys[part]))
                node = node[keys[part]]
                continue
        names.append(part)
        node = _child(node, part)
    return names


def _split(names: Sequence[str | int], raw: Any) -> tuple[list[str], str]:
    """``[table.sub]`` and ``key`` of a location: tables are the names whose value is a table."""
    table: list[str] = []
    node = raw
    for index, part in enumerate(names):
        value = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(value, Mapping) and index < len(names) - 1:
            table.append(str(part))
            node = value
            continue
        if index == len(names) - 1 and isinstance(value, Mapping):
            table.append(str(part))
            return table, ""
        rest = [str(part), *(f"[{p}]" if isinstance(p, int) else f".{p}" for p in names[index + 1:])]
        return table, "".join(rest)
    return table, ""
