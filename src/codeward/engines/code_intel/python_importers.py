"""Rewriting one file's references to a module-level name that moves to another module.

Given a parsed file and how it sees the move (its own dotted name, the old and new module
under the same import root), :func:`plan_importer` finds every way the file reaches the name
through the old module and says how to write it through the new one:

* ``from old import name [as alias]`` (absolute or relative, at any depth of the file): the
  name is taken out of the statement (or the statement rewritten when it is the only one) and
  ``from new import name [as alias]`` added after it, in the same relative/absolute style;
* ``from old import *``, when the star gave the name: ``from new import name`` is added after it;
* ``old.name`` through ``import pkg.old``, ``import pkg.old as o``, ``from pkg import old``:
  the attribute is written through the new module, imported next to the old one;
* in the destination file itself, its import of the name goes and ``old.name`` becomes ``name``.

Strings naming the old place (``mock.patch("pkg.old.name")``) and attribute uses through a
name the file also binds to something else are *unsure*: listed, not changed. What cannot be
rewritten is *blocked*: the move is refused with the list.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from codeward.engines.code_intel.python_edits import TextEdit, append_alias, insert_after, node_span, remove_item
from codeward.engines.code_intel.python_modules import relative_reference
from codeward.engines.code_intel.python_symbols import PythonModule, all_arguments

Resolver = Callable[[int, str | None], str | None]
"""The absolute module a ``from`` import of this file names (level, module), or None."""


@dataclass(frozen=True)
class View:
    """How one file sees the move from one import root."""

    here: str | None
    """The file's dotted name under that root (None when it has none: relative imports cannot be written)."""
    here_is_package: bool
    old_module: str
    new_module: str | None
    """None when the destination cannot be imported from this root."""
    resolve: Resolver


@dataclass(frozen=True)
class MovedName:
    old_name: str
    new_name: str
    star_exported: bool
    """``from old import *`` gave the name (it is public, or listed in the old module's ``__all__``)."""
    package_keeps_it: bool = False
    """The old module is a package that keeps re-exporting the name: imports from it stay as they are."""


@dataclass(frozen=True)
class Finding:
    line: int
    text: str
    why: str = ""


@dataclass
class ImporterPlan:
    """What to change in one file, and what could not be decided or done."""

    edits: list[TextEdit] = field(default_factory=list)
    updated: list[Finding] = field(default_factory=list)
    unsure: list[Finding] = field(default_factory=list)
    blocked: list[Finding] = field(default_factory=list)

    @property
    def touched(self) -> bool:
        return bool(self.edits)


@dataclass(frozen=True)
class _Binding:
    """A local name bound to a module by an import statement."""

    local: str
    module: str
    statement: ast.Import | ast.ImportFrom
    view: View
    dotted_import: bool
    """``import a.b.c`` without ``as``: ``a`` is bound, the rest is reached by attributes."""


def plan_importer(module: PythonModule, views: list[View], moved: MovedName, *, is_new_home: bool) -> ImporterPlan:
    """How ``module`` must change for the move (see the module docstring)."""
    planner = _Planner(module, views, moved, is_new_home)
    planner.imports_of_the_name()
    planner.attribute_uses()
    planner.string_references()
    return planner.plan


