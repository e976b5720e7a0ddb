"""``py_find_references`` and ``py_rename_symbol``: scope-aware, across the project, through the gate.

The symbol is named the way the other ``py_*`` tools name it (a dotted name defined in a file)
or pointed at (line and column of any of its uses). The symbol index lists every occurrence of
the name in code; jedi keeps those that refer to *that* symbol — a method ``run`` of one class,
not every ``run`` (:mod:`codeward.code.python_refs`). Every file read or shown passes the gate;
a rename writes only when every file it changes may be written, all of them or none, as one
checkpoint.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from codeward.catalog import tool
from codeward.code import python_refs
from codeward.code.python_symbols import lookup_one, parse_module
from codeward.code.symbol_index import SymbolIndex, index_root_for
from codeward.code.textfile import read_text
from codeward.context import ToolContext
from codeward.planned_writes import PlannedWrite, unified_diff, write_all
from codeward.result import ErrorKind, Result
from codeward.workspace import Access

TOOLSET = "python"
MAX_CANDIDATES = 20_000
MAX_REFERENCES = 2_000

PathArg = Annotated[str, Field(description="A file defining or using the symbol.")]
NameArg = Annotated[str, Field(description="As defined in path (f, Class, Class.method, a variable); or give the "
                                           "line and column of a use.")]
LineArg = Annotated[int, Field(ge=0)]
ColumnArg = Annotated[int, Field(ge=0)]


class Reference(BaseModel):
    path: str
    line: int
    column: int
    text: str
    definition: bool = False
    name_based: bool = Field(default=False, description="Matched by name only: jedi could not tell what the "
                                                        "expression before it is (include_unsure).")


class ReferenceReport(BaseModel):
    symbol: str
    total: int
    files: int
    references: list[Reference]

    def render(self) -> str:
        if not self.references:
            return f"no references to {self.symbol}"
        head = f"{self.total} reference{'s' if self.total != 1 else ''} to {self.symbol} in {self.files} " \
               f"file{'s' if self.files != 1 else ''}"
        if self.total > len(self.references):
            head += f" (showing {len(self.references)})"
        lines = [head + ":"]
        for ref in self.references:
            mark = " [definition]" if ref.definition else " [name-based]" if ref.name_based else ""
            lines.append(f"{ref.path}:{ref.line}:{ref.column}:{mark} {ref.text.strip()}")
        return "\n".join(lines)


class RenameReport(BaseModel):
    symbol: str
    new_name: str
    applied: bool
    files: list[str]
    diff: str

    def render(self) -> str:
        if self.applied:
            return f"Renamed {self.symbol} to {self.new_name} in {len(self.files)} file" \
                   f"{'s' if len(self.files) != 1 else ''}: {', '.join(self.files)}\n\n{self.diff}"
        return (f"Renaming {self.symbol} to {self.new_name} changes {len(self.files)} file"
                f"{'s' if len(self.files) != 1 else ''} (dry run: nothing written; pass apply=true):\n\n{self.diff}")


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


def _gate_reader(ctx: ToolContext) -> Callable[[Path], str | None]:
    def read(path: Path) -> str | None:
        if not ctx.workspace.visible(path):
            return None
        loaded = read_text(path, ctx.workspace.display(path), ctx.workspace)
        return loaded.data.text if loaded.ok else None

    return read


def _judged(ctx: ToolContext, target: _Target) -> Result[tuple[python_refs.Definition, list[python_refs.Verdict]]]:
    """The symbol's definition, and a verdict on every occurrence of its name in the project's code."""
    resolver = python_refs.Resolver(target.root, tuple(ctx.workspace.roots), _gate_reader(ctx))
    defined = resolver.define(target.real, target.line, target.column)
    if not defined.ok:
        return _failed(defined)
    definition = defined.data
    if not ctx.workspace.visible(definition.path):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{target.label} is defined outside the workspace "
                           f"({definition.path.name}, a library?)",
                           "Point at a symbol defined in the project; a library's names cannot be renamed here.")
    opened = SymbolIndex.open(ctx.workspace, target.root)
    if not opened.ok:
        return _failed(opened)
    with opened.data as index:
        index.refresh(cancelled=ctx.cancelled)
        usages, total = index.usages(definition.name, language="python", limit=MAX_CANDIDATES)
    if total > MAX_CANDIDATES:
        return Result.fail(ErrorKind.TOO_LARGE, f"the name {definition.name!r} occurs {total:,} times in the "
                           f"project; the most this checks one by one is {MAX_CANDIDATES:,}",
                           "Use py_find_usages (name-based) or search_text to narrow it down.")
    candidates = [python_refs.Candidate(target.root / u.path, u.line, u.column, u.text) for u in usages]
    if not any(c.path == definition.path and c.line == definition.line for c in candidates):
        line = (_gate_reader(ctx)(definition.path) or "").split("\n")[definition.line - 1:definition.line]
        candidates.append(python_refs.Candidate(definition.path, definition.line, definition.column + 1,
                                                line[0] if line else ""))

    def report(done: int) -> None:
        ctx.progress(done, len(candidates), f"checked {done} of {len(candidates)} occurrences")

    return Result.success((definition, resolver.judge(candidates, definition, report)))


def _failed(result: Result[Any]) -> Result[Any]:
    return result.cast(None)


@tool(toolset=TOOLSET, read_only=True, title="Find references of a Python symbol", output=ReferenceReport,
      examples=[{"path": "src/inventory/store.py", "name": "Store.low_stock"},
                {"path": "src/inventory/models.py", "name": "Item", "include_unsure": True}])
def py_find_references(
    ctx: ToolContext,
    path: PathArg,
    name: NameArg = "",
    line: LineArg = 0,
    column: ColumnArg = 0,
    include_unsure: bool = False,
) -> Result[ReferenceReport | None]:
    """The uses of one Python symbol across the project, resolved by scope (jedi), not every same name
    (py_find_usages); include_unsure adds the matches jedi cannot resolve, marked."""
    found = _target(ctx, path, name, line, column)
    if not found.ok:
        return _failed(found)
    judged = _judged(ctx, found.data)
    if not judged.ok:
        return _failed(judged)
    _definition, verdicts = judged.data
    shown = [Reference(path=ctx.workspace.display(v.candidate.path), line=v.candidate.line,
                       column=v.candidate.column, text=v.candidate.text, definition=v.definition,
                       name_based=not v.sure)
             for v in verdicts if v.sure or include_unsure]
    shown.sort(key=lambda ref: (ref.path, ref.line, ref.column))
    left = sum(1 for v in verdicts if not v.sure)
    notes = [f"[{left} more name-based match(es) jedi could not resolve; include_unsure=true lists them]"] \
        if left and not include_unsure else []
    return Result(data=ReferenceReport(symbol=found.data.label, total=len(shown),
                                       files=len({ref.path for ref in shown}), references=shown[:MAX_REFERENCES]),
                  notes=notes)


@dataclass(frozen=True)
class RenamePlan:
    """A rename worked out, nothing written: every file's new text and the matches left alone."""

    label: str
    old_name: str
    new_name: str
    files: list[PlannedWrite]
    unsure: list[python_refs.Candidate]

    def unsure_note(self, display: Callable[[Path], str]) -> list[str]:
        if not self.unsure:
            return []
        shown = ", ".join(f"{display(c.path)}:{c.line}" for c in self.unsure[:10])
        more = f" and {len(self.unsure) - 10} more" if len(self.unsure) > 10 else ""
        return [f"[not renamed: {len(self.unsure)} name-based match(es) of {self.old_name} jedi could not tie to this "
                f"symbol: {shown}{more}. Check them; include_unsure=true renames them too]"]


