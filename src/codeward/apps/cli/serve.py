"""``codeward serve``: the tools over MCP (stdio by default, streamable HTTP with ``--http``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward import __version__
from codeward.apps.cli.args import (
    UsageError,
    add_control_arguments,
    add_http_arguments,
    add_meta_argument,
    check_bind,
    control_options,
    exit_on_sigterm,
)
from codeward.apps.cli.common import configs_of
from codeward.serving.runtime import Serving, serve_mcp
from codeward.serving.transport.http_endpoint import HttpEndpoint

if TYPE_CHECKING:
    from codeward.approval.policy import ConfirmCallback
    from codeward.apps.client_setup.launch import LaunchCommand
    from codeward.apps.control.defaults import ControlOptions
    from codeward.serving.runtime import PlaneFactory, Started
    from codeward.serving.stack import Stack

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
    config, gateway = configs_of(args)
    if args.http:
        check_bind(args.host, allow_remote=args.allow_remote, no_auth=args.no_auth)
    control = control_options(args)
    if args.approvals != "console" and not control.serve:
        raise UsageError("--approvals needs --control (the console is where calls are approved)")
    approvals = args.approvals if control.serve else "none"
    if control.serve or control.logs or args.http:
        exit_on_sigterm()
    serving = Serving("serve", args.roots, gateway=gateway, meta=args.meta,
                      confirm=_console_confirm() if approvals == "console" else None, approvals=approvals,
                      http=HttpEndpoint(args.host, args.port, token_env=args.token_env, no_auth=args.no_auth)
                      if args.http else None)
    plane = _plane(control) if control.serve or control.logs else None
    serve_mcp(config, serving, plane=plane, announce=lambda started: _banner(args, started, plane is not None))
    return 0


def _console_confirm() -> ConfirmCallback:
    """With ``--approvals console``: the client's user by elicitation, raced against the console (the plane's
    approvals make the client abstain, not refuse, when it cannot ask)."""
    from codeward.approval.askers import confirm_with_client

    return confirm_with_client


def _plane(control: ControlOptions) -> PlaneFactory:
    from codeward.apps.control.plane import control_plane

    return lambda: control_plane(control, "serve")


def _banner(args: argparse.Namespace, started: Started, controlled: bool) -> None:
    """What ``serve`` prints on stderr as it starts: what it serves and how to connect a client."""
    stack = started.stack
    roots = ", ".join(str(r) for r in stack.workspace.roots)
    count = len(stack.catalog)
    if started.serving.http is not None:
        assert started.auth is not None and started.http_stack is not None
        url = started.serving.http.url
        from codeward.apps.client_setup.banner import http_lines, http_stack_line

        connect = http_lines("codeward", url, _launch(), token_env=args.token_env, token_file=started.auth.token_file,
                             token=started.auth.token, install_args=_install_args(args),
                             project=stack.workspace.primary)
        print(f"codeward {__version__}: serving {count} tools over streamable HTTP at {url}\n"
              f"  {stack.listing_line()}\n"
              f"  roots: {roots} (fixed: client roots are not used over HTTP)\n"
              f"  {started.auth.notice}\n"
              f"  {http_stack_line(started.http_stack.summary, started.http_stack.missing)}\n"
              f"  {_sandbox_line(stack)}\n"
              f"  connect: {connect[0]}\n"
              f"  {connect[1]}", file=sys.stderr, flush=True)
    elif controlled:
        print(f"codeward {__version__}: serving {count} tools over MCP stdio; roots: {roots}\n"
              f"  {stack.listing_line()}", file=sys.stderr, flush=True)
    elif sys.stdin.isatty():
        from codeward.apps.client_setup.banner import stdio_lines

        connect = stdio_lines("codeward", _launch(), [*_config_args(args), "serve", str(stack.workspace.primary)],
                              stack.workspace.primary)
        print(f"codeward {__version__}: serving {count} tools over MCP stdio; roots: {roots}\n"
              "This is an MCP server: a client starts it and talks JSON-RPC on stdin/stdout. To connect one:\n"
              f"  {connect[0]}\n"
              f"  {connect[1]}\n"
              f"{_sandbox_line(stack)}\n"
              f"{stack.listing_line()}\n"
              "Press Ctrl-C to stop.", file=sys.stderr, flush=True)


def _sandbox_line(stack: Stack) -> str:
    """What the executors will run in (the server's backend choice, probed now and kept for its calls)."""
    from codeward.engines.contained.project_sandbox import backends_of
    from codeward.engines.sandbox.doctor import banner_line

    return banner_line(backends_of(stack.services))


def _launch() -> LaunchCommand:
    """This installation's command as a client config would spell it (for the banners only: a client
    starting the server over a pipe never sees one)."""
    from codeward.apps.client_setup.launch import display_command, installed_command

    return display_command(installed_command())


def _config_args(args: argparse.Namespace) -> list[str]:
    """``--config FILE`` (absolute) when the command was given one, for a command that runs elsewhere."""
    config = getattr(args, "config", None)
    return ["--config", str(Path(config).expanduser().absolute())] if config else []


def _install_args(args: argparse.Namespace) -> list[str]:
    """``install-client`` options that describe this HTTP server (its port, its token's variable)."""
    return [*(["--port", str(args.port)] if args.port != 8765 else []),
            *(["--token-env", args.token_env] if args.token_env else [])]
