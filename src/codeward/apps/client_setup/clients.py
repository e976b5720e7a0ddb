"""Where each MCP client keeps its servers, and how it spells one entry.

- Claude Code — scopes local (default), project, user: ``~/.claude.json`` under
  ``projects.<root>.mcpServers`` (local) or ``mcpServers`` (user); ``<root>/.mcp.json`` (project).
- Claude Desktop — user: ``claude_desktop_config.json`` in ``~/Library/Application Support/Claude``
  (macOS), ``%APPDATA%\\Claude`` (Windows), ``$XDG_CONFIG_HOME/Claude`` (Linux builds); ``mcpServers``.
- Cursor — project (default), user: ``<root>/.cursor/mcp.json``, ``~/.cursor/mcp.json``; ``mcpServers``.
- VS Code — project (default), user: ``<root>/.vscode/mcp.json``, the profile's ``Code/User/mcp.json``;
  ``servers``, each with a ``type``.

Claude Code's scopes are ``claude mcp add --scope``'s; its ``CLAUDE_CONFIG_DIR`` moves
``.claude.json`` as it does for Claude Code itself. Claude Desktop's file starts local servers only
(remote ones are added as connectors in its settings), so HTTP is refused for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ClientSetupError(ValueError):
    """A request no client configuration can honour; the message says what to do instead."""


@dataclass(frozen=True)
class StdioEntry:
    """A server the client starts itself: an absolute command, its arguments and extra environment."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HttpEntry:
    """A running streamable-HTTP server: its URL and the headers every request carries."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


Entry = StdioEntry | HttpEntry


@dataclass(frozen=True)
class Target:
    """One config file and where in it the servers live (``("projects", "/p", "mcpServers")``)."""

    path: Path
    servers_at: tuple[str, ...]
    shared: bool
    """The file sits in the project, where it may be committed (a token there is worth a warning)."""


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    scopes: tuple[str, ...]
    servers_key: str
    http: bool
    after: str
    """What the person does next for the client to pick the change up."""

    @property
    def default_scope(self) -> str:
        return self.scopes[0]


CLIENTS: dict[str, Client] = {
    "claude-code": Client("claude-code", "Claude Code", ("local", "project", "user"), "mcpServers", True,
                          "Claude Code picks it up in its next session (`claude mcp list` shows it)."),
    "claude-desktop": Client("claude-desktop", "Claude Desktop", ("user",), "mcpServers", False,
                             "Quit and reopen Claude Desktop to load it."),
    "cursor": Client("cursor", "Cursor", ("project", "user"), "mcpServers", True,
                     "Cursor lists it under Settings > MCP; switch it on there if it is off."),
    "vscode": Client("vscode", "VS Code", ("project", "user"), "servers", True,
                     "VS Code offers to start it from the file (or run 'MCP: List Servers')."),
}


def client_named(name: str) -> Client:
    try:
        return CLIENTS[name]
    except KeyError:
        raise ClientSetupError(f"unknown client {name!r}; choose one of {', '.join(CLIENTS)}") from None


def target(client: Client, scope: str | None, project: Path, environ: Mapping[str, str] | None = None,
           platform: str | None = None) -> Target:
    """The file (and the place in it) that ``client`` reads for ``scope`` (None: its default)."""
    env = os.environ if environ is None else environ
    system = platform if platform is not None else sys.platform
    chosen = scope or client.default_scope
    if chosen not in client.scopes:
        raise ClientSetupError(f"{client.title} has no {chosen!r} scope; choose one of {', '.join(client.scopes)}")
    home = _home(env)
    key = client.servers_key
    if client.name == "claude-code":
        if chosen == "project":
            return Target(project / ".mcp.json", (key,), True)
        state = Path(env["CLAUDE_CONFIG_DIR"]).expanduser() if env.get("CLAUDE_CONFIG_DIR") else home
        where = ("projects", str(project), key) if chosen == "local" else (key,)
        return Target(state / ".claude.json", where, False)
    if client.name == "claude-desktop":
        return Target(_app_config(env, home, system, "Claude") / "claude_desktop_config.json", (key,), False)
    if client.name == "cursor":
        base = project if chosen == "project" else home
        return Target(base / ".cursor" / "mcp.json", (key,), chosen == "project")
    if chosen == "project":
        return Target(project / ".vscode" / "mcp.json", (key,), True)
    return Target(_app_config(env, home, system, "Code") / "User" / "mcp.json", (key,), False)


def render(client: Client, entry: Entry) -> dict[str, Any]:
    """The entry as ``client`` spells it in its file."""
    if isinstance(entry, HttpEntry):
        if not client.http:
            raise ClientSetupError(f"{client.title}'s config file starts local servers only; drop --http (it then "
                                   "starts codeward itself over stdio) or add the URL as a custom connector in its "
                                   "settings")
        http: dict[str, Any] = {"url": entry.url}
        if client.name in ("claude-code", "vscode"):
            http = {"type": "http", **http}
        if entry.headers:
            http["headers"] = dict(entry.headers)
        return http
    stdio: dict[str, Any] = {"command": entry.command, "args": list(entry.args)}
    if client.name in ("claude-code", "vscode"):
        stdio = {"type": "stdio", **stdio}
    if entry.env:
        stdio["env"] = dict(entry.env)
    return stdio


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or env.get("USERPROFILE")
    return Path(home).expanduser() if home else Path.home()


def _app_config(env: Mapping[str, str], home: Path, system: str, app: str) -> Path:
    """An application's settings folder: macOS Application Support, Windows APPDATA, else XDG."""
    if system == "darwin":
        return home / "Library" / "Application Support" / app
    if system == "win32":
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming") / app
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / app
