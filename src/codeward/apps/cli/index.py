"""``codeward index [PATH]``: build or refresh a directory's symbol index, with progress bars."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from codeward.apps.cli.common import configs_of
from codeward.apps.cli.output import add_json_argument, print_json, result_object
from codeward.apps.cli.parser import quiet as is_quiet
from codeward.apps.cli.tool_hints import for_the_terminal
from codeward.config import load_config
from codeward.serving.stack import build_stack

if TYPE_CHECKING:
    from rich.console import Console

    from codeward.config import Config
    from codeward.engines.code_intel.symbol_index import RefreshStats, SymbolIndex


def register(sub: Any) -> None:
    index = sub.add_parser("index", help="build or refresh the repository symbol index (.codeward/index.sqlite)",
                           description="Index definitions and references of a directory for find_symbol, "
                           "repo_map, py_find_usages, py_get_hierarchy and derive_code_path.")
    index.add_argument("path", nargs="?", default=".", help="directory to index (default: .)")
    index.add_argument("--rebuild", action="store_true", help="start from scratch instead of refreshing")
    index.add_argument("--definitions-only", action="store_true",
                       help="stop once definitions are indexed (from universal-ctags on a cold build); "
                            "references are built by the first question that needs them")
    add_json_argument(index)
    index.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return run_index_cli(args.path, rebuild=args.rebuild, references=not args.definitions_only,
                         config=configs_of(args)[0], quiet=is_quiet(args), as_json=args.json)


def run_index_cli(path: str, *, rebuild: bool, references: bool = True, config: Config | None = None,
                  quiet: bool = False, as_json: bool = False) -> int:
    """Index ``path`` and say what was done; the exit status.

    A cold build shows its two passes: definitions (universal-ctags, when installed, the tree
    is big and ``[index] ctags`` allows it), then references (tree-sitter), unless
    ``references`` is False. The policy is the stack's over ``path`` (the configuration's
    blacklist applies). ``quiet`` drops the progress and notes (errors stay); ``as_json`` prints
    the result object of :mod:`codeward.apps.cli.output` on stdout.
    """
    from rich.console import Console

    from codeward.engines.code_intel.symbol_index import SymbolIndex

    console = Console(stderr=True, soft_wrap=True)
    notes = Console(stderr=True, soft_wrap=True, quiet=quiet)

    def failed(text: str, code: int) -> int:
        if as_json:
            print_json(result_object("index", text=text, is_error=True))
        console.print(f"[red]error:[/red] {text}")
        return code

    try:
        stack = build_stack(config or load_config(), [path])
    except ValueError as exc:
        return failed(str(exc), 2)
    workspace = stack.workspace
    ctags = stack.config.index.ctags
    opened = SymbolIndex.open(workspace)
    if not opened.ok:
        return failed(for_the_terminal(opened.error_text()), 1)
    for note in opened.notes:
        notes.print(note)
    passes: list[dict[str, object]] = []
    with opened.data as index:
        for with_references in ([False, True] if references else [False]):
            try:
                stats = _refresh(notes, index, rebuild=rebuild and not with_references,
                                 references=with_references, ctags=ctags)
            except KeyboardInterrupt:
                console.print("interrupted: the index keeps the files finished so far")
                return 130
            name = "references" if with_references else "definitions"
            notes.print(f"{name}: {stats.describe()}")
            passes.append({"pass": name, "summary": stats.describe(), "failed": list(stats.failed)})
            for failure in stats.failed[:10]:
                console.print(f"  [yellow]warning:[/yellow] {failure}")
        counts = index.counts()
    summary = (f"{workspace.primary}: {counts['files']} files, {counts['definitions']} definitions, "
               f"{counts['identifiers']} identifier rows in {index.db_path}")
    if as_json:
        print_json(result_object("index", text=summary, structured={
            "workspace": str(workspace.primary), "database": str(index.db_path), **counts, "passes": passes}))
    else:
        console.print(summary)
    return 0


def _refresh(console: Console, index: SymbolIndex, *, rebuild: bool, references: bool,
             ctags: bool) -> RefreshStats:
    """One refresh under a transient progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("scanning", total=None)

        def report(done: int, total: int | None, message: str) -> None:
            bar.update(task, completed=done, total=total, description=message)

        return index.refresh(progress=report, rebuild=rebuild, references=references, ctags=ctags)
