"""``codeward gateway``: other MCP servers' tools (``alias__tool``) and the native ones, served as one.

:func:`run_gateway_cli` returns an exit code; configuration mistakes raise
:class:`codeward.config.ConfigError` (a ``ValueError``) whose message says what to fix.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.cli.args import (
    LOOPBACK,
    add_config_argument,
    add_control_arguments,
    add_http_arguments,
    add_meta_argument,
    control_options,
    exit_on_sigterm,
)
from codeward.cli.common import load_configs, with_urls

if TYPE_CHECKING:
    from codeward.config import Config
    from codeward.control.defaults import ControlOptions
    from codeward.gateway.config import GatewayConfig
    from codeward.gateway.policy import ConfirmCallback
    from codeward.transport.http_stack import HttpStack
    from codeward.transport.http_token import HttpAuth


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
    import contextlib

    from codeward.transport.http_token import HttpAuth, http_auth

    auth: contextlib.AbstractContextManager[HttpAuth] = (
        http_auth(host=args.host, port=args.port, token_env=args.token_env, no_auth=args.no_auth) if args.http
        else contextlib.nullcontext(HttpAuth(None)))
    if args.http:
        exit_on_sigterm()
    with auth as chosen:
        if chosen.notice:
            print(f"codeward gateway: {chosen.notice}", file=sys.stderr, flush=True)
        _print_connect(args, chosen)
        return run_gateway_cli(getattr(args, "config", None), "http" if args.http else "stdio", args.host,
                               args.port, token=chosen.token, roots=args.root or (), urls=args.url, yes=args.yes,
                               allow_remote=args.allow_remote, meta=args.meta, control=control_options(args))


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
) -> int:
    """Serve every configured upstream's tools (and the native ones, as ``[mcp] native`` says) over MCP.

    Calls not covered by ``auto_approve`` — upstream tools, and native tools that write or
    execute — are confirmed by the client's user through MCP elicitation; ``yes=True`` approves
    every call (for trusted, unattended setups only). ``meta=True`` lists only the four registry
    meta-tools, which find and run all the others. ``control`` serves the Hook API and console
    beside it (approvals there race the client's) and/or writes session logs.
    """
    import anyio

    from codeward.gateway.approval import confirm_with_client
    from codeward.gateway.policy import approve_everything

    config, gateway = load_configs(config_path)
    gateway = with_urls(gateway, urls)
    if transport not in ("stdio", "http"):
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")
    if transport == "http" and host not in LOOPBACK and (not allow_remote or not token):
        raise ValueError(f"binding to {host} exposes every upstream tool to the network; "
                         "pass allow_remote (--allow-remote) and a bearer token (--token-env VAR) to do it")
    confirm: ConfirmCallback = approve_everything if yes else confirm_with_client
    if transport != "http":
        anyio.run(_serve, config, gateway, transport, host, port, token, list(roots), confirm, meta, control)
        return 0
    from codeward.transport.http_stack import configured_http_stack

    runtime = configured_http_stack(config.server)
    runtime.run(_serve, config, gateway, transport, host, port, token, list(roots), confirm, meta, control, runtime)
    return 0


async def _serve(config: Config, gateway: GatewayConfig, transport: str, host: str, port: int, token: str | None,
                 roots: list[str | Path], confirm: ConfirmCallback, meta: bool = False,
                 control: ControlOptions | None = None, runtime: HttpStack | None = None) -> None:
    from codeward.cli.servers import print_summary
    from codeward.control.plane import control_plane
    from codeward.gateway.policy import approve_everything
    from codeward.stack import Approver, build_stack
    from codeward.state import open_state

    state = open_state(config.state) if transport == "http" else None
    audit = None
    if state is not None:
        from codeward.audit.setup import http_audit

        audit = http_audit(config, state, host, port)
    async with control_plane(control, "gateway") as plane:
        approvals = plane.approvals(confirm, notify=_note)
        if state is not None and state.shared and confirm is not approve_everything:  # answered on any replica
            from codeward.state.approvals import SharedApprovals

            approvals = SharedApprovals(state, approvals)
        observers = plane.middleware()
        if audit is not None:  # every call and decision, with its user
            approvals, observers = audit.approvals(approvals), [audit.middleware(), *observers]
        stack = build_stack(config, roots, gateway=gateway, upstreams=True, native=gateway.native, meta=meta,
                            approver=Approver(approvals), observers=observers,
                            pins=state.pins() if state is not None else None)
        if plane.state is not None and state is not None and state.shared:  # the console sees every replica
            import asyncio

            from codeward.control.replicas import ReplicaApprovals

            plane.state.replicas = ReplicaApprovals(state, audit.log if audit else None, asyncio.get_running_loop(),
                                                    stack.services.metrics)
        async with stack:
            upstream = stack.gateway
            assert upstream is not None  # with_urls made sure there is a server
            print_summary(upstream.statuses(), len(upstream.tool_infos()), sys.stderr)
            print(f"codeward gateway: {stack.listing_line()}", file=sys.stderr, flush=True)
            plane.watch_gateway(upstream, roots=[str(r) for r in stack.workspace.roots], transport=transport)
            plane.drive(workspace=stack.workspace)
            # the client's roots are the native tools' workspace: without native tools, nothing to ask it
            server = stack.server(name="codeward-gateway", roots_from_client=not stack.roots_given and
                                  transport != "http" and stack.native_tools)
            if transport == "http":
                assert runtime is not None
                print(f"codeward gateway: serving at http://{host}:{port}/mcp (http: {runtime.summary})",
                      file=sys.stderr, flush=True)
                await server.run_http(host=host, port=port, token=token, state=state,
                                      users=audit.users if audit is not None else None,
                                      audit=audit.log if audit is not None else None, http_stack=runtime)
            else:
                await server.run_stdio()


def _print_connect(args: argparse.Namespace, auth: HttpAuth) -> None:
    """How to connect a client: the exact ``claude mcp add`` line (over stdio, only on a terminal)."""
    from pathlib import Path

    from codeward.client_setup.banner import http_lines, stdio_lines
    from codeward.client_setup.launch import display_command, installed_command

    launch = display_command(installed_command())
    if args.http:
        url = f"http://{args.host}:{args.port}/mcp"
        lines = http_lines("codeward-gateway", url, launch, token_env=args.token_env, token_file=auth.token_file,
                           token=auth.token is not None,
                           install_args=[*(["--port", str(args.port)] if args.port != 8765 else []),
                                         *(["--token-env", args.token_env] if args.token_env else [])])
        print(f"codeward gateway: connect: {lines[0]}", file=sys.stderr, flush=True)
        return
    if not sys.stdin.isatty():
        return
    config = getattr(args, "config", None)
    words = ["gateway", *(["--config", str(Path(config).expanduser().absolute())] if config else []),
             *(word for root in args.root or () for word in ("--root", str(Path(root).expanduser().absolute()))),
             *(word for url in args.url for word in ("--url", url))]
    lines = stdio_lines("codeward-gateway", launch, words)
    print("codeward gateway: an MCP server over stdio; a client starts it. To connect one:\n"
          f"  {lines[0]}", file=sys.stderr, flush=True)


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
