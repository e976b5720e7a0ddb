"""What ``serve`` and ``gateway`` print so a person can connect a client with one paste.

Every line offered works as printed: the ``claude mcp add`` line only when Claude Code has no entry
of that name for the project yet (``claude mcp add`` refuses a name that exists — the one
``install-client`` wrote a step earlier, say); the ``install-client`` pointer names only the
clients that can take the transport (Claude Desktop's file starts local servers only); an HTTP
line's header reads the token saved for the port, which lasts across restarts.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codeward.apps.client_setup.clients import CLIENTS, target
from codeward.apps.client_setup.installation import current_installation
from codeward.apps.client_setup.jsonc import JsoncError, parse
from codeward.apps.client_setup.launch import LaunchCommand


def install_pointer(http: bool) -> str:
    """``install-client a|b|c`` over the clients that can be configured for this transport."""
    return f"install-client {'|'.join(name for name, client in CLIENTS.items() if client.http or not http)}"


def stdio_lines(name: str, launch: LaunchCommand, args: list[str], project: Path,
                environ: Mapping[str, str] | None = None) -> list[str]:
    """``claude mcp add`` with the exact command (or what Claude Code already has), and the ``install-client``
    pointer."""
    wanted = {"command": launch.command, "args": [*launch.prefix, *args]}
    claude = _claude_code_line(name, project, wanted, f"claude mcp add {name} -- {launch.shell(*args)}",
                               f"{launch.shell()} install-client claude-code", environ)
    return [claude, f"or write a client's config: {launch.shell()} {install_pointer(http=False)}"]


def http_lines(name: str, url: str, launch: LaunchCommand, *, token_env: str | None, token_file: Path | None,
               token: str | None, install_args: list[str], project: Path,
               environ: Mapping[str, str] | None = None) -> list[str]:
    """``claude mcp add --transport http`` with the Authorization header a shell fills in (or what Claude
    Code already has), and the ``install-client`` pointer (the entries it writes carry the same token)."""
    header = ""
    if token and token_env:
        header = f' --header "Authorization: Bearer ${token_env}"'
    elif token and token_file is not None:
        header = f' --header "Authorization: Bearer $(cat {shlex.quote(str(token_file))})"'
    install = f"{launch.shell()} install-client claude-code --http {shlex.join(install_args)}".rstrip()
    wanted = {"url": url, **({"headers": {"Authorization": f"Bearer {token}"}} if token else {})}
    claude = _claude_code_line(name, project, wanted, f"claude mcp add --transport http {name} {url}{header}",
                               install, environ)
    pointer = f"{launch.shell()} {install_pointer(http=True)} --http {shlex.join(install_args)}".rstrip()
    return [claude, f"or write a client's config (same token): {pointer}"]


def _claude_code_line(name: str, project: Path, wanted: dict[str, Any], add_line: str, install: str,
                      environ: Mapping[str, str] | None) -> str:
    """``add_line``, unless Claude Code already has ``name`` for ``project``: then whether it is this server."""
    found = claude_code_entry(name, project, environ)
    if found is None:
        return add_line
    where, entry = found
    env = os.environ if environ is None else environ
    if all(_expanded(entry.get(key), env) == value for key, value in wanted.items()):
        return f"Claude Code: server {name!r} in {where} already starts this one"
    return f"Claude Code: server {name!r} in {where} is another one; `{install}` updates it"


def _expanded(value: Any, env: Mapping[str, str]) -> Any:
    """``value`` with Claude Code's ``${VAR}`` references filled in from ``env``, as Claude Code reads it."""
    if isinstance(value, str):
        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {key: _expanded(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_expanded(item, env) for item in value]
    return value


def claude_code_entry(name: str, project: Path, environ: Mapping[str, str] | None = None
                      ) -> tuple[Path, dict[str, Any]] | None:
    """The entry Claude Code would use for ``name`` in ``project`` (local, then project, then user scope)."""
    env = os.environ if environ is None else environ
    client = CLIENTS["claude-code"]
    for scope in client.scopes:
        where = target(client, scope, project, env)
        try:
            node: Any = parse(where.path.read_text(encoding="utf-8-sig")).value
        except (OSError, UnicodeDecodeError, JsoncError):
            continue
        for key in (*where.servers_at, name):
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            return where.path, node
    return None


def http_stack_line(summary: str, missing: tuple[str, ...]) -> str:
    """The banner's ``http:`` line: the stack in use, and how to add the fast one to this installation."""
    if not missing:
        return f"http: {summary}"
    return f"http: {summary}; to add it: {current_installation().add_extra('fast')}"
