"""Python structure tools: read and edit definitions by name, with stdlib ``ast`` positions.

Names use dot notation (``Class.method``, ``Outer.Inner``). Reads of a name defined several
times (overloads, if/else variants) return every occurrence; writes need it unique or an
``occurrence``. Every write re-parses the new text and refuses — changing nothing — an edit
that would leave a syntax error; files keep their encoding, BOM and line endings.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from codeward.engines.code_intel.definition_swap import Defined, mismatch
from codeward.engines.code_intel.python_rewrite import (
    REGION_END,
    REGION_START,
    AnchorType,
    InsertionPoint,
    cut_lines,
    insert_block,
    insertion_point,
    region_wrap,
    removal_lines,
    separation_for,
    skeleton,
    statement_region,
)
from codeward.engines.code_intel.python_symbols import (
    DEFINITION_NODES,
    DefinitionNode,
    ParseCache,
    PythonModule,
    Symbol,
    SymbolKind,
    check_edit,
    first_definition,
    header_span,
    lookup,
    lookup_one,
    name_problem,
    nested_blocks,
    normalize_block,
    parse_module,
    reindent,
    signature_text,
    syntax_problem,
    top_level_definitions,
)
from codeward.engines.files.planned_writes import write_all
from codeward.engines.files.textfile import TextFile, read_text, write_text
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.python_parse import parse_python
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access, Workspace
from codeward.tools.arguments import NewDefinition, Occurrence, PySymbol
from codeward.tools.python_refs import plan_rename

AnchorArg = Annotated[Literal["start", "end", "before", "after"], Field(
    description="start/end: of the file, or of the class anchor_symbol names; before/after: the definition it "
                "names.")]
AnchorSymbolArg = str
RenameArg = Annotated[bool, Field(description="A new name in the text renames the symbol and its callers (else "
                                              "refused).")]
TOOLSET = "python"


# -- structured outputs ---------------------------------------------------------------------


class SymbolText(BaseModel):
    """One occurrence of a symbol and the text asked for (source, signature, docstring…)."""

    name: str
    kind: str
    start_line: int
    end_line: int
    text: str | None


class SymbolTexts(BaseModel):
    """Every occurrence of a name in a file, in file order."""

    path: str
    name: str
    what: str
    occurrences: list[SymbolText]

    def render(self) -> str:
        if len(self.occurrences) == 1:
            only = self.occurrences[0]
            return only.text if only.text is not None else f"{self.name} has no {self.what}."
        parts = [f"{self.name!r} is defined {len(self.occurrences)} times in {self.path}; "
                 "pass occurrence=N to pick one."]
        for index, occ in enumerate(self.occurrences, 1):
            body = occ.text if occ.text is not None else f"(no {self.what})"
            parts.append(f"--- occurrence {index}: {occ.kind}, lines {occ.start_line}-{occ.end_line} ---\n"
                         + body.rstrip("\n"))
        return "\n".join(parts)


class OutlineEntry(BaseModel):
    name: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    depth: int
    decorators: list[str]


class Outline(BaseModel):
    path: str
    entries: list[OutlineEntry]

    def render(self) -> str:
        if not self.entries:
            return f"{self.path} defines no classes or functions."
        rows = []
        for entry in self.entries:
            label = "[" + entry.kind.title() + "]"
            decorated = "  " + " ".join("@" + d for d in entry.decorators) if entry.decorators else ""
            rows.append(f"{'  ' * entry.depth}{label} {entry.name} (Lines {entry.start_line}-{entry.end_line})"
                        f"{decorated}")
        return "\n".join(rows)


class ImportEntry(BaseModel):
    line: int
    statement: str
    module: str
    names: list[str]
    level: int
    where: str
    """'module', 'conditional' (inside if/try at module level) or 'in <function>'."""


class Imports(BaseModel):
    path: str
    imports: list[ImportEntry]
    stdlib: list[str]
    external: list[str]
    relative: list[str]

    def render(self) -> str:
        if not self.imports:
            return f"{self.path} imports nothing."
        rows = [f"Imports in {self.path} ({len(self.imports)} statements):"]
        for entry in self.imports:
            where = "" if entry.where == "module" else f"   [{entry.where}]"
            rows.append(f"  L{entry.line:<5} {entry.statement}{where}")
        rows.append("Standard library: " + (", ".join(self.stdlib) or "none"))
        rows.append("Third-party / project: " + (", ".join(self.external) or "none"))
        if self.relative:
            rows.append("Relative: " + ", ".join(self.relative))
        return "\n".join(rows)


class SyntaxReport(BaseModel):
    path: str
    valid: bool
    line: int | None = None
    column: int | None = None
    message: str = ""
    detail: str = ""

    def render(self) -> str:
        return self.detail


# -- loading and writing --------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedPython:
    real: Path
    display: str
    file: TextFile
    module: PythonModule
    workspace: Workspace | None = None
    """The gate the file was resolved through: writes check the opened file against it again."""


def _parse_cache(ctx: ToolContext) -> ParseCache:
    return ctx.services.runtimes.get(ParseCache, ParseCache)


def _read(ctx: ToolContext, path: str, access: Access, param: str = "path") -> Result[tuple[Path, TextFile] | None]:
    resolved = ctx.workspace.resolve(path, access, param=param)
    if not resolved.ok:
        return resolved.cast(None)
    display = ctx.workspace.display(resolved.data)
    loaded = read_text(resolved.data, display, ctx.workspace)
    if not loaded.ok:
        return loaded.cast(None)
    return Result.success((resolved.data, loaded.data))


def load_python(
    ctx: ToolContext, path: str, access: Access = Access.READ, param: str = "path"
) -> Result[LoadedPython | None]:
    """Resolve, read and parse a Python file; a file with a syntax error is reported, not guessed at."""
    read = _read(ctx, path, access, param)
    if not read.ok or read.data is None:
        return read.cast(None)
    real, text_file = read.data
    display = ctx.workspace.display(real)
    try:
        module = _parse_cache(ctx).parse(text_file.text)
    except SyntaxError as exc:
        problem = syntax_problem(exc, text_file.text)
        not_python = "" if real.suffix in (".py", ".pyi", ".pyw") else " (is it a Python file?)"
        return Result.fail(ErrorKind.INVALID_INPUT, f"cannot parse {display}{not_python}: {problem.render(display)}",
                           "Fix the syntax error first (edit_file or set_file_slice), then retry; "
                           "py_check_syntax shows where it is.")
    return Result.success(LoadedPython(real, display, text_file, module, ctx.workspace))


def _refusal(what: str, display: str, new_text: str, original: PythonModule | None) -> Result[str] | None:
    problem = check_edit(new_text, original)
    if problem is None:
        return None
    return Result.fail(ErrorKind.INVALID_INPUT,
                       f"refused: {what} would leave a syntax error in {problem.render(display)}",
                       f"Nothing was written. Fix the new code (valid Python, indented for its place) and retry; "
                       f"{display} is unchanged.", data="")


def _commit(loaded: LoadedPython, new_text: str, what: str, done: str) -> Result[str]:
    """Validate ``new_text`` and write it atomically (or refuse and write nothing)."""
    if new_text == loaded.module.text:
        return Result.success(f"No change: {what} leaves {loaded.display} as it was.")
    refused = _refusal(what, loaded.display, new_text, loaded.module)
    if refused:
        return refused
    written = write_text(loaded.real, loaded.file, new_text, loaded.display, loaded.workspace)
    if not written.ok:
        return written.cast("")
    return Result.success(done)


def _symbol_texts(ctx: ToolContext, path: str, name: str, occurrence: int | None, what: str,
                  text_of: Callable[[PythonModule, Symbol], str | None], *,
                  variables: bool = False) -> Result[SymbolTexts | None]:
    """``text_of`` each definition named ``name`` (each declaration, with ``variables``), as a read tool answers."""
    loaded = load_python(ctx, path)
    if not loaded.ok or loaded.data is None:
        return loaded.cast(None)
    module, display = loaded.data.module, loaded.data.display
    found = lookup(module, name, display, occurrence=occurrence, definitions=not variables, variables=variables)
    if not found.ok:
        return found.cast(None)
    items = [SymbolText(name=s.qualname, kind=s.kind.value, start_line=s.start_line, end_line=s.end_line,
                        text=text_of(module, s)) for s in found.data]
    return Result.success(SymbolTexts(path=display, name=name, what=what, occurrences=items))


def load_python_symbol(ctx: ToolContext, path: str, name: str, occurrence: int | None, *, variables: bool = False,
                 param: str = "path") -> Result[tuple[LoadedPython, Symbol] | None]:
    """Load a file for writing and pick the one definition (or, with ``variables``, declaration) to edit."""
    loaded = load_python(ctx, path, Access.WRITE, param)
    if not loaded.ok or loaded.data is None:
        return loaded.cast(None)
    found = lookup_one(loaded.data.module, name, loaded.data.display, occurrence=occurrence,
                       definitions=not variables, variables=variables)
    if not found.ok or found.data is None:
        return found.cast(None)
    return Result.success((loaded.data, found.data))


def _definition_node(symbol: Symbol) -> DefinitionNode:
    node = symbol.node
    assert isinstance(node, DEFINITION_NODES)
    return node


def _line_span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


# -- read tools -----------------------------------------------------------------------------


@tool(toolset=TOOLSET, read_only=True, title="Python skeleton",
      examples=[{"path": "src/inventory/store.py"}])
def py_get_skeleton(ctx: ToolContext, path: str) -> Result[str]:
    """A Python file with function bodies elided: imports, classes, signatures, docstrings."""
    loaded = load_python(ctx, path)
    if not loaded.ok or loaded.data is None:
        return loaded.cast("")
    return Result.success(skeleton(loaded.data.module))


@tool(toolset=TOOLSET, read_only=True, title="Python outline", output=Outline,
      examples=[{"path": "src/inventory/models.py"}])
def py_get_code_outline(ctx: ToolContext, path: str) -> Result[Outline | None]:
    """A Python file's classes, functions and methods, nested, with their lines."""
    loaded = load_python(ctx, path)
    if not loaded.ok or loaded.data is None:
        return loaded.cast(None)
    entries = [
        OutlineEntry(name=s.name, qualname=s.qualname, kind=s.kind.value, start_line=s.start_line,
                     end_line=s.end_line, depth=s.depth, decorators=[_decorator_name(d) for d in s.decorators])
        for s in loaded.data.module.definitions if not s.in_function
    ]
    return Result.success(Outline(path=loaded.data.display, entries=entries))


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return ast.unparse(target)


