"""The ``codeward`` command line: a thin layer over the library, one module per command.

Each command module has a ``register(subparsers)`` that adds its parser and sets its handler;
:func:`build_parser` calls them in order. Errors reach the person as one clear line
(``codeward: error: ...``) and a non-zero exit code, never a traceback (set
``CODEWARD_DEBUG=1`` to see one). Nothing outside this package imports it.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from codeward import __version__
from codeward.apps.cli.args import UsageError, parse_assignments
from codeward.apps.cli.output import configure_logging
from codeward.apps.cli.parser import CodewardParser, verbosity
from codeward.config import ConfigError

__all__ = ["COMMANDS", "UsageError", "build_parser", "main", "parse_assignments"]

Handler = Callable[[argparse.Namespace], int]

COMMANDS = ("serve", "install_client", "tools", "call", "undo", "index", "gateway", "servers", "review", "run", "beads",
            "model", "chat", "ask", "registry", "doctor", "completion")
"""The command modules of this package, in the order ``codeward --help`` lists them (``install_client`` is
``install-client``)."""
SERVING = ("serve", "gateway")
"""The commands that serve MCP, whose start-up an agent waits for."""


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # Only the command being run is registered (each command module imports what its flags need;
    # all of them cost a server ~0.1-0.3 s of start-up); anything else gets the whole parser
    # (a shell asking for completions has no words here: it gets the whole parser too).
    module = command_word(words).replace("-", "_")
    # A server starts with the garbage collector paused: its start-up (the SDK's ~550 pydantic models,
    # the catalog) allocates ~100k objects that live as long as the process, and collecting among them
    # took ~10% of spawn -> first tools/list. Serving turns it back on (freeze_startup_heap); any other
    # command runs with it on, and so does whatever runs after main() returns.
    if module == "serve":
        gc.disable()
    else:
        gc.enable()
    if module in SERVING:
        # Before anything imports the SDK: its ~300 per-era wire models build their validators on
        # first use (a dozen in a session), not all at import (about a third of start-up).
        from codeward.serving.sdk_wire_models import defer_wire_models

        defer_wire_models()
    try:
        return _run(words, module)
    finally:
        gc.enable()


def _run(words: list[str], module: str) -> int:
    parser = build_parser(only=module if module in COMMANDS else None)
    if "_ARGCOMPLETE" in os.environ:  # a shell asking for completions (codeward completion): answer, exit
        from codeward.apps.cli.completion import complete

        complete(parser)
    args = parse(parser, words)
    if getattr(args, "quiet", False) and getattr(args, "verbose", 0):
        args._parser.error("-q/--quiet and -v/--verbose contradict each other: give one of them")
    configure_logging(args)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        args._parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `codeward ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except (UsageError, ConfigError, ValueError, OSError, LookupError) as exc:
        if os.environ.get("CODEWARD_DEBUG") or verbosity(args) > 1:
            raise
        print(f"codeward: error: {exc}", file=sys.stderr)
        return 2


def command_word(words: Sequence[str]) -> str:
    """The command named on the line, past the common options before it (``codeward --config F -v
    serve``); "" when there is none."""
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--config":
            skip = True
        elif not word.startswith("-"):
            return word
    return ""


def parse(parser: CodewardParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments, options allowed anywhere: ``key=value`` words after an option join the
    command's ``key=value`` list; anything else unknown is an error naming the closest option."""
    args, extras = parser.parse_known_args(argv)
    command: CodewardParser = getattr(args, "_parser", parser)
    rest = command.rest_dest
    if extras and rest is not None:
        words = [w for w in extras if not w.startswith("-") and "=" in w]
        setattr(args, rest, [*(getattr(args, rest, None) or []), *words])
        extras = [w for w in extras if w not in words]
    if extras:
        command.reject(extras)
    return args


def build_parser(only: str | None = None) -> CodewardParser:
    """The command line; ``only``: register just that command module (what ``main`` does to run one)."""
    parser = CodewardParser(
        prog="codeward",
        description="A secure MCP toolkit for AI coding agents: tool server, gateway, agent shell. "
        "Every command takes --config, -v and -q; results print as JSON with --json (docs/cli.md).",
    )
    parser.add_argument("--version", action="version", version=f"codeward {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in (only,) if only is not None else COMMANDS:
        import_module(f"codeward.apps.cli.{command}").register(sub)
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
