"""Navigation and renames through language servers: definition, references, rename, info, diagnostics.

Python, TypeScript/JavaScript, Go and C/C++ files are answered by their language server
(basedpyright, typescript-language-server, gopls, clangd), each started on first use in the
sandbox and kept; until it is ready — or where it is not installed — the symbol index answers by
name, marked so, with a note saying why (:mod:`codeward.engines.lsp.answers`). Python references and
renames share ``py_find_references``/``py_rename_symbol``'s engines (jedi while basedpyright
starts). The ``lsp`` toolset is not served by default; ``[server] toolsets`` turns it on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from codeward.config.index import IndexSettings
from codeward.engines.code_intel.symbol_index import SymbolIndex, index_root_for
from codeward.engines.files.textfile import read_text
from codeward.engines.lsp import answers, python_answers
from codeward.engines.lsp.answers import Navigation, Target, find_target, indexed_name
from codeward.engines.lsp.reports import DefinitionReport, DiagnosticsReport, ReferenceReport, RenameReport, SymbolInfo
from codeward.engines.lsp.servers import spec_for
from codeward.engines.lsp.tool_args import ApplyArg, LimitArg, OffsetArg, UnsureArg
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

TOOLSET = "lsp"

PathArg = Annotated[str, Field(description="A file defining or using the symbol.")]
NameArg = Annotated[str, Field(description="As defined in path (Class.method); or line and column of a use.")]
LineArg = Annotated[int, Field(ge=0)]
ColumnArg = Annotated[int, Field(ge=0)]


def _failed(result: Result[Any]) -> Result[Any]:
    return result.cast(None)


def _located(ctx: ToolContext, path: str, name: str, line: int, column: int,
             *, need_symbol: bool = True) -> Result[tuple[SymbolIndex, Target, str]]:
    """The file (read through the gate), the refreshed index of its root, and the symbol asked about."""
    resolved = ctx.workspace.resolve(path)
    if not resolved.ok:
        return _failed(resolved)
    real = resolved.data
    display = ctx.workspace.display(real)
    loaded = read_text(real, display, ctx.workspace)
    if not loaded.ok:
        return _failed(loaded)
    root = index_root_for(ctx.workspace, real)
    if not real.is_relative_to(root):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{display} is outside the workspace roots",
                           "Give a file under a root.")
    opened = SymbolIndex.open(ctx.workspace, root)
    if not opened.ok:
        return _failed(opened)
    index = opened.data
    try:
        index.refresh(cancelled=ctx.cancelled, ctags=ctx.services.get(IndexSettings).ctags)
        text = loaded.data.text
        if not need_symbol:
            return Result.success((index, Target(real, display, 1, 1, "", display), text))
        target = find_target(real, display, text, name, line, column, indexed_name(index, real, display))
        if not target.ok:
            index.close()
            return _failed(target)
    except Exception:
        index.close()
        raise
    return Result.success((index, target.data, text))


def _is_python(path: Path) -> bool:
    return path.suffix in (".py", ".pyi")


@tool(toolset=TOOLSET, read_only=True, title="Go to a symbol's definition", output=DefinitionReport,
      examples=[{"path": "web/cart.js", "line": 17, "column": 16}, {"path": "src/inventory/store.py", "name": "Store"}])
def find_definition(ctx: ToolContext, path: PathArg, name: NameArg = "", line: LineArg = 0,
                    column: ColumnArg = 0) -> Result[DefinitionReport]:
    """Where a symbol is defined, through imports, aliases and types (language server)."""
    located = _located(ctx, path, name, line, column)
    if not located.ok:
        return _failed(located)
    index, target, _text = located.data
    with index:
        return answers.definitions(Navigation.open(ctx, index, target))


@tool(toolset=TOOLSET, read_only=True, title="Find every reference of a symbol", output=ReferenceReport,
      examples=[{"path": "web/cart.js", "name": "Cart.add"}, {"path": "native/ring_buffer.c", "name": "ring_push",
                                                              "limit": 20}])
def find_references(ctx: ToolContext, path: PathArg, name: NameArg = "", line: LineArg = 0, column: ColumnArg = 0,
                    offset: OffsetArg = 0, limit: LimitArg = 200) -> Result[ReferenceReport]:
    """Every use of one symbol project-wide (language server), not of every same name; the rest come back
    unsure."""
    located = _located(ctx, path, name, line, column)
    if not located.ok:
        return _failed(located)
    index, target, _text = located.data
    with index:
        if _is_python(target.real):
            return python_answers.references(ctx, index, target, offset, limit)
        return answers.references(Navigation.open(ctx, index, target), offset, limit)


@tool(toolset=TOOLSET, destructive=True, title="Rename a symbol across the project", output=RenameReport,
      write_paths=(), examples=[{"path": "web/cart.js", "name": "Cart.total", "new_name": "sum"}])
def rename_symbol(ctx: ToolContext, path: PathArg, new_name: str,
                  name: NameArg = "", line: LineArg = 0, column: ColumnArg = 0, apply: ApplyArg = False,
                  unsure: UnsureArg = "refuse") -> Result[RenameReport]:
    """Rename a symbol and its references project-wide (language server): the diff, or with apply=true one
    checkpoint (undo reverts it); a name-based plan is never applied."""
    located = _located(ctx, path, name, line, column)
    if not located.ok:
        return _failed(located)
    index, target, _text = located.data
    spec = spec_for(target.real)
    checked = answers.check_new_name(new_name, target.word, spec.family if spec is not None else "")
    if not checked.ok:
        index.close()
        return _failed(checked)
    with index:
        if _is_python(target.real):
            return python_answers.rename(ctx, index, target, checked.data, apply, unsure)
        return answers.rename(Navigation.open(ctx, index, target), checked.data, apply, unsure)


@tool(toolset=TOOLSET, read_only=True, title="A symbol's type and documentation", output=SymbolInfo,
      examples=[{"path": "web/cart.js", "name": "formatTotal"}])
def symbol_info(ctx: ToolContext, path: PathArg, name: NameArg = "", line: LineArg = 0,
                column: ColumnArg = 0) -> Result[SymbolInfo]:
    """A symbol's type, signature, docs and definition (language server hover)."""
    located = _located(ctx, path, name, line, column)
    if not located.ok:
        return _failed(located)
    index, target, _text = located.data
    with index:
        return answers.symbol_info(Navigation.open(ctx, index, target))


@tool(toolset=TOOLSET, read_only=True, title="A file's errors and warnings", output=DiagnosticsReport,
      examples=[{"path": "native/ring_buffer.c"}])
def get_diagnostics(ctx: ToolContext, path: PathArg) -> Result[DiagnosticsReport]:
    """Type errors, unresolved names and warnings of one file (language server; syntax errors alone while it
    starts or where none is installed)."""
    located = _located(ctx, path, "", 0, 0, need_symbol=False)
    if not located.ok:
        return _failed(located)
    index, target, text = located.data
    with index:
        return answers.diagnostics(Navigation.open(ctx, index, target), text)