@tool(toolset=TOOLSET, read_only=True, title="Python definition source", output=SymbolTexts,
      examples=[{"path": "src/inventory/models.py", "name": "Item.total_price"}])
def py_get_definition(ctx: ToolContext, path: str, name: PySymbol,
                      occurrence: Occurrence = None) -> Result[SymbolTexts | None]:
    """One class, function or method, decorators included, exactly as written."""
    return _symbol_texts(ctx, path, name, occurrence, "source",
                         lambda module, s: module.source.span_lines(s.start_line, s.end_line))


@tool(toolset=TOOLSET, read_only=True, title="Python signature", output=SymbolTexts,
      examples=[{"path": "src/inventory/store.py", "name": "discard_expired"}])
def py_get_signature(ctx: ToolContext, path: str, name: PySymbol,
                     occurrence: Occurrence = None) -> Result[SymbolTexts | None]:
    """A def's or class's header, through its colon, as written."""
    return _symbol_texts(ctx, path, name, occurrence, "signature", signature_text)


@tool(toolset=TOOLSET, read_only=True, title="Python docstring", output=SymbolTexts,
      examples=[{"path": "src/inventory/models.py", "name": "Perishable"}])
def py_get_docstring(ctx: ToolContext, path: str,
                     name: Annotated[str, Field(description="A class, function or Class.method; '' for the "
                                                "module's.")] = "",
                     occurrence: Occurrence = None) -> Result[SymbolTexts | None]:
    """A module's, class's or function's docstring, cleaned like inspect.getdoc."""
    if name.strip():
        return _symbol_texts(ctx, path, name, occurrence, "docstring",
                             lambda _, s: ast.get_docstring(_definition_node(s), clean=True))
    loaded = load_python(ctx, path)
    if not loaded.ok or loaded.data is None:
        return loaded.cast(None)
    module, display = loaded.data.module, loaded.data.display
    doc = ast.get_docstring(module.tree, clean=True)
    total = len(module.source.lines)
    item = SymbolText(name="<module>", kind="module", start_line=1, end_line=max(total, 1), text=doc)
    return Result.success(SymbolTexts(path=display, name=display, what="module docstring", occurrences=[item]))


