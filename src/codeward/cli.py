"""The ``codeward`` command line: a thin layer over the library.

Each subcommand is a small function registered in :func:`build_parser`; errors reach the
person as one clear line (``codeward: error: ...``) and a non-zero exit code, never a
traceback (set ``CODEWARD_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codeward import __version__
from codeward.config import Config, ConfigError, load_config

Handler = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """A command-line mistake; the message says what to type instead."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except (UsageError, ConfigError, ValueError, OSError, LookupError) as exc:
        if os.environ.get("CODEWARD_DEBUG"):
            raise
        print(f"codeward: error: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codeward",
        description="A secure MCP toolkit for AI coding agents: tool server, gateway, agent shell.",
    )
    parser.add_argument("--version", action="version", version=f"codeward {__version__}")
    parser.add_argument("--config", help="path to codeward.toml (default: ./codeward.toml if present)")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = sub.add_parser("serve", help="serve the tools over MCP (stdio by default)",
                           description="Serve codeward's tools over MCP. Roots default to the client's MCP "
                           "roots, else the config's roots, else the current directory.")
    serve.add_argument("roots", nargs="*", help="directories the tools may access (the first is primary)")
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    serve.add_argument("--token-env", metavar="VAR",
                       help="require 'Authorization: Bearer $VAR' on every HTTP request (default: a generated token, "
                       "written to a 0600 file whose path is printed)")
    serve.add_argument("--no-auth", action="store_true",
                       help="serve HTTP without a token (loopback only; every local user can call the tools)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="allow binding --host to a non-loopback address (requires --token-env)")
    serve.add_argument("--meta", action="store_true",
                       help="list only the four registry meta-tools, which find and run every other tool")
    serve.set_defaults(handler=cmd_serve)

    tools = sub.add_parser("tools", help="list the tools")
    fmt = tools.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the MCP tool list as JSON")
    fmt.add_argument("--markdown", action="store_true", help="print docs/tools.md")
    tools.set_defaults(handler=cmd_tools)

    call = sub.add_parser("call", help="run one tool directly (no server) and print its result",
                          description="Run one tool directly: codeward call read_file path=README.md. "
                          "Values are JSON when the argument is not a string (n=3, flag=true, items='[1,2]').")
    call.add_argument("tool", help="tool name (see `codeward tools`)")
    call.add_argument("arguments", nargs="*", metavar="key=value", help="tool arguments")
    call.add_argument("--root", action="append", help="workspace root (repeatable; default: config or cwd)")
    call.add_argument("--json", action="store_true", help="print the outcome as JSON")
    call.set_defaults(handler=cmd_call)

    index = sub.add_parser("index", help="build or refresh the repository symbol index (.codeward/index.sqlite)",
                           description="Index definitions and references of a directory for find_symbol, "
                           "repo_map, py_find_usages, py_get_hierarchy and derive_code_path.")
    index.add_argument("path", nargs="?", default=".", help="directory to index (default: .)")
    index.add_argument("--rebuild", action="store_true", help="start from scratch instead of refreshing")
    index.add_argument("--definitions-only", action="store_true",
                       help="stop once definitions are indexed (from universal-ctags on a cold build); "
                            "references are built by the first question that needs them")
    index.set_defaults(handler=cmd_index)

    gateway = sub.add_parser("gateway", help="serve other MCP servers' tools (alias__tool) as one server",
                             description="Connect the MCP servers of [mcp.servers] in codeward.toml (or an "
                             "mcpServers JSON file) and serve their tools, namespaced alias__tool, over MCP.")
    gateway.add_argument("--config", default=argparse.SUPPRESS, help="codeward.toml or mcpServers JSON file")
    gateway.add_argument("--url", action="append", default=[], help="also connect this MCP server URL (repeatable)")
    gateway.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    gateway.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    gateway.add_argument("--port", type=int, default=8766, help="HTTP port (default 8766)")
    gateway.add_argument("--token-env", metavar="VAR", help="require 'Authorization: Bearer $VAR' over HTTP "
                         "(default: a generated token in a 0600 file whose path is printed)")
    gateway.add_argument("--no-auth", action="store_true",
                         help="serve HTTP without a token (loopback only; every local user can call the tools)")
    gateway.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (needs a token)")
    gateway.add_argument("--root", action="append", help="workspace root for native tools (repeatable)")
    gateway.add_argument("--yes", action="store_true",
                         help="approve every call without asking (trusted, unattended setups only)")
    gateway.add_argument("--meta", action="store_true",
                         help="list only the four registry meta-tools, which find and run every other tool")
    from codeward.control.plane import add_control_arguments

    add_control_arguments(gateway)
    gateway.set_defaults(handler=cmd_gateway)

    servers = sub.add_parser("servers", help="connect the configured MCP servers and show their state")
    servers.add_argument("--config", default=argparse.SUPPRESS, help="codeward.toml or mcpServers JSON file")
    servers.add_argument("--url", action="append", default=[], help="also connect this MCP server URL")
    servers.add_argument("--json", action="store_true", help="print JSON")
    servers.add_argument("--tools", action="store_true", help="list each server's tools too")
    servers.add_argument("--repin", action="store_true", help="accept the current tool definitions as pinned")
    servers.set_defaults(handler=cmd_servers)

    from codeward.coding.review.cli import GATES_HELP
    from codeward.coding.review.report.formats import FORMAT_NAMES

    review = sub.add_parser("review", help="static review with quality gates (CI-ready exit code)",
                            description="Analyze files or folders (ruff, mypy, bandit, radon/lizard, vulture; "
                            "shellcheck, cppcheck, biome when installed) with the project's own analyzer "
                            "configuration, write a report and check quality gates: exit 1 when a gate fails. "
                            f"Gates: {GATES_HELP}.")
    review.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                        help="files or folders to review (default: .)")
    review.add_argument("--format", choices=FORMAT_NAMES, default="md",
                        help="report format: text (one line per finding), md, html, json, sarif (SARIF 2.1.0), "
                        "github (workflow annotations) (default md)")
    review.add_argument("--gates", nargs="*", metavar="NAME=VALUE",
                        help="gate thresholds over the defaults, e.g. max_errors=0 avg_complexity=8; NAME=off "
                        "turns a default gate off")
    review.add_argument("--output", help="write the report to this file (inside the project) instead of stdout")
    review.add_argument("--timeout", metavar="SECONDS",
                        help="seconds each analyzer may run before it is stopped (default 120)")
    review.add_argument("--isolated", action="store_true",
                        help="ignore the project's ruff/mypy/bandit/vulture/biome configuration and use "
                        "codeward's fixed rules (for untrusted code)")
    review.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    review.set_defaults(handler=cmd_review)

    run = sub.add_parser("run", help="run a program in the sandbox (python, js, bash, c, cpp, go, rust, java)",
                         description="Run a file (or - for stdin) in the sandbox; the exit code is the program's "
                         "(124 on timeout, 128+N on signal N, 2 when it could not run).")
    run.add_argument("file", help="source file, or - to read the program from stdin")
    run.add_argument("--language", help="language (default: from the file extension)")
    run.add_argument("--timeout", type=float, default=30.0, help="seconds before the run is killed (default 30)")
    run.add_argument("--memory-mb", type=int, help="memory limit (default: the language's)")
    run.add_argument("--network", action="store_true", help="allow network access (off by default)")
    run.set_defaults(handler=cmd_run)

    beads = sub.add_parser("beads", help="the Beads issue tracker workspace")
    beads_sub = beads.add_subparsers(title="beads commands", metavar="ACTION")
    beads_init = beads_sub.add_parser("init", help="create .beads/ in the project so the bd_* tools work")
    beads_init.add_argument("--root", default=".", help="project folder (default: .)")
    beads_init.add_argument("--prefix", help="issue id prefix (default: from the folder name)")
    beads_init.set_defaults(handler=cmd_beads_init)

    model = sub.add_parser("model", help="local model helpers")
    model_sub = model.add_subparsers(title="model commands", metavar="ACTION")
    local = model_sub.add_parser("serve-local", help="serve Qwen2.5-Coder-0.5B from PyPI packages (needs the "
                                 "local-model extra) as an OpenAI-compatible endpoint")
    local.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    local.add_argument("--threads", type=int, help="CPU threads (default: all cores but one)")
    local.add_argument("--ctx", type=int, default=16_384, metavar="TOKENS",
                       help="context window in tokens (default 16384, at most 32768; about 12 KB of memory a token)")
    local.set_defaults(handler=cmd_serve_local)

    from codeward.agent.commands import add_agent_arguments

    chat = sub.add_parser("chat", help="talk to a model that uses the tools (interactive)",
                          description="An interactive agent shell over any OpenAI-compatible model.")
    add_agent_arguments(chat)
    chat.add_argument("--resume", nargs="?", const="", metavar="ID",
                      help="continue a saved session (default: the latest)")
    chat.add_argument("--add", nargs="+", metavar="PATH", help="track these files (paths or globs) from the start")
    chat.set_defaults(handler=cmd_chat)

    ask = sub.add_parser("ask", help="one question, answered with tools (non-interactive)",
                         description="Ask once: the answer goes to stdout, tool frames to stderr; the exit "
                         "code says whether it worked. Calls the policy does not approve are denied.")
    ask.add_argument("question", help="what to ask")
    add_agent_arguments(ask)
    ask.set_defaults(handler=cmd_ask)
    from codeward.registry.cli import add_registry_commands

    add_registry_commands(sub)
    return parser


