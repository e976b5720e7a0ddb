"""``codeward install-client``: write (or print) an MCP client's config entry for codeward.

Stdio entries start this very installation by absolute path, serving the project root(s); HTTP
entries name the URL and carry the ``Authorization`` header with a token saved for that port
(``serve --http`` on that port then requires it). Running it twice changes nothing the second time.
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
    ClientSetupError,
    HttpEntry,
    StdioEntry,
    client_named,
    render,
    target,
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "install-client", help="add codeward to Claude Code, Claude Desktop, Cursor or VS Code",
        description="Write codeward's entry into an MCP client's config file (other servers and keys are kept; "
        "a changed file is backed up to FILE.bak-<timestamp>), or print it. Stdio entries start this "
        "installation by absolute path; --http entries point at `codeward serve --http` with its token.")
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
        entry, serve_line, new_token = _entry(args, roots)
        rendered = render(client, entry)
    except ClientSetupError as exc:
        raise UsageError(str(exc)) from None
    if not args.http and ephemeral_environment():
        print("note: this codeward runs from uvx's cache, which `uv cache clean` removes; for a lasting entry, "
              "install it (`pipx install ...` or `uv tool install ...`) and run install-client from there",
              file=sys.stderr)
    if args.print_only:
        _save(args.port, new_token)
        print(json.dumps(_document(where.servers_at, args.name, rendered), indent=2))
        if client.name == "claude-code":
            print(f"# the same with Claude Code's own command:\n{_claude_mcp_add(args, where.servers_at, rendered)}",
                  file=sys.stderr)
        return 0
    done = install_entry(where.path, where.servers_at, args.name, rendered, private=args.http)
    _save(args.port, new_token)
    label = f"{client.title}: {where.path}"
    if done.status == "unchanged":
        print(f"{label}: already up to date (server {args.name!r})")
        return 0
    print(f"{label}: {'added' if done.status == 'created' else 'updated'} server {args.name!r}"
          + (f" (backup: {done.backup})" if done.backup else ""))
    print(f"  {client.after}")
    if serve_line:
        print(f"  start the server it connects to: {serve_line}")
    if args.http and where.shared:
        print(f"  note: {where.path} now holds the server's token; keep it out of version control", file=sys.stderr)
    return 0


def _roots(given: list[str] | None) -> list[Path]:
    roots = [Path(raw).expanduser().absolute() for raw in (given or [os.getcwd()])]
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"--root {root}: not a directory; give the project folder the server should serve")
    return roots


def _entry(args: argparse.Namespace, roots: list[Path]) -> tuple[Any, str, str | None]:
    """The entry to write; for HTTP, the command that starts the server it expects and a token to save
    once the entry is written (None: the saved one or ``--token-env``'s is used)."""
    from codeward.apps.client_setup.launch import installed_command

    launch = installed_command()
    config = getattr(args, "config", None)
    if config and not Path(config).expanduser().is_file():
        raise UsageError(f"--config {config}: no such file; the entry would start a server that cannot read it")
    config_args = ["--config", str(Path(config).expanduser().absolute())] if config else []
    serve_args = [*config_args, "serve", *(str(root) for root in roots)]
    if not args.http:
        return StdioEntry(launch.command, (*launch.prefix, *serve_args)), "", None
    from codeward.serving.transport.http_token import is_loopback, saved_client_token

    if not is_loopback(args.host):
        raise UsageError(f"--host {args.host}: install-client configures a server on this machine's loopback "
                         "(127.0.0.1); for a remote server, give its URL and token to the client by hand")
    if args.token_env:
        token = os.environ.get(args.token_env)
        if not token:
            raise UsageError(f"--token-env {args.token_env}: that environment variable is empty or unset; export "
                             "the token the server will use, or drop --token-env to have one saved for you")
        auth, new_token = ["--token-env", args.token_env], None
    else:
        saved = saved_client_token(args.port)
        token = saved or secrets.token_urlsafe(32)
        auth, new_token = [], None if saved else token
    host = f"[{args.host}]" if ":" in args.host else args.host
    entry = HttpEntry(f"http://{host}:{args.port}/mcp", {"Authorization": f"Bearer {token}"})
    serve = launch.shell(*serve_args, "--http", "--port", str(args.port), *auth)
    return entry, serve, new_token


def _save(port: int, token: str | None) -> None:
    """Keep a new token for ``port``, where ``serve --http`` on that port finds and requires it."""
    if token is not None:
        from codeward.serving.transport.http_token import client_token_path, write_token_file

        write_token_file(client_token_path(port), token)


def _document(servers_at: tuple[str, ...], name: str, entry: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = {name: entry}
    for key in reversed(servers_at):
        document = {key: document}
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
