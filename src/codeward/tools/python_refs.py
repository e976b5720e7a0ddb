"""``py_find_references`` and ``py_rename_symbol``: scope-aware, across the project, through the gate.

The symbol is named the way the other ``py_*`` tools name it (a dotted name defined in a file)
or pointed at (line and column of any of its uses). basedpyright answers once it runs (in the
sandbox), jedi while it starts or where it is not installed (:mod:`codeward.lsp.python_answers`);
the symbol index lists every occurrence of the name in code, so that those neither ties to the
symbol are listed as unsure. Every file read or shown passes the gate; a rename writes only when
every file it changes may be written and nothing is unsure (or ``unsure`` says what to do), all
of them or none, as one checkpoint. ``rename_symbol``/``find_references`` give Python files the
same answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from codeward.catalog import tool
from codeward.code import python_refs
from codeward.code.python_symbols import lookup_one, parse_module
from codeward.code.symbol_index import SymbolIndex, index_root_for, index_settings_of
from codeward.code.textfile import read_text
from codeward.context import ToolContext
from codeward.lsp import python_answers
from codeward.lsp.answers import Target
from codeward.lsp.reports import ReferenceReport, RenameReport
from codeward.lsp.tool_args import ApplyArg, LimitArg, OffsetArg, UnsureArg
from codeward.result import ErrorKind, Result

TOOLSET = "python"

PathArg = Annotated[str, Field(description="The Python file where the symbol is defined or used.")]
NameArg = Annotated[str, Field(description="The symbol's dotted name as defined in that file (a function, a "
                                           "class, Class.method, a module or class variable); or give line and "
                                           "column instead.")]
LineArg = Annotated[int, Field(ge=0, description="Instead of name: the 1-based line of any use of the symbol.")]
ColumnArg = Annotated[int, Field(ge=0, description="With line: the 1-based column of the name on that line.")]


@dataclass(frozen=True)
class _Target:
    real: Path
    root: Path
    line: int
    column: int
    name: str
    label: str


def _target(ctx: ToolContext, path: str, name: str, line: int, column: int) -> Result[_Target]:
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
    if name.strip():
        if line or column:
            return Result.fail(ErrorKind.INVALID_INPUT, "give name, or line and column, not both",
                               "Use name for a definition in the file, line/column for any use.")
        return _by_name(text, display, name.strip(), real, root)
    if not line or not column:
        return Result.fail(ErrorKind.INVALID_INPUT, "say which symbol: name, or line and column",
                           "name is the symbol's dotted name defined in the file; line/column (1-based) point at "
                           "any use of it.")
    lines = text.split("\n")
    if line > len(lines):
        return Result.fail(ErrorKind.INVALID_INPUT, f"line {line} is past the end of {display} ({len(lines)} lines)",
                           "Give a line inside the file.")
    word = _word_at(lines[line - 1], column)
    if word is None:
        return Result.fail(ErrorKind.INVALID_INPUT, f"line {line}, column {column} of {display} is not on a name",
                           f"The line is {lines[line - 1].strip()!r}; point at the name itself (column is 1-based).")
    return Result.success(_Target(real, root, line, column, word, f"{word} ({display}:{line}:{column})"))


def _by_name(text: str, display: str, name: str, real: Path, root: Path) -> Result[_Target]:
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
    lines = text.split("\n")
    for number in range(symbol.node.lineno, symbol.end_line + 1):
        match = re.search(rf"{keyword}\b({re.escape(short)})\b", lines[number - 1])
        if match:
            column = len(lines[number - 1][:match.start(1)]) + 1
            return Result.success(_Target(real, root, number, column, short, f"{name} ({display})"))
    return Result.fail(ErrorKind.INTERNAL, f"the name of {name} was not found on its lines in {display}")


def _word_at(line: str, column: int) -> str | None:
    for match in re.finditer(r"(?!\d)\w+", line):
        if match.start() < column <= match.end():
            return match.group(0)
    return None


def _failed(result: Result[Any]) -> Result[Any]:
    return result.cast(None)


def _opened(ctx: ToolContext, found: _Target) -> Result[tuple[SymbolIndex, Target]]:
    """The refreshed index of the symbol's root, and the symbol as the engines take it."""
    opened = SymbolIndex.open(ctx.workspace, found.root)
    if not opened.ok:
        return _failed(opened)
    index = opened.data
    try:
        index.refresh(cancelled=ctx.cancelled, ctags=index_settings_of(ctx.services).ctags)
    except Exception:
        index.close()
        raise
    return Result.success((index, Target(found.real, ctx.workspace.display(found.real), found.line, found.column,
                                         found.name, found.label)))


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
    """Every reference of one Python symbol across the project, through any import (basedpyright when installed,
    else jedi): uses of that symbol, not of every symbol with the same name. Occurrences of the name the engine
    cannot tie to the symbol are listed as unsure."""
    found = _target(ctx, path, name, line, column)
    if not found.ok:
        return _failed(found)
    opened = _opened(ctx, found.data)
    if not opened.ok:
        return _failed(opened)
    index, target = opened.data
    with index:
        return python_answers.references(ctx, index, target, offset, limit)


@tool(toolset=TOOLSET, destructive=True, title="Rename a Python symbol everywhere", output=RenameReport,
      write_paths=(),
      examples=[{"path": "src/inventory/store.py", "name": "Store.low_stock", "new_name": "items_to_reorder"}])
def py_rename_symbol(
    ctx: ToolContext,
    path: PathArg,
    new_name: Annotated[str, Field(description="The new name (an identifier).")],
    name: NameArg = "",
    line: LineArg = 0,
    column: ColumnArg = 0,
    apply: ApplyArg = False,
    unsure: UnsureArg = "refuse",
) -> Result[RenameReport]:
    """Rename a Python symbol and every reference to it across the project (basedpyright when installed, else
    jedi). Shows the unified diff unless apply=true; then every file is written, all or none, as one checkpoint
    (undo reverts it)."""
    found = _target(ctx, path, name, line, column)
    if not found.ok:
        return _failed(found)
    target = found.data
    checked = python_refs.check_new_name(new_name, target.name)
    if not checked.ok:
        return _failed(checked)
    opened = _opened(ctx, target)
    if not opened.ok:
        return _failed(opened)
    index, engine_target = opened.data
    with index:
        return python_answers.rename(ctx, index, engine_target, checked.data, apply, unsure)