# -- shared pieces -------------------------------------------------------------------------


def _exit_on_sigterm() -> None:
    """SIGTERM ends the command like Ctrl-C does, through every ``finally`` (a generated token file
    is removed); the HTTP server re-raises the signal once it has shut down cleanly."""
    import signal

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _config(args: argparse.Namespace) -> Config:
    return load_config(getattr(args, "config", None))


def _workspace_for(config: Config, roots: Sequence[str] | None) -> Any:
    from codeward.workspace import Workspace

    chosen: Sequence[str | Path] = list(roots or []) or list(config.roots) or [Path.cwd()]
    for root in chosen:
        if not Path(root).expanduser().is_dir():
            raise UsageError(f"root {str(root)!r} is not a directory; pass an existing directory")
    return Workspace.create(chosen, extra_blacklist=config.blacklist, protected=_config_files(config))


def _config_files(config: Config) -> list[Path]:
    """The configuration files codeward read: no tool may write them (see Workspace.write_protection)."""
    return [config.path] if config.path else []


def _catalog_for(config: Config) -> Any:
    from codeward.tools import default_catalog

    catalog = default_catalog(config.toolsets)
    if config.toolsets is not None:
        unknown = set(config.toolsets) - set(catalog.toolsets())
        if unknown:
            raise UsageError(f"unknown toolsets in config: {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(default_catalog().toolsets())}")
    return catalog