@tool(toolset=TOOLSET, read_only=True, title="Python class summary",
      examples=[{"path": "src/inventory/store.py", "name": "Store"}])
def py_get_class_summary(ctx: ToolContext, path: str,
                         name: PySymbol,
                         occurrence: Occurrence = None) -> Result[str]:
    """A class at a glance: header, docstring, method signatures, nested classes, class variables."""
    loaded = load_python(ctx, path)
    if not loaded.ok or loaded.data is None:
        return loaded.cast("")
    module, display = loaded.data.module, loaded.data.display
    found = lookup(module, name, display, occurrence=occurrence)
    if not found.ok:
        return found.cast("")
    classes = [s for s in found.data if s.kind is SymbolKind.CLASS]
    if not classes:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{name!r} in {display} is a {found.data[0].kind.value}, "
                           "not a class", "Use py_get_signature or py_get_definition for functions.", data="")
    return Result.success("\n\n".join(_class_summary(module, c) for c in classes))


def _class_summary(module: PythonModule, symbol: Symbol) -> str:
    node = _definition_node(symbol)
    rows = [f"{_one_line(signature_text(module, symbol))}    # {display_lines(symbol)}"]
    doc = ast.get_docstring(node, clean=True)
    rows.append(_indent_doc(doc) if doc else "    (no docstring)")
    members = module.members(symbol.qualname)
    methods = [m for m in members if m.kind is not SymbolKind.CLASS]
    nested = [m for m in members if m.kind is SymbolKind.CLASS]
    rows.append(f"Methods ({len(methods)}):" if methods else "Methods: none")
    for method in methods:
        decorators = "".join(f"@{_decorator_name(d)} " for d in method.decorators)
        rows.append(f"  L{method.start_line:<5} {decorators}{_one_line(signature_text(module, method))}")
    if nested:
        rows.append("Nested classes: " + ", ".join(f"{c.name} ({display_lines(c)})" for c in nested))
    variables = [v for v in module.variables if v.parent == symbol.qualname]
    if variables:
        rows.append("Class variables: " + ", ".join(f"{v.name} (line {v.start_line})" for v in variables))
    return "\n".join(rows)


