"""The ``codeward`` command line: a thin layer over the library, one module per command.

Each command module has a ``register(subparsers)`` that adds its parser and sets its handler;
:func:`build_parser` calls them in order. Errors reach the person as one clear line
(``codeward: error: ...``) and a non-zero exit code, never a traceback (set
``CODEWARD_DEBUG=1`` to see one). Nothing outside this package imports it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from codeward import __version__
from codeward.cli.args import UsageError, parse_assignments
from codeward.config import ConfigError

__all__ = ["COMMANDS", "UsageError", "build_parser", "main", "parse_assignments"]

Handler = Callable[[argparse.Namespace], int]

COMMANDS = ("serve", "install_client", "tools", "call", "undo", "index", "gateway", "servers", "review", "run", "beads",
            "model", "chat", "ask", "registry")
"""The command modules of this package, in the order ``codeward --help`` lists them (``install_client`` is
``install-client``)."""


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # Only the command being run is registered (each command module imports what its flags need;
    # all of them cost a server ~0.1-0.3 s of start-up); anything else gets the whole parser.
    module = words[0].replace("-", "_") if words else ""
    parser = build_parser(only=module if module in COMMANDS else None)
    args = parser.parse_args(words)
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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; ``only``: register just that command module (what ``main`` does to run one)."""
    parser = argparse.ArgumentParser(
        prog="codeward",
        description="A secure MCP toolkit for AI coding agents: tool server, gateway, agent shell.",
    )
    parser.add_argument("--version", action="version", version=f"codeward {__version__}")
    parser.add_argument("--config", help="path to codeward.toml (default: ./codeward.toml if present)")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in (only,) if only is not None else COMMANDS:
        import_module(f"codeward.cli.{command}").register(sub)
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
