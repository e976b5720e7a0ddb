"""``codeward gateway``: other MCP servers' tools (``alias__tool``) and the native ones, served as one.

:func:`run_gateway_cli` returns an exit code; configuration mistakes raise
:class:`codeward.config.ConfigError` (a ``ValueError``) whose message says what to fix.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.apps.cli.args import (
    add_config_argument,
    add_control_arguments,
    add_http_arguments,
    add_meta_argument,
    control_options,
    exit_on_sigterm,
)
from codeward.apps.cli.common import load_configs, with_urls
from codeward.apps.cli.servers import print_summary
from codeward.serving.runtime import Serving, serve_mcp
from codeward.serving.transport.http_endpoint import LOOPBACK, HttpEndpoint

if TYPE_CHECKING:
    from codeward.apps.control.defaults import ControlOptions
    from codeward.serving.runtime import PlaneFactory, Started


def register(sub: Any) -> None:
    gateway = sub.add_parser("gateway", help="serve other MCP servers' tools (alias__tool) as one server",
                             description="Connect the MCP servers of [mcp.servers] in codeward.toml (or an "
                             "mcpServers JSON file) and serve their tools, namespaced alias__tool, over MCP.")
    add_config_argument(gateway)
    gateway.add_argument("--url", action="append", default=[], help="also connect this MCP server URL (repeatable)")
    add_http_arguments(gateway, 8766, what="every upstream tool")
    gateway.add_argument("--root", action="append", help="workspace root for native tools (repeatable)")
    gateway.add_argument("--yes", action="store_true",
                         help="approve every call without asking (trusted, unattended setups only)")
    add_meta_argument(gateway)
    add_control_arguments(gateway)
    gateway.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.http:
        exit_on_sigterm()
    endpoint = HttpEndpoint(args.host, args.port, token_env=args.token_env, no_auth=args.no_auth) if args.http else None
    return run_gateway_cli(getattr(args, "config", None), "http" if args.http else "stdio", args.host, args.port,
                           endpoint=endpoint, roots=args.root or (), urls=args.url, yes=args.yes,
                           allow_remote=args.allow_remote, meta=args.meta, control=control_options(args),
                           announce=lambda started: _print_connect(args, started))


def run_gateway_cli(
    config_path: str | Path | None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8766,
    *,
    token: str | None = None,
    roots: Sequence[str | Path] = (),
    urls: Sequence[str] = (),
    yes: bool = False,
    allow_remote: bool = False,
    meta: bool = False,
    control: ControlOptions | None = None,
    endpoint: HttpEndpoint | None = None,
    announce: Callable[[Started], None] | None = None,
) -> int:
    """Serve every configured upstream's tools (and the native ones, as ``[mcp] native`` says) over MCP.

    Calls not covered by ``auto_approve`` — upstream tools, and native tools that write or
    execute — are confirmed by the client's user through MCP elicitation; ``yes=True`` approves
    every call (for trusted, unattended setups only). ``meta=True`` lists only the four registry
    meta-tools, which find and run all the others. ``control`` serves the Hook API and console
    beside it (approvals there race the client's) and/or writes session logs. Over HTTP, ``token``
    is the bearer token clients must send (None: no authentication); the command line passes its
    ``endpoint`` instead (``--token-env``, a generated token, ``--no-auth``).
    """
    from codeward.approval.askers import confirm_with_client
    from codeward.approval.policy import approve_everything

    config, gateway = load_configs(config_path)
    gateway = with_urls(gateway, urls)
    if transport not in ("stdio", "http"):
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")
    if transport == "http" and endpoint is None:
        endpoint = HttpEndpoint(host, port, token=token, chosen=True)
    if endpoint is not None and endpoint.host not in LOOPBACK and (
            not allow_remote or endpoint.no_auth or (endpoint.chosen and not endpoint.token)):
        raise ValueError(f"binding to {endpoint.host} exposes every upstream tool to the network; "
                         "pass allow_remote (--allow-remote) and a bearer token (--token-env VAR) to do it")
    serving = Serving("gateway", roots, gateway=gateway, upstreams=True, native=gateway.native, meta=meta,
                      confirm=approve_everything if yes else confirm_with_client, notify=_note,
                      http=endpoint if transport == "http" else None)
    serve_mcp(config, serving, plane=_plane(control), announce=announce or _summary)
    return 0


def _plane(control: ControlOptions | None) -> PlaneFactory:
    from codeward.apps.control.plane import control_plane

    return lambda: control_plane(control, "gateway")


def _summary(started: Started) -> None:
    """The upstream servers' state as the gateway starts answering (on stderr)."""
    upstream = started.stack.gateway
    assert upstream is not None  # with_urls made sure there is a server
    print_summary(upstream.statuses(), len(upstream.tool_infos()), sys.stderr)
    print(f"codeward gateway: {started.stack.listing_line()}", file=sys.stderr, flush=True)
    if started.serving.http is not None and started.http_stack is not None:
        from codeward.apps.client_setup.banner import http_stack_line

        stack_line = http_stack_line(started.http_stack.summary, started.http_stack.missing)
        print(f"codeward gateway: serving at {started.serving.http.url} ({stack_line})", file=sys.stderr, flush=True)


def _print_connect(args: argparse.Namespace, started: Started) -> None:
    """The gateway's start: its token notice, the upstreams' state, and how to connect a client (the exact
    ``claude mcp add`` line; over stdio only on a terminal)."""
    from codeward.apps.client_setup.banner import http_lines, stdio_lines
    from codeward.apps.client_setup.launch import display_command, installed_command

    auth = started.auth
    if auth is not None and auth.notice:
        print(f"codeward gateway: {auth.notice}", file=sys.stderr, flush=True)
    launch = display_command(installed_command())
    if started.serving.http is not None:
        assert auth is not None
        lines = http_lines("codeward-gateway", started.serving.http.url, launch, token_env=args.token_env,
                           token_file=auth.token_file, token=auth.token, install_args=[], project=Path.cwd())
        print(f"codeward gateway: connect: {lines[0]}", file=sys.stderr, flush=True)
    elif sys.stdin.isatty():
        config = getattr(args, "config", None)
        words = ["gateway", *(["--config", str(Path(config).expanduser().absolute())] if config else []),
                 *(word for root in args.root or () for word in ("--root", str(Path(root).expanduser().absolute()))),
                 *(word for url in args.url for word in ("--url", url))]
        lines = stdio_lines("codeward-gateway", launch, words, Path.cwd())
        print("codeward gateway: an MCP server over stdio; a client starts it. To connect one:\n"
              f"  {lines[0]}", file=sys.stderr, flush=True)
    _summary(started)  # the upstreams' state last: the line a reader of the banner waits for after connect


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
