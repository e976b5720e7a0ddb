"""``codeward undo``: take back the last tool edits from the terminal, or list the checkpoints.

The same ``undo`` and ``list_checkpoints`` tools an agent calls, through the same stack. When a
file changed outside codeward since, the undo is refused and names it; on a terminal the
person is asked whether to overwrite it, otherwise ``--force`` is the only way through.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, TYPE_CHECKING, Any

from codeward.apps.cli.args import UsageError
from codeward.apps.cli.common import configs_of
from codeward.apps.cli.output import add_json_argument, print_outcome
from codeward.serving.stack import build_stack

if TYPE_CHECKING:
    from codeward.serving.stack import Stack

OUTSIDE_CHANGES = "changed outside codeward since"


def register(sub: Any) -> None:
    undo = sub.add_parser("undo", help="undo the last tool edits (every tool edit is a checkpoint)",
                          description="Undo the last tool edits: files restored, moves and deletions reversed. "
                          "`codeward undo` takes back the last tool call, `codeward undo 3` the last three, "
                          "`codeward undo --to 12` everything from checkpoint 12 on; `--list` shows them.")
    undo.add_argument("steps", nargs="?", type=int, default=None, help="how many of the latest tool calls to undo "
                      "(default 1)")
    undo.add_argument("--to", dest="checkpoint", type=int, metavar="ID",
                      help="go back to just before this checkpoint (an undo's id redoes)")
    undo.add_argument("--list", action="store_true", help="list the checkpoints instead (newest first)")
    undo.add_argument("--limit", type=int, default=20, help="checkpoints to list (default 20)")
    undo.add_argument("--dry-run", action="store_true", help="only show what would be restored")
    undo.add_argument("--force", action="store_true", help="overwrite files changed outside codeward since")
    undo.add_argument("--root", action="append", help="workspace root (repeatable; default: config or cwd)")
    add_json_argument(undo)
    undo.set_defaults(handler=run)


def run(args: argparse.Namespace, stdin: IO[str] | None = None, out: IO[str] | None = None,
        err: IO[str] | None = None) -> int:
    import anyio

    if args.steps is not None and args.checkpoint is not None:
        raise UsageError("give either a number of steps or --to ID, not both")
    if args.steps is not None and args.steps < 1:
        raise UsageError(f"steps must be at least 1 (got {args.steps})")
    config, gateway = configs_of(args)
    stack = build_stack(config, args.root or (), gateway=gateway, upstreams=False)
    return anyio.run(_undo, stack, args, stdin or sys.stdin, out or sys.stdout, err or sys.stderr)


async def _undo(stack: Stack, args: argparse.Namespace, stdin: IO[str], out: IO[str], err: IO[str]) -> int:
    async with stack:
        if args.list:
            outcome = await stack.acall("list_checkpoints", {"limit": args.limit})
            return print_outcome(args, outcome, out=out, err=err)
        arguments: dict[str, Any] = {"dry_run": args.dry_run, "force": args.force}
        if args.checkpoint is not None:
            arguments["checkpoint"] = args.checkpoint
        else:
            arguments["steps"] = args.steps or 1
        outcome = await stack.acall("undo", arguments)
        if outcome.is_error and OUTSIDE_CHANGES in outcome.text and not args.force and _interactive(stdin):
            print(outcome.errors[0].message if outcome.errors else outcome.text, file=err)
            err.write("Overwrite them with their earlier contents? (the undo can itself be undone) [y/N] ")
            err.flush()
            if stdin.readline().strip().lower().startswith("y"):
                outcome = await stack.acall("undo", {**arguments, "force": True})
            else:
                print("nothing was changed", file=err)
                return 1
        return print_outcome(args, outcome, out=out, err=err)


def _interactive(stdin: IO[str]) -> bool:
    try:
        return stdin.isatty()
    except (AttributeError, ValueError):
        return False
