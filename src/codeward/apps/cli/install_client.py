"""``codeward install-client``: write (or print) an MCP client's config entry for codeward.

Stdio entries start this very installation by absolute path, serving the project root(s); HTTP
entries name the URL and carry the ``Authorization`` header with the token saved for that port
(``serve --http`` on that port requires it): in the client's secret store (VS Code), as an
environment variable the client expands (Claude Code's and Cursor's project files), or in a file
of the user's own made 0600. Running it twice changes nothing the second time.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

from codeward.apps.cli.args import UsageError
from codeward.apps.client_setup.clients import (
    CLIENTS,
    Client,
    ClientSetupError,
    HttpEntry,
    StdioEntry,
    Target,
    TokenPlacement,
    client_named,
    render,
    target,
    token_placement,
)
from codeward.kernel.user_dirs import data_home


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "install-client", help="add codeward to Claude Code, Claude Desktop, Cursor or VS Code",
        description="Write codeward's entry into an MCP client's config file (other servers, keys and comments are "
        "kept; a changed file is first copied to codeward's data folder, backups/), or print it. Stdio entries start "
        "this installation by absolute path; --http entries point at `codeward serve --http` with the token saved "
        "for its port, which never lands in a project's file.")
    parser.add_argument("client", choices=list(CLIENTS), help="the MCP client to configure")
    parser.add_argument("--scope", help="where the entry goes: claude-code local (default), project (.mcp.json) "
                        "or user; cursor and vscode project (default) or user; claude-desktop user")
    parser.add_argument("--root", action="append", metavar="DIR",
                        help="project root the server serves (repeatable; default: the current directory)")
    parser.add_argument("--name", default="codeward", help="the server's name in the client (default codeward)")
    parser.add_argument("--print", action="store_true", dest="print_only",
                        help="print the entry as the client's JSON instead of writing any file")
    http = parser.add_argument_group("HTTP (a running `codeward serve --http`)")
    http.add_argument("--http", action="store_true", help="connect to codeward over streamable HTTP")
    http.add_argument("--host", default="127.0.0.1", help="the server's address (default 127.0.0.1)")
    http.add_argument("--port", type=int, default=8765, help="the server's port (default 8765)")
    http.add_argument("--token-env", metavar="VAR", help="the token is $VAR's value, as the server will get with "
                      "--token-env VAR (default: a token saved for this port, which `serve --http` then requires)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from codeward.apps.client_setup.config_file import install_entry
    from codeward.apps.client_setup.launch import ephemeral_environment

    client = client_named(args.client)
    roots = _roots(args.root)
    try:
        where = target(client, args.scope, roots[0])
        if args.http:
            render(client, HttpEntry(""))  # a client without HTTP is refused before a token is made
        planned = _entry(args, roots, client, where)
        rendered = render(client, planned.entry)
    except ClientSetupError as exc:
        raise UsageError(str(exc)) from None
    if not args.http and ephemeral_environment():
        print("note: this codeward runs from uvx's cache, which `uv cache clean` removes; for a lasting entry, "
              "install it (`pipx install ...` or `uv tool install ...`) and run install-client from there",
              file=sys.stderr)
    changes = [((*where.servers_at, args.name), rendered), *planned.changes(where.path)]
    if args.print_only:
        _save(args.port, planned.new_token)
        print(json.dumps(_document(changes), indent=2))
        if client.name == "claude-code":
            print(f"# the same with Claude Code's own command:\n{_claude_mcp_add(args, where.servers_at, rendered)}",
                  file=sys.stderr)
        _print_secret_steps(planned, args)
        return 0
    private = args.http and not where.shared and client.name != "vscode"  # the file holds the token itself
    done = install_entry(where.path, changes, backups=data_home() / "backups", private=private)
    _save(args.port, planned.new_token)
    label = f"{client.title}: {where.path}"
    if done.tightened:
        print(f"{label}: made readable by you only (mode 0600): it holds the server's token")
    if done.status == "unchanged":
        print(f"{label}: already up to date (server {args.name!r})")
        return 0
    print(f"{label}: {'added' if done.status == 'created' else 'updated'} server {args.name!r}"
          + (f" (previous file saved as {done.backup})" if done.backup else ""))
    print(f"  {client.after}")
    if planned.serve_line:
        print(f"  start the server it connects to: {planned.serve_line}")
    _print_secret_steps(planned, args)
    return 0


class _Planned:
    """The entry to write, and for HTTP what goes with its token: VS Code inputs, a variable to export, the
    command that starts the server it expects, a new token to save once the entry is written."""

    def __init__(self, entry: Any, serve_line: str = "", new_token: str | None = None,
                 placement: TokenPlacement | None = None, token_source: str = "") -> None:
        self.entry, self.serve_line, self.new_token = entry, serve_line, new_token
        self.placement, self.token_source = placement, token_source

    def changes(self, path: Path) -> list[tuple[tuple[str, ...], Any]]:
        """VS Code's ``inputs`` with this entry's input added (the others kept)."""
        if self.placement is None or not self.placement.inputs:
            return []
        from codeward.apps.client_setup.jsonc import JsoncError, parse

        inputs: list[Any] = []
        if path.is_file():
            try:
                found = parse(path.read_text(encoding="utf-8-sig")).value.get("inputs", [])
            except (JsoncError, OSError, UnicodeDecodeError):
                found = []  # install_entry refuses the file with the reason
            inputs = list(found) if isinstance(found, list) else []
        known = {item.get("id") for item in inputs if isinstance(item, dict)}
        added = [item for item in self.placement.inputs if item["id"] not in known]
        return [(("inputs",), [*inputs, *added])] if added else []


def _print_secret_steps(planned: _Planned, args: argparse.Namespace) -> None:
    """What the person does so the client finds the token the entry refers to."""
    placement = planned.placement
    if placement is None:
        return
    if placement.inputs:
        print(f"  VS Code asks for the token the first time it starts {args.name!r} and keeps it in its secret "
              f"storage: paste the output of `{planned.token_source}`")
    elif placement.variable is not None:
        print(f"  the entry reads the token from ${placement.variable} (the file holds no secret): set it where "
              f"the client starts, e.g. in ~/.profile: export {placement.variable}=\"$({planned.token_source})\"")


def _roots(given: list[str] | None) -> list[Path]:
    roots = [Path(raw).expanduser().absolute() for raw in (given or [os.getcwd()])]
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"--root {root}: not a directory; give the project folder the server should serve")
    return roots


def _entry(args: argparse.Namespace, roots: list[Path], client: Client, where: Target) -> _Planned:
    """The entry to write; for HTTP, where its token lives, the command that starts the server it expects
    and a token to save once the entry is written (None: the saved one or ``--token-env``'s is used)."""
    from codeward.apps.client_setup.launch import installed_command

    launch = installed_command()
    config = getattr(args, "config", None)
    if config and not Path(config).expanduser().is_file():
        raise UsageError(f"--config {config}: no such file; the entry would start a server that cannot read it")
    config_args = ["--config", str(Path(config).expanduser().absolute())] if config else []
    serve_args = [*config_args, "serve", *(str(root) for root in roots)]
    if not args.http:
        return _Planned(StdioEntry(launch.command, (*launch.prefix, *serve_args)))
    import shlex

    from codeward.serving.transport.http_token import is_loopback, saved_token, saved_token_file, token_path

    if not is_loopback(args.host):
        raise UsageError(f"--host {args.host}: install-client configures a server on this machine's loopback "
                         "(127.0.0.1); for a remote server, give its URL and token to the client by hand")
    if args.token_env:
        token = os.environ.get(args.token_env)
        if not token:
            raise UsageError(f"--token-env {args.token_env}: that environment variable is empty or unset; export "
                             "the token the server will use, or drop --token-env to have one saved for you")
        auth, new_token, variable = ["--token-env", args.token_env], None, args.token_env
        source = f"printenv {args.token_env}"
    else:
        saved = saved_token(args.port)
        token = saved or secrets.token_urlsafe(32)
        auth, new_token = [], None if saved else token
        variable = "CODEWARD_TOKEN" if args.port == 8765 else f"CODEWARD_TOKEN_{args.port}"
        source = f"cat {shlex.quote(str(saved_token_file(args.port) or token_path(args.port)))}"
    placement = token_placement(client, where, args.name, token, variable)
    host = f"[{args.host}]" if ":" in args.host else args.host
    entry = HttpEntry(f"http://{host}:{args.port}/mcp", {"Authorization": placement.authorization})
    serve = launch.shell(*serve_args, "--http", "--port", str(args.port), *auth)
    return _Planned(entry, serve, new_token, placement, source)


def _save(port: int, token: str | None) -> None:
    """Keep a new token for ``port``, where ``serve --http`` on that port finds and requires it."""
    if token is not None:
        from codeward.serving.transport.http_token import token_path, write_token_file

        write_token_file(token_path(port), token)


def _document(changes: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    """The members install-client would set, as one JSON document."""
    document: dict[str, Any] = {}
    for keys, value in changes:
        node = document
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return document


def _claude_mcp_add(args: argparse.Namespace, servers_at: tuple[str, ...], entry: dict[str, Any]) -> str:
    """``claude mcp add`` with the scope and entry install-client would write (options before the name)."""
    import shlex

    scope = "local" if servers_at[0] == "projects" else "project" if args.scope == "project" else "user"
    scoped = [] if scope == "local" else ["--scope", scope]
    if entry.get("type") == "http":
        headers = [word for key, value in entry.get("headers", {}).items() for word in ("--header", f"{key}: {value}")]
        return shlex.join(["claude", "mcp", "add", "--transport", "http", *scoped, args.name, entry["url"], *headers])
    return shlex.join(["claude", "mcp", "add", *scoped, args.name, "--", entry["command"], *entry["args"]])
