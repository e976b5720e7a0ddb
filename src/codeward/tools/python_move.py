"""``py_move_def``: move a definition within a file or to another module, keeping the project importable.

A move to another module is planned whole before anything is written: the definition and the
imports it needs go to the destination; the old module imports it back if it still uses it; every
file of the project that imports the name from the old module — ``from old import name``,
``import pkg.old`` then ``pkg.old.name``, relative imports, star imports, package re-exports,
tests — is rewritten to the new one (:mod:`codeward.engines.code_intel.python_importers`); ``__all__`` follows.
Strings naming the old place (``mock.patch("pkg.old.name")``) are listed as unsure. A move that
would leave an import it cannot rewrite, a name bound twice, a new import cycle, or a file that
may not be written is refused with the list, and nothing changes. Otherwise every file is
written together as one checkpoint (``undo`` reverts it), or, with ``apply=false``, shown as a
diff. Project code is parsed, never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated

from pydantic import Field

from codeward.engines.code_intel.python_edits import TextEdit, apply_edits
from codeward.engines.code_intel.python_importers import Finding, ImporterPlan, MovedName, Resolver, View, plan_importer
from codeward.engines.code_intel.python_modules import PYTHON_SUFFIXES, ModuleMap
from codeward.engines.code_intel.python_move import (
    Carried,
    Home,
    add_imports,
    added_to_all,
    carried_imports,
    exported_names,
    import_lines,
    removed_from_all,
    uses_relative_imports,
)
from codeward.engines.code_intel.python_rewrite import AnchorType, attached_comment_start, cut_lines, removal_lines
from codeward.engines.code_intel.python_symbols import (
    PythonModule,
    Symbol,
    check_edit,
    loaded_names,
    name_problem,
    parse_module,
    reindent,
    rename_definition,
)
from codeward.engines.code_intel.symbol_index import index_root_for
from codeward.engines.files.planned_writes import PlannedWrite, unified_diff, write_all
from codeward.engines.files.textfile import read_text
from codeward.engines.files.walk import walk
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access
from codeward.tools.arguments import Occurrence, PySymbol
from codeward.tools.python_ast import (
    TOOLSET,
    AnchorArg,
    AnchorSymbolArg,
    LoadedPython,
    load_python,
    load_python_symbol,
    place_definition,
)

MAX_PROJECT_FILES = 20_000
SKIPPED_FOLDERS = frozenset({"node_modules", ".venv", "venv", ".tox", ".nox", "__pycache__", "site-packages",
                             ".mypy_cache", ".ruff_cache", ".pytest_cache", ".codeward"})
SHOWN = 10
RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+\.", re.MULTILINE)


@tool(toolset=TOOLSET, destructive=True, title="Move a Python definition",
      write_paths=("src_path", "dest_path"),
      examples=[
          {
              "src_path": "src/inventory/legacy.py",
              "dest_path": "src/inventory/store.py",
              "name": "format_price",
              "anchor_type": "end",
          },
      ])
def py_move_def(ctx: ToolContext,
                src_path: str,
                dest_path: Annotated[str, Field(description="May be src_path; made if missing.")],
                name: PySymbol,
                dest_name: Annotated[str, Field(description="A new name; Class.name moves it into that class.")] = "",
                anchor_type: AnchorArg = "end",
                anchor_symbol: AnchorSymbolArg = "",
                occurrence: Occurrence = None,
                apply: Annotated[bool, Field(description="false: show the diff only.")] = True,
                ) -> Result[str]:
    """Move a def or class within a file or to another module; its imports go with it, importers are updated."""
    picked = load_python_symbol(ctx, src_path, name, occurrence, param="src_path")
    if not picked.ok or picked.data is None:
        return picked.cast("")
    src, symbol = picked.data
    target_name = dest_name.strip() or symbol.name
    problem = name_problem(target_name)
    if problem:
        return problem.cast("")
    resolved = ctx.workspace.resolve(dest_path, Access.WRITE, param="dest_path")
    if not resolved.ok:
        return resolved.cast("")
    if resolved.data.suffix not in PYTHON_SUFFIXES:
        return Result.fail(ErrorKind.INVALID_INPUT, f"dest_path {ctx.workspace.display(resolved.data)} is not a Python "
                           "file", "Move the definition to a .py (or .pyi) file.", data="")
    if resolved.data == src.real and (anchor_symbol == symbol.qualname
                                      or anchor_symbol.startswith(symbol.qualname + ".")):
        return Result.fail(ErrorKind.INVALID_INPUT, f"the anchor {anchor_symbol!r} is inside the definition being "
                           "moved", "Anchor on another symbol.", data="")
    move = _Move(ctx, src, symbol, target_name, AnchorType(anchor_type), anchor_symbol, resolved.data)
    planned = move.plan()
    if not planned.ok:
        return planned
    if not apply:
        return Result.success(move.dry_run_text(), *move.notes())
    written = write_all(ctx, move.writes, held={src.real, resolved.data})
    if not written.ok:
        return written.cast("")
    return Result.success(move.done_text(), *move.notes())


@dataclass
class _Move:
    """One move, planned file by file before anything is written."""

    ctx: ToolContext
    src: LoadedPython
    symbol: Symbol
    target_name: str
    anchor: AnchorType
    anchor_symbol: str
    dest_real: Path
    writes: list[PlannedWrite] = field(default_factory=list)
    updated: dict[str, list[Finding]] = field(default_factory=dict)
    unsure: list[str] = field(default_factory=list)
    extra_notes: list[str] = field(default_factory=list)
    dest_line: int = 0
    where: str = ""

    @property
    def new_name(self) -> str:
        return self.target_name.rpartition(".")[2]

    @property
    def display(self) -> str:
        return self.src.display

    @property
    def dest_display(self) -> str:
        return self.ctx.workspace.display(self.dest_real)

    @property
    def across(self) -> bool:
        return self.dest_real != self.src.real

    # -- planning ---------------------------------------------------------------------------------

    def plan(self) -> Result[str]:
        source = self.src.module.source
        with_comments = replace(self.symbol, start_line=attached_comment_start(source, self.symbol.start_line))
        block = rename_definition(reindent(source.span_lines(with_comments.start_line, self.symbol.end_line), ""),
                                  self.new_name)
        first, last = removal_lines(self.src.module, with_comments)
        cut = cut_lines(self.src.module.source, first, last)
        try:
            without = parse_module(cut)
        except SyntaxError:
            refused = self._refusal(f"removing {self.symbol.qualname} from its place", self.display, cut,
                                    self.src.module)
            return refused or Result.fail(ErrorKind.INVALID_INPUT, f"cannot move {self.symbol.qualname}", data="")
        dest = self._destination()
        if not dest.ok:
            return dest.cast("")
        home = without if not self.across else dest.data.module if dest.data is not None else None
        if home is not None:
            placed = place_definition(home, block, self.target_name, self.anchor, self.anchor_symbol,
                                      self.dest_display)
            if not placed.ok:
                return placed.cast("")
        project = self._project()
        if not project.ok or project.data is None:
            return project.cast("")
        modules = project.data
        homes = self._homes(modules)
        moves_module_name = self.symbol.parent == "" and (self.across or self.new_name != self.symbol.name
                                                          or "." in self.target_name)
        importers: dict[Path, ImporterPlan] = {}
        if moves_module_name:
            found = self._importers(modules, homes, dest.data)
            if not found.ok or found.data is None:
                return found.cast("")
            importers = found.data
        if self.across:
            return self._plan_across(block, without, dest.data, modules, homes, importers)
        return self._plan_within(block, without, importers)

    def _destination(self) -> Result[LoadedPython | None]:
        if not self.across:
            return Result.success(self.src)
        if not self.dest_real.exists():
            if self.anchor_symbol or "." in self.target_name:
                return Result.fail(ErrorKind.NOT_FOUND, f"dest_path {self.dest_display} does not exist, so anchor "
                                   f"{self.anchor_symbol or self.target_name.rpartition('.')[0]!r} cannot be found in "
                                   "it", "Create the file first, or move to a new file with anchor_type 'end' and "
                                   "no anchor_symbol.")
            return Result.success(None)
        return load_python(self.ctx, str(self.dest_real), Access.WRITE, "dest_path")

    def _plan_within(self, block: str, without: PythonModule, importers: dict[Path, ImporterPlan]) -> Result[str]:
        placed = place_definition(without, block, self.target_name, self.anchor, self.anchor_symbol, self.display)
        if not placed.ok or placed.data is None:
            return placed.cast("")
        new_text, point = placed.data
        self.dest_line = point.line
        self.where = f"class {point.container}" if point.container else "module level"
        refused = self._refusal(f"moving {self.symbol.qualname}", self.display, new_text, self.src.module)
        if refused is not None:
            return refused
        self.writes.append(PlannedWrite(self.src.real, self.src.file, new_text, self.display))
        if self.new_name != self.symbol.name or "." in self.target_name:
            remaining = parse_module(new_text)
            if self.symbol.name in loaded_names(remaining.tree):
                self.extra_notes.append(f"{self.display} still uses {self.symbol.name}: rename those uses (or move "
                                        "with py_rename_symbol first)")
        return self._add_importers(importers)

    def _plan_across(self, block: str, without: PythonModule, dest: LoadedPython | None, modules: ModuleMap,
                     homes: tuple[Home, Home] | None, importers: dict[Path, ImporterPlan]) -> Result[str]:
        src_home, dest_home = homes or (Home(None, False), Home(None, False))
        carried = carried_imports(self.src.module, self.symbol, src_home, dest.module if dest else None, dest_home,
                                  relative=self._package_uses_relative_imports())
        if carried.conflicts:
            return Result.fail(ErrorKind.CONFLICT, f"cannot move {self.symbol.qualname} to {self.dest_display}: "
                               + "; ".join(carried.conflicts),
                               "Rename one of them first (py_rename_symbol), or move to another file; nothing was "
                               "changed.", data="")
        dest_text = self._dest_text(block, dest, importers.pop(self.dest_real, None), carried)
        if not dest_text.ok:
            return dest_text
        src_text = self._src_text(without, src_home, dest_home)
        for text, display, original in ((dest_text.data, self.dest_display, dest.module if dest else None),
                                        (src_text, self.display, self.src.module)):
            refused = self._refusal(f"moving {self.symbol.qualname}", display, text, original)
            if refused is not None:
                return refused
        self.writes.append(PlannedWrite(self.dest_real, dest.file if dest else None, dest_text.data,
                                        self.dest_display, template=self.src.file))
        self.writes.append(PlannedWrite(self.src.real, self.src.file, src_text, self.display))
        added = self._add_importers(importers)
        if not added.ok:
            return added
        cycle = self._new_cycle(modules)
        if cycle:
            return Result.fail(ErrorKind.CONFLICT, f"moving {self.symbol.qualname} to {self.dest_display} would "
                               f"create an import cycle: {cycle}",
                               "Move the names it uses from the old module too, move it elsewhere, or import inside "
                               "the functions that need it; nothing was changed.", data="")
        self._carried_notes(carried)
        self._stub_note(modules)
        return added

    def _dest_text(self, block: str, dest: LoadedPython | None, own: ImporterPlan | None,
                   carried: Carried) -> Result[str]:
        """The destination: its own imports of the name dropped, the definition placed, the imports added."""
        if dest is None:
            self.dest_line = 1
            self.where = "module level"
            head = import_lines(None, carried.imports, carried.type_checking)
            if head:
                self.dest_line = head.count("\n") + 3
                return Result.success(head + "\n\n" + block)
            return Result.success(block)
        text = dest.module.text
        if own is not None and own.edits:
            text = apply_edits(text, own.edits)
            self.updated.setdefault(self.dest_display, []).extend(own.updated)
            self.unsure.extend(self._listed(self.dest_display, own.unsure))
        module = _parsed(text)
        if module is None:
            return Result.fail(ErrorKind.INTERNAL, f"dropping the import of {self.symbol.name} from "
                               f"{self.dest_display} broke it", data="")
        placed = place_definition(module, block, self.target_name, self.anchor, self.anchor_symbol,
                                  self.dest_display)
        if not placed.ok or placed.data is None:
            return placed.cast("")
        text, point = placed.data
        self.where = f"class {point.container}" if point.container else "module level"
        module = _parsed(text)
        if module is None:
            return Result.success(text)  # the syntax check that follows says where
        edits = add_imports(module, carried.imports, carried.type_checking)
        if self.symbol.name in (exported_names(self.src.module) or set()) and "." not in self.target_name:
            edits.extend(added_to_all(module, self.new_name))
        added = sum(edit.replacement.count("\n") for edit in edits if edit.start <= module.source.line_offset(
            point.line))
        self.dest_line = point.line + added
        return Result.success(apply_edits(text, edits))

    def _src_text(self, without: PythonModule, src_home: Home, dest_home: Home) -> str:
        """The old module without the definition; importing it back when it still uses or re-exports it."""
        name = self.symbol.name
        keeps = self._package_keeps_it()
        still_used = self.symbol.parent == "" and name in loaded_names(without.tree)
        edits: list[TextEdit] = []
        if self.symbol.parent == "" and (still_used or keeps) and dest_home.name is not None:
            relative = uses_relative_imports(without) or self._package_uses_relative_imports()
            alias = f" as {name}" if name != self.new_name else ""
            edits = add_imports(without, [f"from {src_home.reference_to(dest_home.name, relative=relative)} import "
                                          f"{self.new_name}{alias}"])
            why = "it still uses it" if still_used else "its package keeps exporting it"
            self.extra_notes.append(f"{self.display} imports {name} back from {self.dest_display} ({why})")
        elif self.symbol.parent == "":
            edits = removed_from_all(without, name)
            if edits and src_home.name:
                self.extra_notes.append(f"{name} was in the __all__ of {src_home.name}: code outside this project "
                                        f"that imports it from there needs {dest_home.name or self.dest_display} now "
                                        "(or a re-export)")
            if still_used:
                self.extra_notes.append(f"{self.display} still uses {name} but cannot import it from "
                                        f"{self.dest_display}; fix those uses")
        return apply_edits(without.text, edits)

    def _package_uses_relative_imports(self) -> bool:
        """Whether the destination's package writes its own imports relatively (a few siblings are read)."""
        siblings = sorted(self.dest_real.parent.glob("*.py"))[:20]
        for sibling in siblings:
            if sibling == self.dest_real or not self.ctx.workspace.visible(sibling):
                continue
            loaded = read_text(sibling, self.ctx.workspace.display(sibling), self.ctx.workspace)
            if loaded.ok and RELATIVE_IMPORT.search(loaded.data.text):
                return True
        return False

    def _package_keeps_it(self) -> bool:
        """A package ``__init__`` keeps exporting a public name it moves into one of its modules."""
        exported = exported_names(self.src.module)
        public = self.symbol.name in exported if exported is not None else not self.symbol.name.startswith("_")
        return self.src.real.stem == "__init__" and self.symbol.parent == "" and public

    # -- the project --------------------------------------------------------------------------------

    def _project(self) -> Result[ModuleMap | None]:
        root = index_root_for(self.ctx.workspace, self.src.real)
        files: list[Path] = []
        for entry in walk(self.ctx.workspace, root, include_dirs=False):
            if entry.path.suffix in PYTHON_SUFFIXES and not SKIPPED_FOLDERS.intersection(Path(entry.rel).parts[:-1]):
                files.append(entry.path)
                if len(files) > MAX_PROJECT_FILES:
                    return Result.fail(ErrorKind.TOO_LARGE, f"the project under {self.ctx.workspace.display(root)} "
                                       f"has more than {MAX_PROJECT_FILES:,} Python files; the importers of "
                                       f"{self.symbol.name} cannot all be checked", "Nothing was changed.")
        if self.across and self.dest_real not in files:
            files.append(self.dest_real)
        return Result.success(ModuleMap.of(files, root, [self.src.real, self.dest_real]))

    def _homes(self, modules: ModuleMap) -> tuple[Home, Home] | None:
        """The old and new module's names under the first import root both have."""
        src_names, dest_names = modules.names(self.src.real), modules.names(self.dest_real)
        root = next((r for r in modules.roots if r in src_names and r in dest_names), None)
        if root is None:
            return None
        return (Home(src_names[root], modules.is_package(self.src.real)),
                Home(dest_names[root], modules.is_package(self.dest_real)))

    def _importers(self, modules: ModuleMap, homes: tuple[Home, Home] | None,
                   dest: LoadedPython | None) -> Result[dict[Path, ImporterPlan]]:
        src_names, dest_names = modules.names(self.src.real), modules.names(self.dest_real)
        exported = exported_names(self.src.module)
        star = self.symbol.name in exported if exported is not None else not self.symbol.name.startswith("_")
        moved = MovedName(self.symbol.name, self.new_name, star, self._package_keeps_it())
        into_class = "." in self.target_name
        stub = self.src.real.with_suffix(".pyi")
        plans: dict[Path, ImporterPlan] = {}
        blocked: list[str] = []
        for path in sorted(modules.files):
            if path == self.src.real or (path.suffix == ".pyi" and stub in modules.files):
                continue
            module = dest.module if dest is not None and path == self.dest_real else self._read_module(path)
            if module is None:
                continue
            views = [View(modules.names(path).get(root), modules.is_package(path), old, dest_names.get(root),
                          _resolver(modules, path, root)) for root, old in src_names.items()]
            plan = plan_importer(module, views, moved, is_new_home=path == self.dest_real and not into_class)
            display = self.ctx.workspace.display(path)
            if into_class:
                blocked.extend(f"{display}:{f.line}: {f.text}" for f in [*plan.updated, *plan.blocked])
                continue
            blocked.extend(f"{display}:{f.line}: {f.text}  ({f.why})" for f in plan.blocked)
            if plan.touched or plan.unsure:
                plans[path] = plan
        if blocked:
            why = f"{self.symbol.name} would go into a class, where an import cannot reach it" if into_class else \
                "these references could not be rewritten"
            return Result.fail(ErrorKind.CONFLICT, f"cannot move {self.symbol.qualname}: {why}:\n  "
                               + "\n  ".join(blocked[:50]) + (f"\n  ... and {len(blocked) - 50} more"
                                                             if len(blocked) > 50 else ""),
                               "Nothing was changed. Update those by hand first, or choose another destination.")
        return Result.success(plans)

    def _read_module(self, path: Path) -> PythonModule | None:
        """A project file parsed, when it mentions the name (others cannot import it by name); one
        that cannot be read or parsed is listed as unsure."""
        display = self.ctx.workspace.display(path)
        loaded = read_text(path, display, self.ctx.workspace)
        if not loaded.ok:
            self.unsure.append(f"{display}: not checked ({loaded.errors[0].message})")
            return None
        if self.symbol.name not in loaded.data.text and "*" not in loaded.data.text:
            return None
        module = _parsed(loaded.data.text)
        if module is None:
            self.unsure.append(f"{display}: not checked, it does not parse (it mentions {self.symbol.name})")
        return module

    def _add_importers(self, importers: dict[Path, ImporterPlan]) -> Result[str]:
        for path, plan in sorted(importers.items()):
            display = self.ctx.workspace.display(path)
            self.unsure.extend(self._listed(display, plan.unsure))
            if not plan.edits:
                continue
            if path == self.src.real:
                continue
            resolved = self.ctx.workspace.resolve(str(path), Access.WRITE)
            if not resolved.ok:
                return Result.fail(ErrorKind.PERMISSION, f"cannot move {self.symbol.qualname}: {display} imports it "
                                   f"and may not be written ({resolved.errors[0].message})",
                                   "Nothing was changed.", data="")
            loaded = read_text(path, display, self.ctx.workspace)
            if not loaded.ok:
                return loaded.cast("")
            original = _parsed(loaded.data.text)
            new_text = apply_edits(loaded.data.text, plan.edits)
            refused = self._refusal(f"updating the import of {self.symbol.name}", display, new_text, original)
            if refused is not None:
                return refused
            self.writes.append(PlannedWrite(path, loaded.data, new_text, display))
            self.updated.setdefault(display, []).extend(plan.updated)
        return Result.success("")

    def _new_cycle(self, modules: ModuleMap) -> str:
        """An import cycle the move creates: a module-level import it adds that leads back ("" when none)."""
        src_names, dest_names = modules.names(self.src.real), modules.names(self.dest_real)
        root = next((r for r in modules.roots if r in src_names and r in dest_names), None)
        if root is None:
            return ""
        after = _ImportGraph(self, modules, root, {w.real: w.new_text for w in self.writes})
        before = _ImportGraph(self, modules, root, {})
        for write in self.writes:
            name = modules.names(write.real).get(root)
            if name is None:
                continue
            old = before.imports_of(name) if write.original is not None else set()
            for added in sorted(after.imports_of(name) - old):
                back = after.path(added, name)
                if back:
                    return " -> ".join([name, *back])
        return ""

    # -- notes and reports -----------------------------------------------------------------------------

    def _carried_notes(self, carried: Carried) -> None:
        brought = carried.imports + [f"{s} (under TYPE_CHECKING)" for s in carried.type_checking]
        if brought:
            self.extra_notes.append(f"{self.dest_display} gets the imports the moved code needs: "
                                    + "; ".join(brought))
        self.extra_notes.extend(carried.notes)

    def _stub_note(self, modules: ModuleMap) -> None:
        stub = self.src.real.with_suffix(".pyi")
        if stub in modules.files and stub != self.src.real:
            loaded = read_text(stub, self.ctx.workspace.display(stub), self.ctx.workspace)
            if loaded.ok and self.symbol.name in loaded.data.text:
                self.unsure.append(f"{self.ctx.workspace.display(stub)} (the stub) still declares "
                                   f"{self.symbol.name}: move it there too (py_move_def on the .pyi files)")

    def _listed(self, display: str, findings: list[Finding]) -> list[str]:
        return [f"{display}:{f.line}: {f.text}" + (f"  ({f.why})" if f.why else "") for f in findings]

    def _refusal(self, what: str, display: str, new_text: str, original: PythonModule | None) -> Result[str] | None:
        problem = check_edit(new_text, original)
        if problem is None:
            return None
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"refused: {what} would leave a syntax error in {problem.render(display)}",
                           "Nothing was written. Fix the code around it and retry; every file is unchanged.",
                           data="")

    def _summary(self) -> str:
        moved = f"{self.symbol.qualname} from {self.display} to {self.dest_display}" if self.across else \
            f"{self.symbol.qualname} to {self.where} of {self.display}"
        return f"{moved} as {self.new_name}"

    def _updated_text(self) -> str:
        others = {display: found for display, found in self.updated.items() if found}
        if not others:
            return ""
        count = sum(len(found) for found in others.values())
        shown = ", ".join(f"{display} ({len(found)})" for display, found in sorted(others.items()))
        return f" Updated {count} reference{'s' if count != 1 else ''} to it in {len(others)} file" \
               f"{'s' if len(others) != 1 else ''}: {shown}."

    def done_text(self) -> str:
        return f"Moved {self._summary()} (line {self.dest_line}).{self._updated_text()}"

    def dry_run_text(self) -> str:
        changed = [w for w in self.writes if w.original is None or w.new_text != w.original.text]
        return (f"Moving {self._summary()} changes {len(changed)} file{'s' if len(changed) != 1 else ''} (dry run: "
                f"nothing written; apply=true writes it).{self._updated_text()}\n\n{unified_diff(changed)}")

    def notes(self) -> list[str]:
        notes = [f"[{note}]" for note in self.extra_notes]
        if self.unsure:
            shown = "\n  ".join(self.unsure[:SHOWN])
            more = f"\n  ... and {len(self.unsure) - SHOWN} more" if len(self.unsure) > SHOWN else ""
            notes.append(f"[unsure, not changed: {len(self.unsure)} reference(s) to check:\n  {shown}{more}]")
        return notes