def display_lines(symbol: Symbol) -> str:
    return _line_span(symbol.start_line, symbol.end_line)


def _one_line(text: str) -> str:
    joined = " ".join(part.strip() for part in text.splitlines())
    return joined.replace("( ", "(").replace(" )", ")").replace("[ ", "[").replace(" ]", "]").replace(",)", ")")


def _indent_doc(doc: str) -> str:
    lines = doc.splitlines()
    if len(lines) == 1:
        return f'    """{lines[0]}"""'
    return "\n".join(("    " + line).rstrip() for line in ['"""' + lines[0], *lines[1:], '"""'])


@tool(toolset=TOOLSET, read_only=True, title="Python variable declaration", output=SymbolTexts,
      examples=[{"path": "src/inventory/models.py", "name": "TAX_RATE"}])
def py_get_var_declaration(ctx: ToolContext, path: str,
                           name: PySymbol,
                           occurrence: Occurrence = None) -> Result[SymbolTexts | None]:
    """The statement declaring a module or class variable (x = ..., x: T = ...)."""
    return _symbol_texts(ctx, path, name, occurrence, "declaration", _declaration_text, variables=True)


def _declaration_text(module: PythonModule, symbol: Symbol) -> str:
    start, end, _ = statement_region(module, symbol.node)
    return module.text[start:end]


@tool(toolset=TOOLSET, read_only=True, title="Python imports", output=Imports,
      examples=[{"path": "src/inventory/store.py"}])
def py_get_imports(ctx: ToolContext, path: str) -> Result[Imports | None]:
    """A Python file's imports with line and scope, and the modules it needs (stdlib, external, relative)."""
    loaded = load_python(ctx, path)
    if not loaded.ok or loaded.data is None:
        return loaded.cast(None)
    entries: list[ImportEntry] = []
    _collect_imports(loaded.data.module.tree.body, "module", entries)
    entries.sort(key=lambda e: e.line)
    stdlib: set[str] = set()
    external: set[str] = set()
    relative: set[str] = set()
    for entry in entries:
        if entry.level:
            relative.add("." * entry.level + entry.module)
            continue
        targets = [entry.module] if entry.module else entry.names
        for target in targets:
            top = target.split(".")[0]
            (stdlib if top in sys.stdlib_module_names or top == "__future__" else external).add(top)
    return Result.success(Imports(path=loaded.data.display, imports=entries, stdlib=sorted(stdlib),
                                  external=sorted(external), relative=sorted(relative)))


def _collect_imports(body: list[ast.stmt], where: str, out: list[ImportEntry]) -> None:
    for stmt in body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                out.append(ImportEntry(line=stmt.lineno, statement=_import_text(alias), module=alias.name,
                                       names=[], level=0, where=where))
        elif isinstance(stmt, ast.ImportFrom):
            out.append(ImportEntry(line=stmt.lineno, statement=ast.unparse(stmt), module=stmt.module or "",
                                   names=[a.name for a in stmt.names], level=stmt.level, where=where))
        elif isinstance(stmt, DEFINITION_NODES):
            inner = f"in {stmt.name}" if where in ("module", "conditional") else f"{where}.{stmt.name}"
            _collect_imports(stmt.body, inner, out)
        else:
            nested = "conditional" if where == "module" else where
            for block in nested_blocks(stmt):
                _collect_imports(block, nested, out)


def _import_text(alias: ast.alias) -> str:
    return f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")


@tool(toolset=TOOLSET, read_only=True, title="Python syntax check", output=SyntaxReport,
      examples=[{"path": "src/inventory/legacy.py"}])
def py_check_syntax(ctx: ToolContext, path: str) -> Result[SyntaxReport | None]:
    """Whether a file is valid Python (compiled, not run), and where it is not."""
    read = _read(ctx, path, Access.READ)
    if not read.ok or read.data is None:
        return read.cast(None)
    real, text_file = read.data
    display = ctx.workspace.display(real)
    try:
        module = parse_module(text_file.text)
        problem = None if module.compiles else check_edit(text_file.text, None)
    except SyntaxError as exc:
        problem = syntax_problem(exc, text_file.text)
    if problem is not None:
        return Result.success(SyntaxReport(path=display, valid=False, line=problem.line, column=problem.column,
                                           message=problem.message,
                                           detail=f"Syntax error in {problem.render(display)}"))
    lines = len(text_file.text.splitlines())
    return Result.success(SyntaxReport(path=display, valid=True, detail=f"OK: {display} is valid Python ({lines} "
                                       "lines)."))


# -- write tools ----------------------------------------------------------------------------


