"""What commands print: one JSON shape for ``--json``, the text otherwise, and the log level.

Every ``--json`` prints exactly one JSON document on stdout. A command that produces one
result prints a *result object*::

    {"command": "registry search", "tool": "registry_search", "is_error": false,
     "text": "...", "structured": {...} | null, "errors": [{"kind", "message", "hint", ...}]}

(``tool`` is the tool that ran, ``null`` when none did). Listing commands (``tools``,
``servers``) print an array of records. Progress and notes stay on stderr either way.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from codeward.apps.cli.parser import verbosity
from codeward.apps.cli.tool_hints import for_the_terminal

if TYPE_CHECKING:
    from codeward.kernel.outcome import ToolOutcome
    from codeward.kernel.result import ErrorInfo


def add_json_argument(parser: argparse.ArgumentParser, text: str = "print the result as one JSON object "
                      "(see docs/cli.md)") -> None:
    parser.add_argument("--json", action="store_true", help=text)


def command_name(args: argparse.Namespace) -> str:
    """``registry search`` for ``codeward registry search ...`` (the parser's prog without ``codeward``)."""
    parser = getattr(args, "_parser", None)
    prog = str(getattr(parser, "prog", "codeward"))
    return prog.split(" ", 1)[1] if " " in prog else prog


def result_object(command: str, *, text: str, is_error: bool = False, tool: str | None = None,
                  structured: Mapping[str, Any] | None = None,
                  errors: Sequence[ErrorInfo] = ()) -> dict[str, Any]:
    """The result object every single-result ``--json`` prints."""
    return {"command": command, "tool": tool, "is_error": is_error, "text": text,
            "structured": dict(structured) if structured is not None else None,
            "errors": [e.to_dict() for e in errors]}


def print_json(value: Any, out: IO[str] | None = None) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str), file=out or sys.stdout)


def print_outcome(args: argparse.Namespace, outcome: ToolOutcome, *, tool: str | None = None,
                  out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """A tool's outcome as the command's result: JSON with ``--json`` (the tool's own words), else its text
    with its hints naming commands (errors on stderr). The exit status: 1 when the tool failed."""
    if getattr(args, "json", False):
        print_json(result_object(command_name(args), text=outcome.text, is_error=outcome.is_error,
                                 tool=tool or outcome.name, structured=outcome.structured, errors=outcome.errors),
                   out)
    else:  # the words of a command's own tool (registry, undo): its hints name commands
        print(for_the_terminal(outcome.text), file=(err or sys.stderr) if outcome.is_error else (out or sys.stdout))
    return 1 if outcome.is_error else 0


def configure_logging(args: argparse.Namespace) -> None:
    """``-q``: errors only; ``-v``: what codeward does (INFO); ``-vv``: debug, every library's too.

    Without either, logging is left as Python sets it (warnings, bare, on stderr)."""
    chosen = verbosity(args)
    if chosen == 0:
        return
    level = {-1: logging.ERROR, 1: logging.INFO}.get(chosen, logging.DEBUG)
    logging.basicConfig(level=level if chosen != 1 else logging.WARNING, stream=sys.stderr,
                        format="codeward: %(levelname)s %(name)s: %(message)s")
    logging.getLogger("codeward").setLevel(level)