@dataclass
class _ImportGraph:
    """The project's module-level imports under one root, read lazily (some files as they will be)."""

    move: _Move
    modules: ModuleMap
    root: Path
    texts: dict[Path, str]
    edges: dict[str, set[str]] = field(default_factory=dict)

    def imports_of(self, name: str) -> set[str]:
        if name not in self.edges:
            path = self.modules.file_of(name, self.root)
            found: set[str] = set()
            if path is not None:
                text = self.texts.get(path)
                if text is None:
                    loaded = read_text(path, self.move.ctx.workspace.display(path), self.move.ctx.workspace)
                    text = loaded.data.text if loaded.ok else None
                module = _parsed(text) if text is not None else None
                if module is not None:
                    found = self.modules.module_imports(module.tree, path, self.root)
            self.edges[name] = found
        return self.edges[name]

    def path(self, start: str, goal: str) -> list[str]:
        """The modules from ``start`` to ``goal`` along imports ([] when ``goal`` is not reached)."""
        came_from: dict[str, str | None] = {start: None}
        queue = [start]
        while queue:
            current = queue.pop(0)
            if current == goal:
                chain = [current]
                while (previous := came_from[chain[-1]]) is not None:
                    chain.append(previous)
                return chain[::-1]
            for following in sorted(self.imports_of(current)):
                if following not in came_from:
                    came_from[following] = current
                    queue.append(following)
        return []


def _resolver(modules: ModuleMap, path: Path, root: Path) -> Resolver:
    def resolve(level: int, module: str | None) -> str | None:
        return modules.absolute(path, root, level, module)

    return resolve


def _parsed(text: str) -> PythonModule | None:
    try:
        return parse_module(text)
    except SyntaxError:
        return None