class _Planner:
    def __init__(self, module: PythonModule, views: list[View], moved: MovedName, is_new_home: bool) -> None:
        self.module = module
        self.views = views
        self.moved = moved
        self.is_new_home = is_new_home
        self.plan = ImporterPlan()
        self.added: dict[tuple[int, str], None] = {}
        self.merged: set[int] = set()
        self.identifiers = _identifiers(module.tree)

    # -- helpers ----------------------------------------------------------------------------

    def finding(self, node: ast.AST, why: str = "") -> Finding:
        line = getattr(node, "lineno", 1)
        return Finding(line, self.module.source.line(line).strip(), why)

    def view_of(self, stmt: ast.ImportFrom) -> View | None:
        for view in self.views:
            if view.resolve(stmt.level, stmt.module) == view.old_module:
                return view
        return None

    def reference(self, view: View, relative: bool) -> str:
        """The new module as a ``from`` clause writes it: relative like the original, when it can be."""
        assert view.new_module is not None
        if relative and view.here is not None:
            written = relative_reference(view.here, view.here_is_package, view.new_module)
            if written is not None:
                return written
        return view.new_module

    def add_after(self, stmt: ast.stmt, statement: str) -> None:
        """Add an import after ``stmt`` — or to the module's own import from the same place, when it has one."""
        key = (id(stmt), statement)
        if key in self.added:
            return
        self.added[key] = None
        existing = self.same_source_import(stmt, statement)
        if existing is not None:
            self.plan.edits.append(append_alias(self.module.source, existing, statement.split(" import ", 1)[1]))
            self.merged.add(id(existing))
            return
        self.plan.edits.append(insert_after(self.module, stmt, statement))

    def same_source_import(self, stmt: ast.stmt, statement: str) -> ast.ImportFrom | None:
        """A module-level ``from X import ...`` of this file with the same X as ``statement``, when ``stmt``
        is at module level too and nothing else edits it."""
        if not statement.startswith("from ") or stmt not in self.module.tree.body:
            return None
        reference = statement[5:].split(" import ", 1)[0]
        for other in self.module.tree.body:
            if not isinstance(other, ast.ImportFrom) or other is stmt or any(a.name == "*" for a in other.names):
                continue
            if "." * other.level + (other.module or "") != reference:
                continue
            start, end = node_span(self.module.source, other)
            if id(other) in self.merged or not any(e.start < end and e.end > start for e in self.plan.edits):
                return other
        return None

    def import_of_name(self, view: View, relative: bool, local: str) -> str:
        alias = f" as {local}" if local != self.moved.new_name else ""
        return f"from {self.reference(view, relative)} import {self.moved.new_name}{alias}"

    # -- from old import name ---------------------------------------------------------------

    def imports_of_the_name(self) -> None:
        for stmt in ast.walk(self.module.tree):
            if not isinstance(stmt, ast.ImportFrom):
                continue
            view = self.view_of(stmt)
            if view is None or (self.moved.package_keeps_it and not self.is_new_home):
                continue
            for alias in stmt.names:
                if alias.name == "*":
                    self.star(stmt, view)
                elif alias.name == self.moved.old_name:
                    self.named(stmt, alias, view)

    def star(self, stmt: ast.ImportFrom, view: View) -> None:
        if self.is_new_home or not self.moved.star_exported:
            return
        if view.new_module is None:
            self.plan.blocked.append(self.finding(stmt, "the new module cannot be imported from here"))
            return
        self.add_after(stmt, self.import_of_name(view, stmt.level > 0, self.moved.old_name))
        self.plan.updated.append(self.finding(stmt, f"{self.moved.old_name} came through the star"))

    def named(self, stmt: ast.ImportFrom, alias: ast.alias, view: View) -> None:
        local = alias.asname or alias.name
        if self.is_new_home:
            if local != self.moved.new_name:
                self.plan.blocked.append(self.finding(stmt, f"the destination imports it as {local}"))
                return
            self.plan.edits.append(self.without(stmt, alias))
            self.plan.updated.append(self.finding(stmt, "the name is defined here now"))
            return
        if view.new_module is None:
            self.plan.blocked.append(self.finding(stmt, "the new module cannot be imported from here"))
            return
        statement = self.import_of_name(view, stmt.level > 0, local)
        if len(stmt.names) == 1:
            start, end = node_span(self.module.source, stmt)
            self.plan.edits.append(TextEdit(start, end, statement))
        else:
            self.plan.edits.append(remove_item(self.module.source, alias))
            self.add_after(stmt, statement)
        self.plan.updated.append(self.finding(stmt))

    def without(self, stmt: ast.ImportFrom, alias: ast.alias) -> TextEdit:
        """``stmt`` without ``alias``; the whole statement when it is the only name."""
        if len(stmt.names) > 1:
            return remove_item(self.module.source, alias)
        source = self.module.source
        start, end = node_span(source, stmt)
        last = stmt.end_lineno or stmt.lineno
        line_start = source.line_offset(stmt.lineno)
        rest = source.text[end:source.line_offset(last + 1)].strip()
        if not source.text[line_start:start].strip() and (not rest or rest.startswith("#")):
            return TextEdit(line_start, source.line_offset(last + 1), "")
        return TextEdit(start, end, "pass")

    # -- old.name through a module binding --------------------------------------------------

    def bindings(self, scopes: _Scopes) -> dict[tuple[int, str], list[_Binding]]:
        """The module bindings each scope makes, by (scope, local name)."""
        found: dict[tuple[int, str], list[_Binding]] = {}
        for stmt in ast.walk(self.module.tree):
            if not isinstance(stmt, ast.Import | ast.ImportFrom):
                continue
            scope = id(scopes.scope_of(stmt))
            for view in self.views:
                for binding in _module_bindings(stmt, view):
                    found.setdefault((scope, binding.local), []).append(binding)
        return found

    def attribute_uses(self) -> None:
        scopes = _Scopes(self.module.tree)
        bindings = self.bindings(scopes)
        if not bindings:
            return
        for node in ast.walk(self.module.tree):
            if not isinstance(node, ast.Attribute) or node.attr != self.moved.old_name:
                continue
            chain = _dotted(node.value)
            if chain is None:
                continue
            scope = scopes.resolve(chain[0], node)
            candidates = bindings.get((id(scope), chain[0]), []) if scope is not None else []
            for binding in candidates:
                reached = ".".join([binding.module, *chain[1:]])
                if reached != binding.view.old_module:
                    continue
                if self.moved.package_keeps_it and not self.is_new_home:
                    break
                if scope is not None and scopes.bound_otherwise(scope, chain[0]):
                    self.plan.unsure.append(self.finding(node, f"{chain[0]} is also bound to something else in "
                                                               "the same scope"))
                    break
                self.rewrite_attribute(node, binding)
                break

    def rewrite_attribute(self, node: ast.Attribute, binding: _Binding) -> None:
        start, end = node_span(self.module.source, node)
        if self.is_new_home:
            self.plan.edits.append(TextEdit(start, end, self.moved.new_name))
            self.plan.updated.append(self.finding(node, "the name is defined here now"))
            return
        view = binding.view
        if view.new_module is None:
            self.plan.blocked.append(self.finding(node, "the new module cannot be imported from here"))
            return
        reference = self.module_reference(binding)
        if reference is None:
            self.plan.unsure.append(self.finding(node, "no free name to import the new module under"))
            return
        self.plan.edits.append(TextEdit(start, end, f"{reference}.{self.moved.new_name}"))
        self.plan.updated.append(self.finding(node))
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.plan.unsure.append(self.finding(node, "it sets the attribute (a patch?): check it still patches "
                                                       "what it should"))

    def module_reference(self, binding: _Binding) -> str | None:
        """An expression for the new module in this file, importing it next to ``binding``'s statement."""
        view = binding.view
        assert view.new_module is not None
        new_module = view.new_module
        if binding.dotted_import:
            self.add_after(binding.statement, f"import {new_module}")
            return new_module
        last = new_module.rpartition(".")[2]
        local = next((name for name in (last, f"_{last}", f"{last}_module") if name not in self.identifiers), None)
        if local is None:
            return None
        self.identifiers.add(local)
        alias = f" as {local}" if local != last else ""
        if isinstance(binding.statement, ast.Import):
            statement = f"import {new_module} as {local}"
        else:
            parent, _, _ = new_module.rpartition(".")
            relative = binding.statement.level > 0
            if parent:
                written = relative_reference(view.here, view.here_is_package, parent) \
                    if relative and view.here is not None else None
                statement = f"from {written or parent} import {last}{alias}"
            else:
                statement = f"import {new_module}{alias}"
        self.add_after(binding.statement, statement)
        return local

    # -- strings ------------------------------------------------------------------------------

    def string_references(self) -> None:
        if self.moved.package_keeps_it:
            return
        for node in ast.walk(self.module.tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            for view in self.views:
                dotted = f"{view.old_module}.{self.moved.old_name}"
                value = node.value
                if value == dotted or value.startswith(dotted + ".") or value == f"{view.old_module}:" \
                        f"{self.moved.old_name}":
                    new = f"{view.new_module}.{self.moved.new_name}" if view.new_module else "its new module"
                    self.plan.unsure.append(self.finding(node, f"a string naming {dotted} (now {new})"))
                    break


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` (None for anything but names and attributes)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _identifiers(tree: ast.AST) -> set[str]:
    """Every name the file uses or binds (to pick a free one for a new import)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _module_bindings(stmt: ast.Import | ast.ImportFrom, view: View) -> list[_Binding]:
    """The names an import statement binds to modules that lead to the old module."""
    found: list[_Binding] = []
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                found.append(_Binding(alias.asname, alias.name, stmt, view, False))
            else:
                top = alias.name.split(".")[0]
                found.append(_Binding(top, top, stmt, view, True))
        return found
    base = view.resolve(stmt.level, stmt.module)
    if base is None:
        return found
    for alias in stmt.names:
        dotted = f"{base}.{alias.name}"
        if view.old_module == dotted or view.old_module.startswith(dotted + "."):
            found.append(_Binding(alias.asname or alias.name, dotted, stmt, view, False))
    return found


_FUNCTION_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _Scopes:
    """Python's name resolution, simplified: which scope a name used at a node is bound in.

    Function bodies, lambdas, class bodies and comprehensions are scopes; a function's defaults,
    decorators and annotations belong to the scope around it; ``global`` sends a name to the
    module; class bodies are not seen from the functions inside them.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.owner: dict[int, ast.AST] = {}
        self.parent: dict[int, ast.AST | None] = {id(tree): None}
        self.imported: dict[int, set[str]] = {}
        self.other: dict[int, set[str]] = {}
        self.globals: dict[int, set[str]] = {}
        self._visit(tree, tree)

    def scope_of(self, node: ast.AST) -> ast.AST:
        return self.owner.get(id(node), self.tree)

    def resolve(self, name: str, node: ast.AST) -> ast.AST | None:
        """The scope whose binding of ``name`` a use at ``node`` sees (None: a builtin or unbound)."""
        scope: ast.AST | None = self.scope_of(node)
        first = True
        while scope is not None:
            key = id(scope)
            if name in self.globals.get(key, set()):
                scope = self.tree
            elif (first or not isinstance(scope, ast.ClassDef)) and (
                    name in self.imported.get(key, set()) or name in self.other.get(key, set())):
                return scope
            if scope is self.tree:
                return None
            scope = self.parent.get(key)
            first = False
        return None

    def bound_otherwise(self, scope: ast.AST, name: str) -> bool:
        return name in self.other.get(id(scope), set())

    def _bind(self, scope: ast.AST, name: str, *, imported: bool = False) -> None:
        (self.imported if imported else self.other).setdefault(id(scope), set()).add(name)

    def _new_scope(self, node: ast.AST, outer: ast.AST) -> ast.AST:
        self.parent[id(node)] = outer
        return node

    def _visit(self, root: ast.AST, root_scope: ast.AST) -> None:
        """Record each node's scope and each scope's bindings (iteratively: expressions nest deep)."""
        stack: list[tuple[ast.AST, ast.AST]] = [(root, root_scope)]
        while stack:
            node, scope = stack.pop()
            self.owner[id(node)] = scope
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                stack.extend(self._enter(node, scope))
                continue
            if isinstance(node, _COMPREHENSIONS):
                inner = self._new_scope(node, scope)
                stack.extend((child, inner) for child in ast.iter_child_nodes(node))
                continue
            if isinstance(node, ast.Global):
                self.globals.setdefault(id(scope), set()).update(node.names)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        self._bind(scope, (alias.asname or alias.name).split(".")[0], imported=True)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                self._bind(scope, node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(scope, node.name)
            stack.extend((child, scope) for child in ast.iter_child_nodes(node))

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda,
               scope: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
        """A def, class or lambda: what is evaluated around it, and its body in a scope of its own."""
        outer: list[ast.AST] = []
        if not isinstance(node, ast.Lambda):
            self._bind(scope, node.name)
            outer += node.decorator_list
        if isinstance(node, ast.ClassDef):
            outer += [*node.bases, *node.keywords]
        else:
            outer += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            outer += [a.annotation for a in all_arguments(node.args) if a.annotation is not None]
            if not isinstance(node, ast.Lambda) and node.returns is not None:
                outer.append(node.returns)
        inner = self._new_scope(node, scope)
        if not isinstance(node, ast.ClassDef):
            for arg in all_arguments(node.args):
                self._bind(inner, arg.arg)
        body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
        return [*((part, scope) for part in outer), *((part, inner) for part in body)]