@tool(toolset=TOOLSET, title="Replace a Python definition",
      examples=[
          {
              "path": "src/inventory/models.py",
              "name": "Item.restock",
              "new_content": ("def restock(self, count: int) -> None:\n"
                              "    \"\"\"Add count units to the shelf (count must be positive).\"\"\"\n"
                              "    if count <= 0:\n"
                              "        raise ValueError(f\"cannot restock {count} units\")\n"
                              "    self.quantity += count\n"),
          },
      ])
def py_update_definition(ctx: ToolContext, path: str, name: PySymbol,
                         new_content: NewDefinition,
                         occurrence: Occurrence = None, rename: RenameArg = False) -> Result[str]:
    """Replace a class, function or method, decorators included; refused if the file would not parse."""
    picked = load_python_symbol(ctx, path, name, occurrence)
    if not picked.ok or picked.data is None:
        return picked.cast("")
    data, symbol = picked.data
    replaced = _replaced_definition(data.module, symbol, new_content)
    if not replaced.ok or replaced.data == data.module.text:
        return replaced if not replaced.ok else Result.success(
            f"No change: {symbol.qualname} in {data.display} is already exactly that.")
    defined = _defined_in(new_content)
    swapped = mismatch("new_content", symbol.name, defined, kind=symbol.kind.value) if defined is not None else ""
    if swapped:
        other = _the_other_name(defined or [], symbol)
        if rename and other:
            return _rename_then_edit(ctx, data, symbol, other, f"replacing {symbol.qualname}",
                                     lambda module, renamed: _replaced_definition(module, renamed, new_content))
        return _swap_refused(swapped, symbol, other, data.display, "py_update_definition",
                             "to add it beside the old one, use py_add_def")
    new_lines = len(normalize_block(new_content).splitlines())
    return _commit(data, replaced.data, f"replacing {symbol.qualname}",
                   f"Updated {symbol.qualname} in {data.display}: {display_lines(symbol)} replaced by "
                   f"{_line_span(symbol.start_line, symbol.start_line + new_lines - 1)}.")


def _replaced_definition(module: PythonModule, symbol: Symbol, new_content: str) -> Result[str]:
    """The file's text with ``symbol`` (decorators included) replaced by ``new_content``, re-indented."""
    indent = module.source.indentation(symbol.start_line)
    block = reindent(new_content, indent)
    if not block:
        return Result.fail(ErrorKind.INVALID_INPUT, "new_content is empty",
                           "Give the full new definition; to delete it use py_remove_def.", data="")
    source = module.source
    new_text = source.text[: source.line_offset(symbol.start_line)] + block + \
        source.text[source.line_offset(symbol.end_line + 1):]
    if symbol.end_line == len(source.lines) and not source.text.endswith("\n"):
        new_text = new_text.removesuffix("\n")
    return Result.success(new_text)


def _defined_in(content: str) -> list[Defined] | None:
    """What new code defines at its top level (``None`` when it does not parse: the syntax check says why)."""
    try:
        return top_level_definitions(parse_python(reindent(content, "")))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _the_other_name(defined: list[Defined], symbol: Symbol) -> str:
    """The one definition new code gives instead of ``symbol``'s ("" when it is not exactly one def/class)."""
    names = [d.name for d in defined if d.kind != "variable"]
    return names[0] if len(names) == 1 and names[0] != symbol.name else ""


def _swap_refused(problem: str, symbol: Symbol, other: str, display: str, tool_name: str,
                  instead: str) -> Result[str]:
    if other:
        hint = (f"{tool_name} keeps the name {symbol.name}. To rename it to {other} and update its callers, pass "
                f"rename=true (py_rename_symbol's rename, applied with the edit) or call py_rename_symbol first; "
                f"{instead}.")
    else:
        hint = (f"Give a def or class named {symbol.name} (a variable is set with py_set_var_declaration; "
                f"py_remove_def deletes {symbol.name}).")
    return Result.fail(ErrorKind.INVALID_INPUT, f"refused: {problem}; {display} is unchanged", hint, data="")


