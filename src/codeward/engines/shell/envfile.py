"""``mcp_env.toml``: the project's environment for shell scripts (the seed's format).

::

    [path]
    prepend = ["tools/bin", "${HOME}/.local/bin"]   # put first on PATH (relative: to the root)

    [env]
    MY_VAR = "some_value"
    EXPANDED = "${HOME}/subdir"                       # ${VAR}: the script's environment so far

``${VAR}`` is expanded against the environment the script will get (so, in the sandbox,
against the sandbox's minimal environment plus ``[shell] pass_env`` — a project file cannot
copy a host secret into a script), then against the ``[env]`` entries above it.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from codeward.config import expand_env
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access, Workspace

ENV_FILE_NAME = "mcp_env.toml"
MAX_ENV_FILE_BYTES = 256_000
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FORMAT_HINT = ('Write it as: [path] prepend = ["dir", ...] and [env] NAME = "value" '
               "(values may use ${VAR}).")


@dataclass(frozen=True)
class EnvFile:
    """What ``mcp_env.toml`` asks for; empty when the project has none."""

    prepend: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    found: bool = False


def load_env_file(workspace: Workspace) -> Result[EnvFile]:
    """Read ``mcp_env.toml`` from the primary root (through the workspace gate); none is fine."""
    resolved = workspace.resolve(ENV_FILE_NAME, Access.READ)
    if not resolved.ok:
        return resolved.cast(EnvFile())
    path = resolved.data
    if not path.exists():
        return Result.success(EnvFile())
    if not path.is_file():
        return _bad(f"{ENV_FILE_NAME} is not a file", "Remove it or make it a TOML file.")
    if path.stat().st_size > MAX_ENV_FILE_BYTES:
        return _bad(f"{ENV_FILE_NAME} is larger than {MAX_ENV_FILE_BYTES} bytes", FORMAT_HINT)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return _bad(f"{ENV_FILE_NAME} is not UTF-8 text", "Save it as UTF-8.")
    except tomllib.TOMLDecodeError as exc:
        return _bad(f"{ENV_FILE_NAME} is not valid TOML: {exc}", f"Fix the syntax there. {FORMAT_HINT}")
    return parse_env_file(data)


def parse_env_file(data: Mapping[str, object]) -> Result[EnvFile]:
    """Check the parsed tables; every problem names the key and the expected form."""
    unknown = sorted(set(data) - {"path", "env"})
    if unknown:
        return _bad(f"{ENV_FILE_NAME} has unknown tables or keys {unknown}; only [path] and [env] are read",
                    FORMAT_HINT)
    path_table = data.get("path", {})
    if not isinstance(path_table, dict):
        return _bad(f"{ENV_FILE_NAME}: [path] must be a table", FORMAT_HINT)
    extra = sorted(set(path_table) - {"prepend"})
    if extra:
        return _bad(f"{ENV_FILE_NAME}: [path] has unknown keys {extra}; only prepend is read", FORMAT_HINT)
    prepend = path_table.get("prepend", [])
    if not isinstance(prepend, list) or not all(isinstance(p, str) and p for p in prepend):
        return _bad(f"{ENV_FILE_NAME}: [path] prepend must be a list of non-empty strings, got {prepend!r}",
                    FORMAT_HINT)
    env_table = data.get("env", {})
    if not isinstance(env_table, dict):
        return _bad(f"{ENV_FILE_NAME}: [env] must be a table", FORMAT_HINT)
    pairs: list[tuple[str, str]] = []
    for name, value in env_table.items():
        if not VARIABLE_NAME.match(name):
            return _bad(f"{ENV_FILE_NAME}: [env] {name!r} is not a valid variable name",
                        "Use letters, digits and underscores, not starting with a digit.")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str) or "\0" in value:
            return _bad(f"{ENV_FILE_NAME}: [env] {name} must be a string, got {value!r}", FORMAT_HINT)
        pairs.append((name, value))
    return Result.success(EnvFile(tuple(prepend), tuple(pairs), True))


def build_environment(base: Mapping[str, str], env_file: EnvFile, root: Path) -> dict[str, str]:
    """``base`` with the file's PATH entries first and its ``[env]`` set, ``${VAR}`` expanded."""
    env = dict(base)
    entries = [_absolute(expand_env(entry, env), root) for entry in env_file.prepend]
    if entries:
        env["PATH"] = os.pathsep.join([*entries, *([env["PATH"]] if env.get("PATH") else [])])
    for name, value in env_file.env:
        env[name] = expand_env(value, env)
    return env


def prepended_dirs(env_file: EnvFile, base: Mapping[str, str], root: Path) -> list[str]:
    """The PATH entries the file adds, as absolute paths."""
    return [_absolute(expand_env(entry, base), root) for entry in env_file.prepend]


def _absolute(entry: str, root: Path) -> str:
    return entry if os.path.isabs(entry) else str(root / entry)


def _bad(message: str, hint: str) -> Result[EnvFile]:
    return Result.fail(ErrorKind.INVALID_INPUT, message, hint, data=EnvFile())