# -- commands ------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    import anyio

    from codeward.server import CodewardServer
    from codeward.surface import CatalogSurface

    config = _config(args)
    explicit = bool(args.roots) or bool(config.roots)
    workspace = _workspace_for(config, args.roots)
    if args.http and args.host not in ("127.0.0.1", "localhost", "::1"):
        if args.no_auth:
            raise UsageError(f"--no-auth is for loopback addresses only: binding to {args.host} without a token would "
                             "hand the tools to the network; drop --no-auth (a token is generated) or bind 127.0.0.1")
        if not args.allow_remote:
            raise UsageError(f"binding to {args.host} exposes the tools to the network; "
                             "pass --allow-remote (a bearer token is required there) to do it")
    from codeward.assembly import context_extras, metrics_observer

    catalog = _catalog_for(config)
    extras = context_extras(config)
    from codeward.registry.wiring import wire_registry

    wired = wire_registry(CatalogSurface(catalog), meta=args.meta)
    # Over HTTP several clients share one server: if one client's roots moved the workspace, it would
    # move for every client. There the command line (or codeward.toml, or the directory) fixes it.
    from_client = not explicit and not args.http
    server = CodewardServer(wired.surface, workspace, settings=config.settings, roots_from_client=from_client,
                            extras={**extras, **wired.extras}, observers=[metrics_observer(extras)],
                            resource_providers=wired.resource_providers, prompt_providers=wired.prompt_providers)
    roots = ", ".join(str(r) for r in workspace.roots)
    if args.http:
        from codeward.transport.http_token import http_auth

        url = f"http://{args.host}:{args.port}/mcp"
        _exit_on_sigterm()
        with http_auth(host=args.host, port=args.port, token_env=args.token_env, no_auth=args.no_auth) as auth:
            header = " --header 'Authorization: Bearer <token>'" if auth.token else ""
            print(f"codeward {__version__}: serving {len(catalog)} tools over streamable HTTP at {url}\n"
                  f"  roots: {roots} (fixed: client roots are not used over HTTP)\n"
                  f"  {auth.notice}\n"
                  f"  connect: claude mcp add --transport http codeward {url}{header}", file=sys.stderr, flush=True)
            allowed = [f"{args.host}:*"] if args.host not in ("127.0.0.1", "localhost", "::1") else []
            anyio.run(lambda: server.run_http(host=args.host, port=args.port, token=auth.token,
                                              allowed_hosts=allowed))
        return 0
    if sys.stdin.isatty():
        print(f"codeward {__version__}: serving {len(catalog)} tools over MCP stdio; roots: {roots}\n"
              "This is an MCP server: a client starts it and talks JSON-RPC on stdin/stdout. To connect one:\n"
              f"  claude mcp add codeward -- codeward serve {workspace.primary}\n"
              "  or see the README for Claude Desktop's configuration. Press Ctrl-C to stop.",
              file=sys.stderr, flush=True)
    anyio.run(server.run_stdio)
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    config = _config(args)
    catalog = _catalog_for(config)
    if args.markdown:
        from codeward.docs import tools_markdown

        sys.stdout.write(tools_markdown(catalog))
        return 0
    if args.json:
        from codeward.surface import CatalogSurface

        infos = CatalogSurface(catalog).tool_infos()
        specs = {spec.name: spec for spec in catalog}
        print(json.dumps([{"name": i.name, "description": i.description, "inputSchema": i.input_schema,
                           "annotations": i.annotations, "toolset": specs[i.name].toolset,
                           "examples": list(specs[i.name].examples)}
                          for i in infos], indent=2))
        return 0
    width = max((len(s.name) for s in catalog), default=0)
    for spec in catalog:
        summary = spec.description.splitlines()[0]
        print(f"{spec.name:<{width}}  [{spec.toolset}] {summary}")
    return 0