def _rename_then_edit(ctx: ToolContext, data: LoadedPython, symbol: Symbol, new_name: str, what: str,
                      edit: Callable[[PythonModule, Symbol], Result[str]]) -> Result[str]:
    """Rename ``symbol`` and its references across the project, then make ``edit`` on the renamed
    definition; every file written together or none."""
    if len(data.module.find(symbol.qualname)) > 1:
        return Result.fail(ErrorKind.CONFLICT, f"{symbol.qualname} is defined several times in {data.display}; "
                           "a rename applies to the name, not one occurrence",
                           "Rename with py_rename_symbol first, then update the occurrence.", data="")

    planned = plan_rename(ctx, str(data.real), new_name, name=symbol.qualname)
    if not planned.ok or planned.data is None:
        return Result(data="", errors=[replace(e, hint=(e.hint + " " if e.hint else "") +
                                                f"Nothing was changed; {data.display} is as it was.")
                                       for e in planned.errors])
    plan = planned.data
    steps = list(plan.files)
    index = next((i for i, step in enumerate(steps) if step.real == data.real), None)
    if index is None:
        return Result.fail(ErrorKind.INTERNAL, f"the rename of {symbol.qualname} does not change {data.display}",
                           data="")
    renamed_text = steps[index].new_text
    renamed = parse_module(renamed_text)
    new_qualname = f"{symbol.parent}.{new_name}" if symbol.parent else new_name
    found = lookup_one(renamed, new_qualname, data.display)
    if not found.ok or found.data is None:
        return found.cast("")
    edited = edit(renamed, found.data)
    if not edited.ok:
        return edited
    refused = _refusal(what, data.display, edited.data, renamed)
    if refused:
        return refused
    steps[index] = replace(steps[index], new_text=edited.data)
    written = write_all(ctx, steps, held={data.real})
    if not written.ok:
        return written.cast("")
    others = [step.display for step in steps if step.real != data.real]
    where = f" and its references in {len(others)} other file{'s' if len(others) != 1 else ''} " \
            f"({', '.join(others)})" if others else ""
    return Result.success(f"Renamed {symbol.qualname} to {new_name}{where} (py_rename_symbol's rename), then "
                          f"{what.replace(symbol.qualname, new_qualname)} in {data.display}.",
                          *plan.unsure_note())


@tool(toolset=TOOLSET, title="Replace a Python signature",
      examples=[
          {
              "path": "src/inventory/models.py",
              "name": "Perishable.expired",
              "new_signature": "def expired(self, today: date, /) -> bool:",
          },
      ])
def py_set_signature(ctx: ToolContext, path: str, name: PySymbol,
                     new_signature: Annotated[str, Field(description="From def or class through the colon; lead "
                                                         "with decorators to replace those too.")],
                     occurrence: Occurrence = None, rename: RenameArg = False) -> Result[str]:
    """Replace only a def's or class's header; the body stays byte for byte."""
    picked = load_python_symbol(ctx, path, name, occurrence)
    if not picked.ok or picked.data is None:
        return picked.cast("")
    data, symbol = picked.data
    replaced = _replaced_signature(data.module, symbol, new_signature)
    if not replaced.ok:
        return replaced
    header = _parse_header(new_signature, isinstance(symbol.node, ast.ClassDef))
    other = header.data[2] if header.ok and header.data is not None else symbol.name
    if other != symbol.name:
        if rename:
            return _rename_then_edit(ctx, data, symbol, other, f"the new signature of {symbol.qualname}",
                                     lambda module, renamed: _replaced_signature(module, renamed, new_signature))
        defined = [Defined(other, "class" if isinstance(symbol.node, ast.ClassDef) else "function")]
        return _swap_refused(mismatch("new_signature", symbol.name, defined, kind=symbol.kind.value), symbol, other,
                             data.display, "py_set_signature", "to add a new definition, use py_add_def")
    return _commit(data, replaced.data, f"the new signature of {symbol.qualname}",
                   f"Set the signature of {symbol.qualname} in {data.display} (line {symbol.node.lineno}).")


def _replaced_signature(module: PythonModule, symbol: Symbol, new_signature: str) -> Result[str]:
    """The file's text with the header of ``symbol`` (and its decorators, if given) replaced."""
    node = _definition_node(symbol)
    header = _parse_header(new_signature, isinstance(node, ast.ClassDef))
    if not header.ok or header.data is None:
        return header.cast("")
    signature, decorated, _name = header.data
    source = module.source
    indent = source.indentation(symbol.start_line)
    start, end = header_span(module, node)
    if decorated:
        start = source.line_offset(symbol.start_line)
        replacement = reindent(signature, indent).rstrip("\n")
    else:
        replacement = reindent(signature, indent).rstrip("\n")[len(indent):]
    return Result.success(source.text[:start] + replacement + source.text[end:])


def _parse_header(raw: str, want_class: bool) -> Result[tuple[str, bool, str] | None]:
    """Check a new header: one def/class line group ending in ':' (added if missing), no body.

    Gives the header, whether it starts with decorators, and the name it defines."""
    text = normalize_block(raw).rstrip("\n")
    if not text:
        return Result.fail(ErrorKind.INVALID_INPUT, "new_signature is empty",
                           "Give the new header, e.g. 'def name(arg: int) -> str:'.")
    dedented = reindent(text, "").rstrip("\n")
    for candidate in (dedented, dedented + ":"):
        try:
            tree = parse_python(candidate + "\n    ...\n")
        except SyntaxError:
            continue
        if len(tree.body) != 1 or not isinstance(tree.body[0], DEFINITION_NODES):
            break
        node = tree.body[0]
        if len(node.body) != 1 or node.body[0].lineno <= len(candidate.splitlines()):
            break
        if isinstance(node, ast.ClassDef) != want_class:
            kind, other = ("class", "def") if want_class else ("def", "class")
            return Result.fail(ErrorKind.INVALID_INPUT, f"new_signature is a {other} header but the symbol is a {kind}",
                               f"Give a {kind} header, or replace the whole thing with py_update_definition.")
        return Result.success((candidate, bool(node.decorator_list), node.name))
    return Result.fail(ErrorKind.INVALID_INPUT,
                       f"new_signature is not a single def/class header: {text.splitlines()[0][:80]!r}",
                       "Give only the header through its colon, e.g. 'async def fetch(self, url: str) -> bytes:'; "
                       "change bodies with py_update_definition.")


