"""What a definition moved to another module takes with it, and what its old module keeps.

The moved code reads names its old module binds (imports, helpers, constants). Each one comes
along as an import in the new module: an import statement of the old module is copied (a
relative one rewritten for its new place), a name the old module defines or binds any other
way is imported from the old module, and one imported only for type checkers goes under
``if TYPE_CHECKING:``. A name the destination already binds to something else is a conflict.

The old module, when it still uses the name, imports it back from its new home; its
``__all__`` loses the name unless it keeps re-exporting it (a package ``__init__``), and the
destination's ``__all__`` gains it. Pure tree work: the tools layer supplies the modules'
dotted names and writes the results.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from codeward.engines.code_intel.python_edits import (
    TextEdit,
    append_alias,
    append_item,
    insert_at_line,
    remove_item,
    string_literal_like,
)
from codeward.engines.code_intel.python_modules import absolute_module, is_type_checking, relative_reference
from codeward.engines.code_intel.python_symbols import (
    DEFINITION_NODES,
    PythonModule,
    SourceText,
    Symbol,
    all_arguments,
    declared_names,
    docstring_node,
    loaded_names,
    module_level_names,
    nested_blocks,
)
from codeward.kernel.python_parse import parse_python


@dataclass(frozen=True)
class Home:
    """A module's dotted name (under the import root both modules share) and whether it is a package."""

    name: str | None
    is_package: bool

    def reference_to(self, target: str, *, relative: bool) -> str:
        """``target`` as this module's ``from`` clause writes it (relative when asked and possible)."""
        if relative and self.name is not None:
            written = relative_reference(self.name, self.is_package, target)
            if written is not None:
                return written
        return target


@dataclass
class Carried:
    """The imports the destination needs for the moved code, and what stops the move."""

    imports: list[str] = field(default_factory=list)
    type_checking: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    imports_old_module: bool = False
    """The destination now imports names from the old module (a possible import cycle)."""


def carried_imports(src: PythonModule, symbol: Symbol, src_home: Home, dest: PythonModule | None,
                    dest_home: Home, *, relative: bool = False) -> Carried:
    """The imports the moved ``symbol`` needs at its destination (see the module docstring).

    ``relative``: write imports of the project's own modules relatively (as the package does).
    """
    carried = Carried()
    needed = (loaded_names(symbol.node) & module_level_names(src)) - {symbol.name}
    dest_bound = _top_level_bindings(dest) if dest is not None else {}
    src_bound = _top_level_bindings(src, nested=False)
    relative = relative or uses_relative_imports(src) or (dest is not None and uses_relative_imports(dest))
    for name in sorted(needed):
        binding = _binding_statement(src, src_bound.get(name), name, src_home, dest_home, relative)
        if binding is None:
            if src_home.name is None and not isinstance(src_bound.get(name), ast.Import | ast.ImportFrom):
                carried.conflicts.append(f"the moved code uses {name}, which the destination cannot import from "
                                         "the old file (it is not an importable module)")
            continue
        if name in dest_bound:
            if _same_binding(dest_bound[name], binding.statement, name, dest_home):
                continue
            line = dest_bound[name].lineno
            carried.conflicts.append(f"the moved code uses {name}, which the destination binds to something else "
                                     f"(line {line})")
            continue
        carried.imports_old_module = carried.imports_old_module or binding.from_old_module
        (carried.type_checking if binding.type_checking else carried.imports).append(binding.statement)
    carried.imports = ordered(grouped(carried.imports))
    carried.type_checking = ordered(grouped(carried.type_checking))
    if _has_future_annotations(src) and _annotated(symbol.node) and not (dest and _has_future_annotations(dest)):
        if dest is None:
            carried.imports.insert(0, "from __future__ import annotations")
        else:
            carried.notes.append("the old module has 'from __future__ import annotations' and the destination "
                                 "does not: check the moved annotations")
    return carried


@dataclass(frozen=True)
class _Import:
    statement: str
    type_checking: bool = False
    from_old_module: bool = False


def _binding_statement(src: PythonModule, top: ast.stmt | None, name: str, src_home: Home, dest_home: Home,
                       relative: bool) -> _Import | None:
    """The import giving the destination ``name`` as the old module has it (None: nothing to import).

    An import statement directly at module level is copied; a name bound only for type checkers
    is imported under ``TYPE_CHECKING``; any other binding (a definition, an assignment, an
    import inside ``try``/``if``) is imported from the old module, which has it at run time."""
    if isinstance(top, ast.Import):
        alias = next(a for a in top.names if (a.asname or a.name.split(".")[0]) == name)
        return _Import(f"import {alias.name} as {alias.asname}" if alias.asname else f"import {alias.name}")
    if isinstance(top, ast.ImportFrom):
        alias = next(a for a in top.names if (a.asname or a.name) == name)
        absolute = _absolute(src_home, top.level, top.module)
        if absolute is None or absolute == dest_home.name:
            return None  # unresolvable, or imported from the destination itself: it is there
        written = dest_home.reference_to(absolute, relative=True) if top.level else absolute
        as_clause = f" as {alias.asname}" if alias.asname else ""
        return _Import(f"from {written} import {alias.name}{as_clause}")
    guarded = _only_under_type_checking(src, name)
    if guarded is not None:
        return _Import(guarded, type_checking=True)
    if src_home.name is None:
        return None
    return _Import(f"from {dest_home.reference_to(src_home.name, relative=relative)} import {name}",
                   from_old_module=True)