def cmd_call(args: argparse.Namespace) -> int:
    from codeward.context import ToolContext

    config = _config(args)
    catalog = _catalog_for(config)
    spec = catalog.get(args.tool)
    if spec is None and "__" in args.tool:
        from codeward.gateway.cli import call_cli

        return call_cli(config.mcp, args.tool, args.arguments, as_json=args.json, roots=args.root or ())
    if spec is None:
        import difflib

        close = difflib.get_close_matches(args.tool, catalog.names(), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else " Run `codeward tools` to list them."
        raise UsageError(f"unknown tool {args.tool!r}.{hint}")
    arguments = parse_assignments(args.arguments, spec.input_schema)
    from codeward.assembly import context_extras

    ctx = ToolContext(_workspace_for(config, args.root), settings=config.settings, extras=context_extras(config))
    outcome = catalog.call(args.tool, arguments, ctx)
    if args.json:
        print(json.dumps({"tool": args.tool, "is_error": outcome.is_error, "text": outcome.text,
                          "structured": outcome.structured}, indent=2))
    else:
        stream = sys.stderr if outcome.is_error else sys.stdout
        print(outcome.text, file=stream)
    return 1 if outcome.is_error else 0


def cmd_index(args: argparse.Namespace) -> int:
    from codeward.code.index_cli import run_index_cli

    return run_index_cli(args.path, rebuild=args.rebuild, references=not args.definitions_only,
                         ctags=_config(args).index.ctags)


def cmd_gateway(args: argparse.Namespace) -> int:
    from codeward.control.plane import ControlOptions
    from codeward.gateway.cli import run_gateway_cli
    from codeward.transport.http_token import HttpAuth, http_auth

    auth: contextlib.AbstractContextManager[HttpAuth] = (
        http_auth(host=args.host, port=args.port, token_env=args.token_env, no_auth=args.no_auth) if args.http
        else contextlib.nullcontext(HttpAuth(None)))
    if args.http:
        _exit_on_sigterm()
    with auth as chosen:
        if chosen.notice:
            print(f"codeward gateway: {chosen.notice}", file=sys.stderr, flush=True)
        return run_gateway_cli(_config(args).mcp, "http" if args.http else "stdio", args.host, args.port,
                               token=chosen.token, roots=args.root or (), urls=args.url, yes=args.yes,
                               allow_remote=args.allow_remote, meta=args.meta, control=ControlOptions.from_args(args))


def cmd_servers(args: argparse.Namespace) -> int:
    from codeward.gateway.cli import list_servers_cli

    return list_servers_cli(_config(args).mcp, urls=args.url, as_json=args.json, show_tools=args.tools,
                            repin=args.repin)


def cmd_review(args: argparse.Namespace) -> int:
    from codeward.coding.review.cli import run_review_cli

    return run_review_cli(args.paths, args.format, args.gates, args.output, timeout=args.timeout,
                          isolated=args.isolated, progress=not args.quiet, config=_config(args).review)


def cmd_run(args: argparse.Namespace) -> int:
    from codeward.coding.run_cli import run_file_cli

    return run_file_cli(args.file, args.language, timeout_s=args.timeout, memory_mb=args.memory_mb,
                        network=args.network, settings=_config(args).coding)


def cmd_beads_init(args: argparse.Namespace) -> int:
    from codeward.beads.store import beads_init

    print(beads_init(Path(args.root).resolve(), args.prefix))
    return 0


def cmd_serve_local(args: argparse.Namespace) -> int:
    from codeward.agent.local_model import LocalModelUnavailable, WeightsMismatch, serve_local

    try:
        return serve_local(args.port, threads=args.threads, n_ctx=args.ctx, echo=lambda line: print(line, flush=True))
    except (LocalModelUnavailable, WeightsMismatch) as exc:
        raise UsageError(str(exc)) from exc


def cmd_chat(args: argparse.Namespace) -> int:
    from codeward.agent.commands import run_chat

    config = _config(args)
    return run_chat(args, config, _catalog_for(config))


def cmd_ask(args: argparse.Namespace) -> int:
    from codeward.agent.commands import run_ask

    config = _config(args)
    return run_ask(args, config, _catalog_for(config))


def parse_assignments(items: Sequence[str], schema: dict[str, Any]) -> dict[str, Any]:
    """``key=value`` words as tool arguments: strings stay strings, other types are parsed as JSON."""
    properties: dict[str, Any] = schema.get("properties", {})
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"argument {item!r} is not key=value; e.g. path=README.md")
        expected = properties.get(key, {})
        kinds = {expected.get("type")} | {alt.get("type") for alt in expected.get("anyOf", [])}
        if "string" in kinds and not kinds & {"integer", "number", "boolean", "array", "object"}:
            out[key] = value
            continue
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