@tool(toolset=TOOLSET, title="Replace a Python variable declaration",
      examples=[{"path": "src/inventory/store.py", "name": "LOW_STOCK", "new_declaration": "LOW_STOCK = 5"}])
def py_set_var_declaration(ctx: ToolContext, path: str,
                           name: PySymbol,
                           new_declaration: Annotated[str, Field(description="The whole statement: name, "
                                                                 "annotation, value.")],
                           occurrence: Occurrence = None) -> Result[str]:
    """Replace the statement declaring a module or class variable."""
    picked = load_python_symbol(ctx, path, name, occurrence, variables=True)
    if not picked.ok or picked.data is None:
        return picked.cast("")
    data, symbol = picked.data
    statement = normalize_block(new_declaration)
    checked = _check_declaration(reindent(statement, ""), symbol.name)
    if checked is not None:
        return checked
    start, end, whole_lines = statement_region(data.module, symbol.node)
    indent = data.module.source.indentation(symbol.start_line)
    replacement = reindent(statement, indent)
    if not whole_lines:
        replacement = replacement.rstrip("\n")[len(indent):]
    elif end == len(data.module.text) and not data.module.text.endswith("\n"):
        replacement = replacement.rstrip("\n")
    new_text = data.module.text[:start] + replacement + data.module.text[end:]
    return _commit(data, new_text, f"the new declaration of {symbol.qualname}",
                   f"Set {symbol.qualname} in {data.display} ({display_lines(symbol)}).")


def _check_declaration(statement: str, name: str) -> Result[str] | None:
    if not statement:
        return Result.fail(ErrorKind.INVALID_INPUT, "new_declaration is empty",
                           f"Give the full statement, e.g. '{name} = 42'.", data="")
    try:
        tree = parse_python(statement)
    except SyntaxError as exc:
        problem = syntax_problem(exc, statement)
        return Result.fail(ErrorKind.INVALID_INPUT, f"new_declaration is not valid Python: "
                           f"{problem.render('new_declaration')}", f"Give a statement such as '{name} = 42'.",
                           data="")
    if len(tree.body) != 1:
        return Result.fail(ErrorKind.INVALID_INPUT, f"new_declaration must be one statement assigning {name!r}, "
                           f"not {len(tree.body)}", f"Write e.g. '{name} = ...' or '{name}: T = ...'.", data="")
    swapped = mismatch("new_declaration", name, top_level_definitions(tree), kind="variable")
    if swapped:
        return Result.fail(ErrorKind.INVALID_INPUT, f"refused: {swapped}",
                           f"py_set_var_declaration keeps the name {name}: write e.g. '{name} = ...'; to rename it "
                           "and its uses, use py_rename_symbol. Nothing was written.", data="")
    return None


@tool(toolset=TOOLSET, destructive=True, title="Remove a Python definition",
      examples=[{"path": "src/inventory/legacy.py", "name": "old_total"}])
def py_remove_def(ctx: ToolContext, path: str, name: PySymbol, occurrence: Occurrence = None) -> Result[str]:
    """Delete a class, function or method with its decorators."""
    picked = load_python_symbol(ctx, path, name, occurrence)
    if not picked.ok or picked.data is None:
        return picked.cast("")
    data, symbol = picked.data
    first, last = removal_lines(data.module, symbol)
    new_text = cut_lines(data.module.source, first, last)
    result = _commit(data, new_text, f"removing {symbol.qualname}",
                     f"Removed {symbol.qualname} ({display_lines(symbol)}) from {data.display}.")
    if not result.ok and _only_member(data.module, symbol):
        hint = (f"{symbol.qualname} is the only statement in its block; replace it with 'pass' using "
                f"py_update_definition instead. {data.display} is unchanged.")
        return Result(data="", errors=[replace(e, hint=hint) for e in result.errors])
    return result


def _only_member(module: PythonModule, symbol: Symbol) -> bool:
    siblings = [s for s in module.symbols() if s.parent == symbol.parent and s is not symbol]
    return bool(symbol.parent) and not siblings


@tool(toolset=TOOLSET, title="Add a Python definition",
      examples=[
          {
              "path": "src/inventory/store.py",
              "name": "Store.remove",
              "new_content": ("def remove(self, name: str) -> Item:\n"
                              "    \"\"\"Take an item off the shelves.\"\"\"\n"
                              "    return self.items.pop(name)\n"),
              "anchor_type": "after",
              "anchor_symbol": "Store.add",
          },
      ])