def plan_rename(ctx: ToolContext, path: str, new_name: str, name: str = "", line: int = 0, column: int = 0,
                include_unsure: bool = False) -> Result[RenamePlan | None]:
    """Every file a rename changes and its new text (through the gate; nothing is written)."""
    found = _target(ctx, path, name, line, column)
    if not found.ok:
        return _failed(found)
    target = found.data
    checked = python_refs.check_new_name(new_name, target.name)
    if not checked.ok:
        return _failed(checked)
    judged = _judged(ctx, target)
    if not judged.ok:
        return _failed(judged)
    definition, verdicts = judged.data
    spans: dict[Path, list[tuple[int, int]]] = {}
    for verdict in verdicts:
        if verdict.sure or include_unsure:
            spans.setdefault(verdict.candidate.path, []).append((verdict.candidate.line, verdict.candidate.column))
    planned: list[PlannedWrite] = []
    for real in sorted(spans):
        resolved = ctx.workspace.resolve(str(real), Access.WRITE)
        display = ctx.workspace.display(real)
        if not resolved.ok:
            error = resolved.errors[0]  # a host-run file: the person may still be asked (its source says so)
            return Result.fail(ErrorKind.PERMISSION, f"the rename would change {display}, which may not be written: "
                               f"{error.message}", f"Nothing was changed. {error.hint}".strip(), source=error.source)
        loaded = read_text(resolved.data, display, ctx.workspace)
        if not loaded.ok:
            return _failed(loaded)
        try:
            new_text = python_refs.renamed_text(loaded.data.text, spans[real], definition.name, checked.data)
        except ValueError as exc:
            return Result.fail(ErrorKind.CONFLICT, f"{display} changed while the rename was being planned: {exc}",
                               "Nothing was changed. Run it again.")
        planned.append(PlannedWrite(resolved.data, loaded.data, new_text, display))
    unsure = [v.candidate for v in verdicts if not v.sure] if not include_unsure else []
    return Result.success(RenamePlan(target.label, definition.name, checked.data, planned, unsure))


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
    apply: bool = False,
    include_unsure: bool = False,
) -> Result[RenameReport | None]:
    """Rename a Python symbol and its references across the project (jedi, by scope). Shows the diff;
    apply=true writes every file, all or none."""
    planned = plan_rename(ctx, path, new_name, name, line, column, include_unsure)
    if not planned.ok or planned.data is None:
        return _failed(planned)
    plan = planned.data
    report = RenameReport(symbol=plan.label, new_name=plan.new_name, applied=apply,
                          files=[step.display for step in plan.files], diff=unified_diff(plan.files))
    notes = plan.unsure_note(ctx.workspace.display)
    if not apply:
        return Result(data=report, notes=notes)
    written = write_all(ctx, plan.files)
    if not written.ok:
        return _failed(written)
    return Result(data=report, notes=notes)
