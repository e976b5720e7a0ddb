"""The argument parser every ``codeward`` command uses: shared flags and mistakes that say the fix.

argparse stays (it costs nothing to import, where Click/Typer/cyclopts add 40-200 ms to every
start of ``codeward serve``); this subclass gives every command the same ``--config``,
``-v/--verbose`` and ``-q/--quiet``, and turns a wrong word into "did you mean" and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

EXIT_USAGE = 2


class CodewardParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose subcommand parsers share the common flags and clear errors."""

    rest_dest: str | None = None
    """The ``key=value`` positional list of this command, if any: stray ``key=value`` words after an
    option (``codeward registry run NAME --dry-run x=1``) belong to it, not to "unrecognized"."""

    def __init__(self, *args: Any, common: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if common:
            add_common_arguments(self)

    def parse_known_args(  # type: ignore[override]
            self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        """Records the innermost parser that ran (``_parser``): it names the command and judges leftovers."""
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, "_parser"):
            parsed._parser = self
        return parsed, extras

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """An unknown choice (command, ``--format``...) names the closest ones."""
        choices = action.choices
        if choices is None or value in choices:
            return
        import difflib  # only on a mistake: a normal start does not pay for it

        names = [str(c) for c in choices]
        close = difflib.get_close_matches(str(value), names, n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}: {hint}choose from {', '.join(names)}")

    def error(self, message: str) -> NoReturn:
        """``codeward COMMAND: error: ...`` plus where the help is, exit 2 (argparse's convention)."""
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")

    def reject(self, extras: Sequence[str]) -> NoReturn:
        """Words this command does not take: each unknown option with its closest known one."""
        import difflib

        known = [s for action in self._actions for s in action.option_strings]
        problems = []
        for word in extras:
            if word.startswith("-"):
                flag = word.split("=", 1)[0]
                close = difflib.get_close_matches(flag, known, n=2, cutoff=0.6)
                hint = f" (did you mean {' or '.join(close)}?)" if close else ""
                problems.append(f"unknown option {flag!r}{hint}")
            elif self.rest_dest is None and "=" in word:
                problems.append(f"{self.prog} takes no key=value arguments ({word!r})")
            else:
                problems.append(f"unexpected argument {word!r}")
        self.error("; ".join(problems))


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config``, ``-v`` and ``-q``: the same meaning before and after any command name.

    Defaults are suppressed so that a value given before the command (``codeward --config F
    call ...``) is not reset by the command's parser."""
    group = parser.add_argument_group("common options")
    group.add_argument("--config", default=argparse.SUPPRESS, metavar="FILE",
                       help="codeward.toml, or a Claude-Desktop mcpServers JSON file (default: codeward.toml "
                       "found upward from here, then the user's)")
    group.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                       help="say more on stderr: -v logs what codeward does, -vv debug logs and tracebacks")
    group.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="only results and errors: no progress or notes on stderr")


def verbosity(args: argparse.Namespace) -> int:
    """-1 for ``--quiet``, else the number of ``-v`` (0 by default)."""
    if getattr(args, "quiet", False):
        return -1
    return int(getattr(args, "verbose", 0) or 0)


def quiet(args: argparse.Namespace) -> bool:
    return verbosity(args) < 0


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of ``parser`` by name (empty when it has none)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found
