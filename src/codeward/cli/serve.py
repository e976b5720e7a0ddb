"""``codeward serve``: the tools over MCP (stdio by default, streamable HTTP with ``--http``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from codeward import __version__
from codeward.cli.args import (
    LOOPBACK,
    UsageError,
    add_control_arguments,
    add_http_arguments,
    add_meta_argument,
    check_bind,
    control_options,
    exit_on_sigterm,
)
from codeward.cli.common import configs_of

if TYPE_CHECKING:
    from codeward.audit.setup import HttpAudit
    from codeward.client_setup.launch import LaunchCommand
    from codeward.config import Config
    from codeward.config.mcp import GatewayConfig
    from codeward.control.defaults import ControlOptions
    from codeward.control.plane import ControlPlane
    from codeward.stack import Stack
    from codeward.state.backend import StateBackend

APPROVAL_MODES = ("console", "none")


def register(sub: Any) -> None:
    serve = sub.add_parser("serve", help="serve the tools over MCP (stdio by default)",
                           description="Serve codeward's tools over MCP. Roots default to the client's MCP "
                           "roots, else the config's roots, else the current directory.")
    serve.add_argument("roots", nargs="*", help="directories the tools may access (the first is primary)")
    add_http_arguments(serve, 8765)
    add_meta_argument(serve)
    add_control_arguments(serve)
    serve.add_argument("--approvals", choices=APPROVAL_MODES, default="console",
                       help="with --control: 'console' (default) asks before codeward's writing and executing tools "
                       "run — the client's user by elicitation when it can, raced against the console, and the "
                       "console alone for clients that cannot ask; 'none' leaves confirmation to the client")
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from codeward.stack import build_stack

    config, gateway = configs_of(args)
    if args.http:
        check_bind(args.host, allow_remote=args.allow_remote, no_auth=args.no_auth)
    control = control_options(args)
    if args.approvals != "console" and not control.serve:
        raise UsageError("--approvals needs --control (the console is where calls are approved)")
    if control.serve or control.logs:
        return _run_controlled(args, control, config, gateway)
    state = audit = None
    if args.http:  # shared state and the audit (every call, with its user) of an HTTP server
        from codeward.audit.setup import http_audit
        from codeward.state import open_state

        state = open_state(config.state)
        audit = http_audit(config, state, args.host, args.port)
    stack = build_stack(config, args.roots, gateway=gateway, meta=args.meta,
                        observers=[audit.middleware()] if audit is not None else ())
    # Over HTTP several clients share one server: if one client's roots moved the workspace, it would
    # move for every client. There the command line (or codeward.toml, or the directory) fixes it.
    server = stack.server(roots_from_client=not stack.roots_given and not args.http)
    roots = ", ".join(str(r) for r in stack.workspace.roots)
    count = len(stack.catalog)
    if args.http:
        from codeward.client_setup.banner import http_lines
        from codeward.transport.http_stack import configured_http_stack
        from codeward.transport.http_token import http_auth

        url = f"http://{args.host}:{args.port}/mcp"
        allowed = [f"{args.host}:*"] if args.host not in LOOPBACK else []
        runtime = configured_http_stack(config.server)
        exit_on_sigterm()
        with http_auth(host=args.host, port=args.port, token_env=args.token_env, no_auth=args.no_auth) as auth:
            connect = http_lines("codeward", url, _launch(), token_env=args.token_env, token_file=auth.token_file,
                                 token=auth.token is not None, install_args=_install_args(args))
            print(f"codeward {__version__}: serving {count} tools over streamable HTTP at {url}\n"
                  f"  {stack.listing_line()}\n"
                  f"  roots: {roots} (fixed: client roots are not used over HTTP)\n"
                  f"  {auth.notice}\n"
                  f"  http: {runtime.summary}\n"
                  f"  {_sandbox_line(stack)}\n"
                  f"  connect: {connect[0]}\n"
                  f"  {connect[1]}", file=sys.stderr, flush=True)

            async def serve_http() -> None:
                assert audit is not None
                async with stack:
                    await server.run_http(host=args.host, port=args.port, token=auth.token, allowed_hosts=allowed,
                                          state=state, users=audit.users, http_stack=runtime)

            runtime.run(serve_http)
        return 0
    if sys.stdin.isatty():
        from codeward.client_setup.banner import stdio_lines

        config_args = _config_args(args)
        connect = stdio_lines("codeward", _launch(), [*config_args, "serve", str(stack.workspace.primary)])
        print(f"codeward {__version__}: serving {count} tools over MCP stdio; roots: {roots}\n"
              "This is an MCP server: a client starts it and talks JSON-RPC on stdin/stdout. To connect one:\n"
              f"  {connect[0]}\n"
              f"  {connect[1]}\n"
              f"{_sandbox_line(stack)}\n"
              f"{stack.listing_line()}\n"
              "Press Ctrl-C to stop.", file=sys.stderr, flush=True)

    async def serve_stdio() -> None:
        async with stack:
            await server.run_stdio()

    anyio.run(serve_stdio)
    return 0


def _sandbox_line(stack: Stack) -> str:
    """What the executors will run in (the server's backend choice, probed now and kept for its calls)."""
    from codeward.coding.sandbox.doctor import banner_line
    from codeward.contained import backends_of

    return banner_line(backends_of(stack.services))


def _launch() -> LaunchCommand:
    """This installation's command as a client config would spell it (for the banners only: a client
    starting the server over a pipe never sees one)."""
    from codeward.client_setup.launch import display_command, installed_command

    return display_command(installed_command())


def _config_args(args: argparse.Namespace) -> list[str]:
    """``--config FILE`` (absolute) when the command was given one, for a command that runs elsewhere."""
    from pathlib import Path

    config = getattr(args, "config", None)
    return ["--config", str(Path(config).expanduser().absolute())] if config else []


def _install_args(args: argparse.Namespace) -> list[str]:
    """``install-client`` options that describe this HTTP server (its port, its token's variable)."""
    return [*(["--port", str(args.port)] if args.port != 8765 else []),
            *(["--token-env", args.token_env] if args.token_env else [])]


def _controlled_stack(args: argparse.Namespace, config: Config, gateway: GatewayConfig,
                      plane: ControlPlane, state: StateBackend | None = None, audit: HttpAudit | None = None) -> Stack:
    """The one stack with the plane's observer outermost; with ``--approvals console`` codeward's
    own writing and executing tools are asked about — the client (elicitation) raced against the
    console, the console alone for a client that cannot ask. Over HTTP a shared ``state`` lets any
    replica answer, and ``audit`` records every call and decision with its user."""
    from codeward.gateway.approval import confirm_with_client
    from codeward.gateway.policy import ConfirmCallback
    from codeward.stack import Approver, build_stack

    approver = None
    if plane.state is not None and args.approvals == "console":
        approvals: ConfirmCallback = plane.approvals(confirm_with_client)
        if state is not None and state.shared:
            from codeward.state.approvals import SharedApprovals

            approvals = SharedApprovals(state, approvals)
        approver = Approver(audit.approvals(approvals) if audit is not None else approvals)
    observers = [*([audit.middleware()] if audit is not None else []), *plane.middleware()]
    return build_stack(config, args.roots, gateway=gateway, meta=args.meta, approver=approver, observers=observers)


def _run_controlled(args: argparse.Namespace, control: ControlOptions, config: Config,
                    gateway: GatewayConfig) -> int:
    """``serve --control/--logs``: the same server inside a control plane (console, Hook API, logs)."""
    import anyio

    from codeward.control.plane import control_plane
    from codeward.state import open_state

    exit_on_sigterm()

    async def main() -> None:
        state = audit = None
        if args.http:  # shared state, users and the audit, as without --control
            from codeward.audit.setup import http_audit

            state = open_state(config.state)
            audit = http_audit(config, state, args.host, args.port)
        async with control_plane(control, "serve") as plane:
            stack = _controlled_stack(args, config, gateway, plane, state, audit)
            if plane.state is not None and state is not None and state.shared:  # the console answers any replica
                import asyncio

                from codeward.control.replicas import ReplicaApprovals

                plane.state.replicas = ReplicaApprovals(state, audit.log if audit else None,
                                                        asyncio.get_running_loop(), stack.services.metrics)
            server = stack.server(roots_from_client=not stack.roots_given and not args.http)
            roots = ", ".join(str(r) for r in stack.workspace.roots)
            count = len(stack.catalog)
            async with stack:
                if plane.state is not None:
                    plane.state.set_project({"label": "serve", "roots": [str(r) for r in stack.workspace.roots],
                                             "tools": count, "transport": "http" if args.http else "stdio",
                                             "approvals": args.approvals,
                                             "logs": str(plane.logs.directory) if plane.logs else None})
                    plane.state.set_session({"id": plane.session_id, "entries": []})
                plane.drive(workspace=stack.workspace)
                if not args.http:
                    print(f"codeward {__version__}: serving {count} tools over MCP stdio; roots: {roots}\n"
                          f"  {stack.listing_line()}", file=sys.stderr, flush=True)
                    await server.run_stdio()
                    return
                from codeward.transport.http_token import http_auth

                allowed = [f"{args.host}:*"] if args.host not in LOOPBACK else []
                with http_auth(host=args.host, port=args.port, token_env=args.token_env, no_auth=args.no_auth) as auth:
                    print(f"codeward {__version__}: serving {count} tools over streamable HTTP at "
                          f"http://{args.host}:{args.port}/mcp\n  {stack.listing_line()}\n  roots: {roots}\n"
                          f"  {auth.notice}\n"
                          f"  http: {runtime.summary}\n  {_sandbox_line(stack)}", file=sys.stderr, flush=True)
                    await server.run_http(host=args.host, port=args.port, token=auth.token, allowed_hosts=allowed,
                                          state=state, users=audit.users if audit else None,
                                          audit=audit.log if audit else None, http_stack=runtime)

    if not args.http:
        anyio.run(main)
        return 0
    from codeward.transport.http_stack import configured_http_stack

    runtime = configured_http_stack(config.server)
    runtime.run(main)
    return 0