def _only_under_type_checking(src: PythonModule, name: str) -> str | None:
    """The import statement binding ``name`` under ``if TYPE_CHECKING:``, when that is its only binding."""
    for stmt in src.tree.body:
        if isinstance(stmt, ast.If) and is_type_checking(stmt.test):
            for inner in stmt.body:
                if isinstance(inner, ast.Import | ast.ImportFrom) and any(
                        (a.asname or a.name.split(".")[0]) == name for a in inner.names):
                    alias = next(a for a in inner.names if (a.asname or a.name.split(".")[0]) == name)
                    if isinstance(inner, ast.Import):
                        return f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                    if inner.level:
                        return None
                    return f"from {inner.module} import {alias.name}" + (f" as {alias.asname}" if alias.asname
                                                                         else "")
    return None


def _absolute(home: Home, level: int, module: str | None) -> str | None:
    return absolute_module(home.name, home.is_package, level, module)


def _top_level_bindings(module: PythonModule | None, *, nested: bool = True) -> dict[str, ast.stmt]:
    """The statement binding each module-level name: directly at module level first, then (with
    ``nested``) inside its if/try/with blocks."""
    bound: dict[str, ast.stmt] = {}
    if module is None:
        return bound
    for stmt in module.tree.body:
        names: list[str] = []
        if isinstance(stmt, ast.Import):
            names = [a.asname or a.name.split(".")[0] for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            names = [a.asname or a.name for a in stmt.names if a.name != "*"]
        elif isinstance(stmt, DEFINITION_NODES):
            names = [stmt.name]
        else:
            names = declared_names(stmt)
        for name in names:
            bound.setdefault(name, stmt)
    if not nested:
        return bound
    for stmt in module.tree.body:
        for block in nested_blocks(stmt):
            for inner in _walk_blocks(block):
                for name in _names_bound_by(inner):
                    bound.setdefault(name, inner)
    return bound


def _walk_blocks(block: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in block:
        yield stmt
        for inner in nested_blocks(stmt):
            yield from _walk_blocks(inner)


def _names_bound_by(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        return [a.asname or a.name for a in stmt.names if a.name != "*"]
    if isinstance(stmt, DEFINITION_NODES):
        return [stmt.name]
    return declared_names(stmt)


def _same_binding(existing: ast.stmt, statement: str, name: str, dest_home: Home) -> bool:
    """Whether the destination already binds ``name`` to what the moved code's import would bind it to."""
    try:
        wanted = parse_python(statement).body[0]
    except SyntaxError:
        return False
    return _bound_to(existing, name, dest_home) == _bound_to(wanted, name, dest_home) is not None


def _bound_to(stmt: ast.stmt, name: str, home: Home) -> str | None:
    """What an import statement binds ``name`` to: ``module`` or ``module:attribute`` (None if it does not)."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname == name:
                return alias.name
            if alias.asname is None and alias.name.split(".")[0] == name:
                return name
    elif isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if (alias.asname or alias.name) == name:
                return f"{_absolute(home, stmt.level, stmt.module)}:{alias.name}"
    return None


def grouped(statements: list[str]) -> list[str]:
    """``from x import a`` and ``from x import b`` as ``from x import a, b`` (first place kept)."""
    merged: dict[str, list[str]] = {}
    for statement in statements:
        if statement.startswith("from ") and " import " in statement:
            head, names = statement.split(" import ", 1)
            merged.setdefault(head + " import ", []).append(names)
        else:
            merged.setdefault(statement, [])
    return [head + ", ".join(names) if names else head for head, names in merged.items()]


def ordered(statements: list[str]) -> list[str]:
    """Imports in the usual order: ``__future__``, then absolute, then relative; alphabetical within."""
    def key(statement: str) -> tuple[int, str]:
        module = statement.split()[1]
        return (0 if module == "__future__" else 2 if module.startswith(".") else 1, module)

    return sorted(statements, key=key)


def uses_relative_imports(module: PythonModule) -> bool:
    return any(isinstance(stmt, ast.ImportFrom) and stmt.level for stmt in ast.walk(module.tree))


def _has_future_annotations(module: PythonModule) -> bool:
    return any(isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
               and any(a.name == "annotations" for a in stmt.names) for stmt in module.tree.body)


def _annotated(node: ast.AST) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.AnnAssign):
            return True
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and (
                inner.returns is not None or any(a.annotation is not None for a in all_arguments(inner.args))):
            return True
    return False


# -- inserting imports --------------------------------------------------------------------------


def import_block_line(module: PythonModule) -> int:
    """The line new module-level imports go before: after the docstring, ``__future__`` imports and the
    imports at the top of the file."""
    body = module.tree.body
    last = 0
    for index, stmt in enumerate(body):
        if index == 0 and docstring_node(module.tree) is not None:
            last = stmt.end_lineno or stmt.lineno
            continue
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            last = stmt.end_lineno or stmt.lineno
            continue
        break
    return last + 1


def import_lines(module: PythonModule | None, imports: list[str], type_checking: list[str]) -> str:
    """The text to add at the import block: the imports, then a ``TYPE_CHECKING`` block if needed."""
    lines = [f"{statement}\n" for statement in imports]
    if type_checking:
        has_flag = module is not None and "TYPE_CHECKING" in module_level_names(module)
        if not has_flag:
            lines.append("from typing import TYPE_CHECKING\n")
        lines.append("\nif TYPE_CHECKING:\n")
        lines.extend(f"    {statement}\n" for statement in type_checking)
    return "".join(lines)


def add_imports(module: PythonModule, imports: list[str], type_checking: list[str] | None = None) -> list[TextEdit]:
    """Edits adding ``imports`` (and a ``TYPE_CHECKING`` block) to ``module``'s import block, separated
    by blank lines from a docstring or code around them as the file's own imports would be."""
    if not imports and not type_checking:
        return []
    merged, imports = _merged_into_existing(module, imports)
    if not imports and not type_checking:
        return merged
    line = import_block_line(module)
    source = module.source
    if line == 1:
        line = _after_header_comments(source)
    has_imports = any(isinstance(stmt, ast.Import | ast.ImportFrom) for stmt in module.tree.body[:2])
    text = import_lines(module, imports, type_checking or [])
    if line > 1 and not has_imports and source.line(line - 1).strip():
        text = "\n" + text
    following = source.line(line)
    if following.strip() and not following.lstrip().startswith(("import ", "from ")):
        text += "\n"
    return [*merged, insert_at_line(source, line, text)]


def _merged_into_existing(module: PythonModule, imports: list[str]) -> tuple[list[TextEdit], list[str]]:
    """Edits adding ``from X import n`` to the module's own top-level ``from X import ...``; the rest."""
    edits: list[TextEdit] = []
    rest: list[str] = []
    for statement in imports:
        head, _, names = statement.partition(" import ")
        reference = head[5:] if head.startswith("from ") else None
        target = next((stmt for stmt in module.tree.body if isinstance(stmt, ast.ImportFrom) and reference
                       and "." * stmt.level + (stmt.module or "") == reference
                       and not any(a.name == "*" for a in stmt.names)), None)
        if target is None or reference == "__future__":
            rest.append(statement)
        else:
            edits.append(append_alias(module.source, target, names))
    return edits, rest


def _after_header_comments(source: SourceText) -> int:
    """The first line after a shebang, an encoding line and a comment block that a blank line ends."""
    row = 1
    while source.line(row).startswith("#") and ((row == 1 and source.line(row).startswith("#!"))
                                                 or "coding" in source.line(row)):
        row += 1
    end = row
    while source.line(end).startswith("#"):
        end += 1
    if end > row and not source.line(end).strip() and end <= len(source.lines):
        return end + 1
    return row


# -- __all__ --------------------------------------------------------------------------------------


def all_declaration(module: PythonModule) -> ast.List | ast.Tuple | None:
    """The literal list or tuple of strings assigned to ``__all__`` at module level (None if there is none)."""
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            value = stmt.value
            if isinstance(value, ast.List | ast.Tuple) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                return value
    return None


def exported_names(module: PythonModule) -> set[str] | None:
    """The names ``__all__`` lists (None when there is no literal ``__all__``)."""
    declared = all_declaration(module)
    if declared is None:
        return None
    return {e.value for e in declared.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def removed_from_all(module: PythonModule, name: str) -> list[TextEdit]:
    declared = all_declaration(module)
    if declared is None:
        return []
    return [remove_item(module.source, e) for e in declared.elts
            if isinstance(e, ast.Constant) and e.value == name]


def added_to_all(module: PythonModule, name: str) -> list[TextEdit]:
    declared = all_declaration(module)
    if declared is None or name in (exported_names(module) or set()):
        return []
    example = declared.elts[-1] if declared.elts else None
    return [append_item(module.source, declared, string_literal_like(module.source, example, name))]
