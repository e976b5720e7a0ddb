"""What every command shares: the usage error, ``key=value`` arguments, common flags.

Kept in one place so that a flag means the same on every command that takes it, and so that
domain packages never need anything from the command line.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from codeward.apps.control.defaults import DEFAULT_APPROVAL_TIMEOUT, DEFAULT_HOST, DEFAULT_PORT, ControlOptions
from codeward.config import Config, load_config
from codeward.serving.transport.http_endpoint import LOOPBACK

if TYPE_CHECKING:
    from codeward.apps.agent.budget import CatalogChoice



class UsageError(Exception):
    """A command-line mistake; the message says what to type instead."""


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


def config_of(args: argparse.Namespace) -> Config:
    """The configuration a command runs with (``--config``, else ``./codeward.toml``, else defaults)."""
    return load_config(getattr(args, "config", None))


def check_bind(host: str, *, allow_remote: bool, no_auth: bool, what: str = "the tools") -> None:
    """A non-loopback HTTP bind needs ``--allow-remote`` (and a token, which ``--no-auth`` would drop)."""
    if host in LOOPBACK:
        return
    if no_auth:
        raise UsageError(f"--no-auth is for loopback addresses only: binding to {host} without a token would "
                         f"hand {what} to the network; drop --no-auth (a token is generated) or bind 127.0.0.1")
    if not allow_remote:
        raise UsageError(f"binding to {host} exposes {what} to the network; "
                         "pass --allow-remote (a bearer token is required there) to do it")


def exit_on_sigterm() -> None:
    """SIGTERM ends the command like Ctrl-C does, through every ``finally`` (a generated token file
    is removed); the HTTP server re-raises the signal once it has shut down cleanly."""
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def add_config_argument(parser: argparse.ArgumentParser, text: str = "codeward.toml or mcpServers JSON file") -> None:
    """``--config`` after the command name too (``codeward gateway --config F``), same as before it.

    Every command's parser has it already (:mod:`codeward.apps.cli.parser`); this only adds it to a
    plain ``ArgumentParser``."""
    if "--config" not in parser._option_string_actions:
        parser.add_argument("--config", default=argparse.SUPPRESS, help=text)


def add_http_arguments(parser: argparse.ArgumentParser, port: int, what: str = "the tools") -> None:
    """``--http --host --port --token-env --no-auth --allow-remote``, shared by ``serve`` and ``gateway``."""
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=port, help=f"HTTP port (default {port})")
    parser.add_argument("--token-env", metavar="VAR",
                        help="require 'Authorization: Bearer $VAR' on every HTTP request (default: a generated token, "
                        "written to a 0600 file whose path is printed)")
    parser.add_argument("--no-auth", action="store_true",
                        help="serve HTTP without a token (loopback only; every local user can call the tools)")
    parser.add_argument("--allow-remote", action="store_true",
                        help=f"allow binding --host to a non-loopback address, exposing {what} (a token is required)")


def add_meta_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--meta", action="store_true",
                        help="list only the four registry meta-tools, which find and run every other tool")


def add_control_arguments(parser: argparse.ArgumentParser) -> None:
    """The control-plane flags, shared by ``chat``, ``ask`` and ``gateway``."""
    group = parser.add_argument_group("control plane (Hook API, web console, session logs)")
    group.add_argument("--control", action="store_true",
                       help=f"serve the Hook API and web console (default {DEFAULT_HOST}:{DEFAULT_PORT}); "
                       "tool approvals can then be given in the browser too; implies --logs")
    group.add_argument("--control-port", type=int, default=DEFAULT_PORT, metavar="N",
                       help=f"port of the Hook API (default {DEFAULT_PORT}; 0 picks a free one)")
    group.add_argument("--control-host", default=DEFAULT_HOST, metavar="HOST",
                       help="bind address of the Hook API (default 127.0.0.1)")
    group.add_argument("--control-allow-remote", action="store_true",
                       help="allow --control-host to be a non-loopback address (the token is still required)")
    group.add_argument("--approval-timeout", type=float, default=DEFAULT_APPROVAL_TIMEOUT, metavar="SECONDS",
                       help="without a terminal, deny a call nobody approved in the console within this time "
                       f"(default {DEFAULT_APPROVAL_TIMEOUT:g})")
    group.add_argument("--logs", action="store_true",
                       help="write session logs (model requests, tool calls, API hooks, subprocesses) under "
                       "the data folder's logs/<session>/")


def control_options(args: argparse.Namespace) -> ControlOptions:
    """A :class:`~codeward.apps.control.defaults.ControlOptions` from the flags of :func:`add_control_arguments`."""
    return ControlOptions(serve=bool(getattr(args, "control", False)), logs=bool(getattr(args, "logs", False)),
                          host=getattr(args, "control_host", DEFAULT_HOST),
                          port=getattr(args, "control_port", DEFAULT_PORT),
                          allow_remote=bool(getattr(args, "control_allow_remote", False)),
                          approval_timeout=getattr(args, "approval_timeout", DEFAULT_APPROVAL_TIMEOUT))


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags ``chat`` and ``ask`` share: model, roots, auto-approval, control plane."""
    parser.add_argument("--model", help="a [model.profiles] name, or a model id on OPENAI_BASE_URL")
    parser.add_argument("--root", action="append", help="workspace root (repeatable; default: config or cwd)")
    parser.add_argument("--auto-approve", action="append", default=[], metavar="PATTERN",
                        help="run matching tools without asking (exact name or glob such as 'git__*')")
    offered = parser.add_mutually_exclusive_group()
    offered.add_argument("--meta", action="store_true",
                         help="offer only the four meta-tools, which search, describe and call every tool "
                         "(default: the full catalog when it fits the model's context, else a trimmed one)")
    offered.add_argument("--toolsets", action="append", metavar="NAME[,NAME]",
                         help="offer only these toolsets (or gateway servers), e.g. files,python")
    add_control_arguments(parser)


def catalog_choice(args: argparse.Namespace) -> CatalogChoice:
    """``--meta`` / ``--toolsets`` as a choice (names split on commas, blanks dropped)."""
    from codeward.apps.agent.budget import CatalogChoice

    toolsets = None
    if args.toolsets is not None:
        toolsets = tuple(dict.fromkeys(n.strip() for each in args.toolsets for n in each.split(",") if n.strip()))
    return CatalogChoice(meta=args.meta, toolsets=toolsets)
