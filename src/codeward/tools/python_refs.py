"""``py_find_references`` and ``py_rename_symbol``: scope-aware, across the project, through the gate.

The symbol is named the way the other ``py_*`` tools name it (a dotted name defined in a file)
or pointed at (line and column of any of its uses). basedpyright answers once it runs (in the
sandbox), jedi while it starts or where it is not installed (:mod:`codeward.engines.lsp.python_answers`);
the symbol index lists every occurrence of the name in code, so that those neither ties to the
symbol are listed as unsure. Every file read or shown passes the gate; a rename writes only when
every file it changes may be written and nothing is unsure (or ``unsure`` says what to do), all
of them or none, as one checkpoint. ``rename_symbol``/``find_references`` give Python files the
same answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from codeward.config.index import IndexSettings
from codeward.engines.code_intel import python_refs
from codeward.engines.code_intel.python_symbols import lookup_one, parse_module
from codeward.engines.code_intel.symbol_index import SymbolIndex, index_root_for
from codeward.engines.files.textfile import read_text
from codeward.engines.lsp import python_answers
from codeward.engines.lsp.answers import Target, find_target
from codeward.engines.lsp.reports import ReferenceReport, RenameReport
from codeward.engines.lsp.tool_args import ApplyArg, LimitArg, OffsetArg, UnsureArg
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

TOOLSET = "python"

PathArg = Annotated[str, Field(description="A file defining or using the symbol.")]
NameArg = Annotated[str, Field(description="As defined in path (Class.method); or line and column of a use.")]
LineArg = Annotated[int, Field(ge=0)]
ColumnArg = Annotated[int, Field(ge=0)]


def _target(ctx: ToolContext, path: str, name: str, line: int, column: int) -> Result[tuple[Target, Path]]:
    """The symbol (by its dotted name defined in the file, or a line and column of any use) and its index root."""
    resolved = ctx.workspace.resolve(path)
    if not resolved.ok:
        return _failed(resolved)
    real = resolved.data
    display = ctx.workspace.display(real)
    if real.suffix not in (".py", ".pyi"):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is not a Python file",
                           "Give the .py file where the symbol is defined or used.")
    loaded = read_text(real, display, ctx.workspace)
    if not loaded.ok:
        return _failed(loaded)
    root = index_root_for(ctx.workspace, real)
    if not real.is_relative_to(root):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is outside the workspace roots",
                           "Give a file under a root.")
    text = loaded.data.text
    found = find_target(real, display, text, name, line, column,
                        lambda dotted, lines: _by_name(text, lines, display, dotted, real))
    return found.cast((found.data, root)) if found.ok else _failed(found)


def _by_name(text: str, lines: list[str], display: str, name: str, real: Path) -> Result[Target]:
    try:
        module = parse_module(text)
    except SyntaxError as exc:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} does not parse: {exc.msg} (line {exc.lineno})",
                           "Fix the syntax first (py_check_syntax), or point at the name with line and column.")
    found = lookup_one(module, name, display, definitions=True, variables=True)
    if not found.ok or found.data is None:
        return _failed(found)
    symbol = found.data
    short = symbol.name
    keyword = r"(?:async\s+def|def|class)\s+" if symbol.kind.is_definition else ""
    for number in range(symbol.node.lineno, symbol.end_line + 1):
        match = re.search(rf"{keyword}\b({re.escape(short)})\b", lines[number - 1])
        if match:
            column = len(lines[number - 1][:match.start(1)]) + 1
            return Result.success(Target(real, display, number, column, short, f"{name} ({display})"))
    return Result.fail(ErrorKind.INTERNAL, f"the name of {name} was not found on its lines in {display}")


def _failed(result: Result[Any]) -> Result[Any]:
    return result.cast(None)


def _opened(ctx: ToolContext, root: Path) -> Result[SymbolIndex]:
    """The refreshed index of the symbol's root."""
    opened = SymbolIndex.open(ctx.workspace, root)
    if not opened.ok:
        return opened
    index = opened.data
    try:
        index.refresh(cancelled=ctx.cancelled, ctags=ctx.services.get(IndexSettings).ctags)
    except Exception:
        index.close()
        raise
    return Result.success(index)


@tool(toolset=TOOLSET, read_only=True, title="Find references of a Python symbol", output=ReferenceReport,
      examples=[{"path": "src/inventory/store.py", "name": "Store.low_stock"},
                {"path": "src/inventory/models.py", "name": "Item", "limit": 20}])
def py_find_references(
    ctx: ToolContext,
    path: PathArg,
    name: NameArg = "",
    line: LineArg = 0,
    column: ColumnArg = 0,
    offset: OffsetArg = 0,
    limit: LimitArg = 200,
) -> Result[ReferenceReport]:
    """Every reference of one Python symbol project-wide, through any import (basedpyright, else jedi), not of
    every same name; the rest come back unsure."""
    found = _target(ctx, path, name, line, column)
    if not found.ok:
        return _failed(found)
    target, root = found.data
    opened = _opened(ctx, root)
    if not opened.ok:
        return _failed(opened)
    with opened.data as index:
        return python_answers.references(ctx, index, target, offset, limit)


def _renaming(ctx: ToolContext, path: str, new_name: str, name: str, line: int, column: int,
              then: Callable[[SymbolIndex, Target, str], Result[Any]]) -> Result[Any]:
    """Find the symbol, check the new name, and hand both with the refreshed index to ``then``."""
    found = _target(ctx, path, name, line, column)
    if not found.ok:
        return _failed(found)
    target, root = found.data
    checked = python_refs.check_new_name(new_name, target.word)
    if not checked.ok:
        return _failed(checked)
    opened = _opened(ctx, root)
    if not opened.ok:
        return _failed(opened)
    with opened.data as index:
        return then(index, target, checked.data)


def plan_rename(ctx: ToolContext, path: str, new_name: str, name: str = "", line: int = 0,
                column: int = 0) -> Result[python_answers.RenamePlan]:
    """Every file a scope-aware rename changes and its new text (through the gate; nothing is written)."""
    return _renaming(ctx, path, new_name, name, line, column,
                     lambda index, target, new: python_answers.plan_rename(ctx, index, target, new))


@tool(toolset=TOOLSET, destructive=True, title="Rename a Python symbol everywhere", output=RenameReport,
      write_paths=(),
      examples=[{"path": "src/inventory/store.py", "name": "Store.low_stock", "new_name": "items_to_reorder"}])
def py_rename_symbol(
    ctx: ToolContext,
    path: PathArg,
    new_name: str,
    name: NameArg = "",
    line: LineArg = 0,
    column: ColumnArg = 0,
    apply: ApplyArg = False,
    unsure: UnsureArg = "refuse",
) -> Result[RenameReport]:
    """Rename a Python symbol and its references project-wide (basedpyright, else jedi): the diff, or with
    apply=true one checkpoint (undo reverts it)."""
    return _renaming(ctx, path, new_name, name, line, column,
                     lambda index, target, new: python_answers.rename(ctx, index, target, new, apply, unsure))