def py_add_def(ctx: ToolContext, path: str,
               name: Annotated[str, Field(description="Its name; Class.name puts it in that class.")],
               new_content: Annotated[str, Field(description="Any indentation: it is re-indented to the "
                                                 "anchor's.")],
               anchor_type: AnchorArg = "end",
               anchor_symbol: AnchorSymbolArg = "") -> Result[str]:
    """Add a function or class to a Python file, at an anchor."""
    loaded = load_python(ctx, path, Access.WRITE)
    if not loaded.ok or loaded.data is None:
        return loaded.cast("")
    data = loaded.data
    problem = name_problem(name)
    if problem:
        return problem.cast("")
    prepared = _prepare_definition(new_content, name.rpartition(".")[2], "new_content")
    if not prepared.ok:
        return prepared.cast("")
    placed = place_definition(data.module, prepared.data, name, AnchorType(anchor_type), anchor_symbol, data.display)
    if not placed.ok or placed.data is None:
        return placed.cast("")
    new_text, point = placed.data
    where = f"class {point.container}" if point.container else "module level"
    return _commit(data, new_text, f"adding {name}",
                   f"Added {name.rpartition('.')[2]} to {where} of {data.display} near line {point.line} "
                   f"(anchor: {anchor_type}{' ' + anchor_symbol if anchor_symbol else ''}).")


def _prepare_definition(content: str, name: str, param: str) -> Result[str]:
    """The block at column 0, checked to define ``name``."""
    block = reindent(content, "")
    if not block:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} is empty", "Give the source of the definition.",
                           data="")
    try:
        tree = parse_python(block)
    except SyntaxError as exc:
        problem = syntax_problem(exc, block)
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} is not valid Python: {problem.render(param)}",
                           "Fix the code and retry; nothing was written.", data="")
    swapped = mismatch(param, name, top_level_definitions(tree))
    if swapped:
        return Result.fail(ErrorKind.INVALID_INPUT, swapped, "Make name match the def/class in the new content; "
                           "nothing was written.", data="")
    return Result.success(block)


def place_definition(module: PythonModule, block: str, name: str, anchor: AnchorType, anchor_symbol: str,
           display: str) -> Result[tuple[str, InsertionPoint] | None]:
    """Insert a column-0 ``block`` defining ``name`` at an anchor; refuses clashes and mismatched containers."""
    container_from_name = name.rpartition(".")[0]
    symbol_for_anchor = anchor_symbol
    if anchor in (AnchorType.START, AnchorType.END) and not anchor_symbol and container_from_name:
        symbol_for_anchor = container_from_name
    point = insertion_point(module, anchor, symbol_for_anchor, display)
    if not point.ok or point.data is None:
        return point.cast(None)
    target = point.data
    if container_from_name and container_from_name != target.container:
        there = f"class {target.container}" if target.container else "module level"
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"name {name!r} puts it in class {container_from_name}, but the anchor is at {there}",
                           "Make the anchor and the dotted name agree (or give a plain name).")
    short = name.rpartition(".")[2]
    qualname = f"{target.container}.{short}" if target.container else short
    existing = module.find(qualname, variables=True)
    node = first_definition(block)
    if existing and (node is None or not node.decorator_list or existing[0].kind is SymbolKind.VARIABLE):
        lines = ", ".join(str(s.start_line) for s in existing)
        return Result.fail(ErrorKind.CONFLICT, f"{qualname} already exists in {display} (line {lines})",
                           "Use py_update_definition to replace it, or choose another name "
                           "(decorated definitions such as @overload may share a name).")
    indented = reindent(block, target.indent)
    new_text = insert_block(module.source, target, indented, separation_for(target, indented))
    return Result.success((new_text, target))


@tool(toolset=TOOLSET, title="Wrap lines in a #region",
      examples=[{"path": "src/inventory/models.py", "start_line": 8, "end_line": 9, "region_name": "Prices"}])
def py_region_wrap(ctx: ToolContext, path: str,
                   start_line: int, end_line: int, region_name: str) -> Result[str]:
    """Wrap lines start_line..end_line (whole statements) in #region region_name / #endregion comments."""
    loaded = load_python(ctx, path, Access.WRITE)
    if not loaded.ok or loaded.data is None:
        return loaded.cast("")
    data = loaded.data
    label = region_name.strip()
    if not label or "\n" in label or "\r" in label:
        return Result.fail(ErrorKind.INVALID_INPUT, "region_name must be a non-empty single line",
                           "Give a short label such as 'Parsing helpers'.", data="")
    wrapped = region_wrap(data.module, start_line, end_line, label)
    if not wrapped.ok:
        return wrapped
    return _commit(data, wrapped.data, f"wrapping lines {start_line}-{end_line}",
                   f"Wrapped lines {start_line}-{end_line} of {data.display} in '{REGION_START}{label}' "
                   f"(line {start_line}) and '{REGION_END}{label}' (line {end_line + 2}).")
