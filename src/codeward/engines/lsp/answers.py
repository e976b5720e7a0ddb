"""Navigation answers: the language server's once it is ready, the symbol index's (by name) meanwhile.

Every question names a symbol in a file (its name as defined there, or a line and column of any
use). :class:`Navigation` opens that file's language server through the process's pool: a ready
server answers scope-aware; one still starting (or missing, or crashed twice) leaves the answer
to the symbol index, which matches the name — marked ``name_based``, with a note saying why and
what to do (call again; install the server). The index also keeps the server honest: every
occurrence of the name in code that the server's answer leaves out is checked (the server's own
definition of it) and either counted as another symbol or listed as unsure — never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeward.engines.code_intel import identifiers
from codeward.engines.code_intel.symbol_index import SymbolIndex
from codeward.engines.code_intel.tags import tagged_language
from codeward.engines.code_intel.treesitter import parse, syntax_problems
from codeward.engines.code_intel.usage_scan import Usage
from codeward.engines.contained.project_sandbox import ProjectAccess, ProjectSandbox
from codeward.engines.files.planned_writes import PlannedWrite, load_for_writing, unified_diff, write_all
from codeward.engines.files.textfile import read_text
from codeward.engines.lsp.client import LspError
from codeward.engines.lsp.navigation import Place, RenamePlan, Session
from codeward.engines.lsp.pool import Availability, FileStates, Lease, Reader, servers_of
from codeward.engines.lsp.positions import EditConflict, Span, TextEdit, apply_edits
from codeward.engines.lsp.reports import (
    UNSURE_SHOWN,
    DefinitionReport,
    DiagnosticEntry,
    DiagnosticsReport,
    Reference,
    ReferenceReport,
    RenameReport,
    SymbolInfo,
)
from codeward.engines.lsp.servers import ServerSpec, project_root, spec_for
from codeward.engines.sandbox.choice import Executor
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

NAME = re.compile(r"(?!\d)[\w$]+")
MAX_CANDIDATES = 20_000
"""Occurrences of a name the index hands over for one question (more: the question is refused)."""
CHECKED_LIMIT = 300
"""Occurrences left out by the server that are checked one by one (the rest are listed unsure)."""
INDEX_ENGINE = "symbol index (name-based)"
KEYWORDS: dict[str, str] = {
    "go": "break case chan const continue default defer else fallthrough for func go goto if import interface map "
          "package range return select struct switch type var",
    "c": "auto break case char const continue default do double else enum extern float for goto if inline int long "
         "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile "
         "while class namespace template typename public private protected virtual operator new delete this throw "
         "try catch using",
    "typescript": "break case catch class const continue debugger default delete do else enum export extends false "
                  "finally for function if import in instanceof new null return super switch this throw true try "
                  "typeof var void while with let static yield await",
}
"""Words a new name may not be, per language family (Python's come from ``keyword``)."""


@dataclass(frozen=True)
class Target:
    """The symbol a question is about: a position on its name in a file."""

    real: Path
    display: str
    line: int
    column: int
    """1-based, the first character of the name."""
    word: str
    label: str
    notes: tuple[str, ...] = ()


def gate_reader(ctx: ToolContext) -> Reader:
    """A file's text through the workspace gate (None for what the file tools would refuse)."""
    def read(path: Path) -> str | None:
        if not ctx.workspace.visible(path):
            return None
        loaded = read_text(path, ctx.workspace.display(path), ctx.workspace)
        return loaded.data.text if loaded.ok else None

    return read


def word_at(line: str, column: int) -> tuple[int, str] | None:
    """The name covering 1-based ``column`` of ``line``: (its first column, the name)."""
    for match in NAME.finditer(line):
        if match.start() < column <= match.end():
            return match.start() + 1, match.group(0)
    return None


Named = Callable[[str, list[str]], Result[Target]]
"""How a language finds a symbol by the name it is defined under in a file (given the name and the file's lines)."""


def find_target(real: Path, display: str, text: str, name: str, line: int, column: int,
                named: Named) -> Result[Target]:
    """The symbol named ``name`` defined in the file (``named`` finds it), or the name at ``line``/``column``."""
    lines = text.split("\n")
    if name.strip():
        if line or column:
            return Result.fail(ErrorKind.INVALID_INPUT, "give name, or line and column, not both",
                               "Use name for a definition in the file, line/column for any use.")
        return named(name.strip(), lines)
    if not line or not column:
        return Result.fail(ErrorKind.INVALID_INPUT, "say which symbol: name, or line and column",
                           "name is the symbol's name as defined in the file (Class.method or Class::method); "
                           "line/column (1-based) point at any use of it.")
    if line > len(lines):
        return Result.fail(ErrorKind.INVALID_INPUT, f"line {line} is past the end of {display} ({len(lines)} lines)",
                           "Give a line inside the file.")
    found = word_at(lines[line - 1], column)
    if found is None:
        return Result.fail(ErrorKind.INVALID_INPUT, f"line {line}, column {column} of {display} is not on a name",
                           f"The line is {lines[line - 1].strip()!r}; point at the name itself (column is 1-based).")
    start, word = found
    return Result.success(Target(real, display, line, start, word, f"{word} ({display}:{line}:{start})"))


def indexed_name(index: SymbolIndex, real: Path, display: str) -> Named:
    """Finding a symbol by name through the index's definitions in the file (every language it tags)."""
    return lambda name, lines: _named(index, real, display, lines, name)


def _named(index: SymbolIndex, real: Path, display: str, lines: list[str], name: str) -> Result[Target]:
    rel = real.relative_to(index.root).as_posix()
    symbols, _total = index.find(name, mode="exact", under=rel, limit=50)
    symbols = [s for s in symbols if s.path == rel]
    if not symbols:
        close = [n for n in index.closest_names(name) if n != name][:5]
        hint = f"Names defined nearby: {', '.join(close)}." if close else "Check the spelling."
        return Result.fail(ErrorKind.NOT_FOUND, f"no symbol named {name!r} is defined in {display}",
                           hint + " Or point at a use with line and column.")
    symbols.sort(key=lambda s: (s.name_line, s.line))
    chosen = symbols[0]
    short = chosen.name
    text = lines[chosen.name_line - 1] if chosen.name_line - 1 < len(lines) else ""
    match = re.search(rf"(?<![\w$]){re.escape(short)}(?![\w$])", text)
    if match is None:
        return Result.fail(ErrorKind.INTERNAL, f"the name of {name} was not found on its line in {display}")
    notes: tuple[str, ...] = ()
    if len(symbols) > 1:
        others = ", ".join(str(s.name_line) for s in symbols[1:6])
        notes = (f"[{len(symbols)} definitions named {name} in {display}: this is the one on line "
                 f"{chosen.name_line} (others on lines {others}); give line and column for another]",)
    return Result.success(Target(real, display, chosen.name_line, match.start() + 1, short,
                                 f"{name} ({display})", notes))


# -- the engines ---------------------------------------------------------------------------


@dataclass
class Navigation:
    """One call's engines: the refreshed index of the file's root, and its language server if ready."""

    ctx: ToolContext
    index: SymbolIndex
    target: Target
    spec: ServerSpec | None
    languages: frozenset[str]
    lease: Lease | None = None
    states: FileStates = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _session: Session | None = None
    _failed: str = ""

    @classmethod
    def open(cls, ctx: ToolContext, index: SymbolIndex, target: Target) -> Navigation:
        spec = spec_for(target.real)
        language = tagged_language(target.real.name)
        languages = spec.languages if spec is not None else frozenset({language} if language else ())
        navigation = cls(ctx, index, target, spec, languages, notes=list(target.notes))
        if spec is not None:
            root = project_root(spec, target.real, index.root)
            under = "" if root == index.root else root.relative_to(index.root).as_posix()
            navigation.states = {index.root / path: (mtime, size)
                                 for path, mtime, size in index.file_states(spec.languages, under=under)}
            lease = servers_of(ctx.services).acquire(
                ctx.workspace, spec, root, target.real, lambda: navigation.states, gate_reader(ctx),
                lambda: ProjectSandbox.open(ctx, Executor.LANGUAGE_SERVERS, ProjectAccess.READ))
            navigation.lease = lease
            navigation.notes += lease.notes
        return navigation

    def session(self) -> Session | None:
        """The ready server's session for this call (None: the index answers)."""
        if self._session is not None or self._failed:
            return self._session
        lease = self.lease
        if lease is None or lease.availability is not Availability.READY or lease.server is None:
            return None
        try:
            self._session = Session(lease.server, gate_reader(self.ctx), self.states, [self.target.real])
        except LspError as exc:
            self.failed(exc)
        return self._session

    def failed(self, exc: Exception) -> None:
        """The server failed mid-call: the index answers, and the note says why."""
        self._failed = str(exc)
        self._session = None

    @property
    def engine(self) -> str:
        if self._session is not None:
            return self._session.server.label
        return INDEX_ENGINE

    def why_not_server(self) -> tuple[str, str]:
        """Why no server answered, and what to do for its answer."""
        if self._failed:
            return (f"the language server failed on this question ({self._failed})",
                    "call again (a server that stopped is restarted once)")
        if self.spec is None:
            language = tagged_language(self.target.real.name) or self.target.real.suffix
            return f"codeward has no language server for {language} files", "this is all it can tell"
        if self.lease is not None and self.lease.availability is Availability.STARTING:
            return self.lease.reason, "call again in a few seconds for the server's scope-aware answer"
        why = self.lease.reason if self.lease is not None else "no language server"
        return why, "the tree-sitter tools keep working; scope-aware answers need the server"

    def index_note(self) -> str:
        """Why the index answered, and what to do for a scope-aware answer."""
        why, then = self.why_not_server()
        return f"[name-based answer from the symbol index: {why}; {then}]"

    # -- occurrences -------------------------------------------------------------------

    def occurrences(self) -> Result[list[Usage]]:
        """Every occurrence of the name in code, in the server's languages (from the index)."""
        found: list[Usage] = []
        for language in sorted(self.languages):
            usages, total = self.index.usages(self.target.word, language=language, limit=MAX_CANDIDATES)
            if total > MAX_CANDIDATES or len(found) + len(usages) > MAX_CANDIDATES:
                return Result.fail(ErrorKind.TOO_LARGE, f"the name {self.target.word!r} occurs over "
                                   f"{MAX_CANDIDATES:,} times in the project", "Narrow it down with search_text.")
            found += usages
        return Result.success(found)

    def reference(self, place: Place | Usage, *, definition: bool = False, name_based: bool = False,
                  reason: str = "") -> Reference:
        if isinstance(place, Usage):
            path = self.index.root / place.path
            return Reference(path=self.ctx.workspace.display(path), line=place.line, column=place.column,
                             text=place.text, definition=definition or place.definition, name_based=name_based,
                             reason=reason)
        lines = self._session.lines(place.path) if self._session is not None else None
        text = lines[place.line - 1] if lines is not None and place.line - 1 < len(lines) else ""
        return Reference(path=self.ctx.workspace.display(place.path), line=place.line, column=place.column,
                         text=text, definition=definition, name_based=name_based, reason=reason)

    def left_out(self, covered: set[tuple[Path, int, int]], targets: list[Place],
                 occurrences: list[Usage]) -> tuple[list[tuple[Reference, Usage]], int]:
        """The occurrences the server's answer does not cover: (unsure ones, how many are other symbols).

        Each is put to the server (its definition): one leading elsewhere is another symbol; one it
        cannot resolve, or that leads to the symbol itself although left out, is unsure.
        """
        session = self._session
        rest = [u for u in occurrences if (self.index.root / u.path, u.line, u.column) not in covered]
        if not rest or session is None:
            return [(self.reference(u, name_based=True, reason="not checked"), u) for u in rest], 0
        defined = {(place.path, place.line) for place in targets}
        checked = rest[:CHECKED_LIMIT]
        unsure: list[tuple[Reference, Usage]] = []
        others = 0

        def listed(usage: Usage, reason: str) -> tuple[Reference, Usage]:
            return self.reference(usage, name_based=True, reason=reason), usage

        try:
            if session.server.spec.open_to_ask:
                session.server.sync({}, session.read, sorted({self.index.root / u.path for u in checked}))
            leads_of = session.definitions([(self.index.root / u.path, u.line, u.column) for u in checked])
        except LspError as exc:
            self.notes.append(f"[checking the occurrences the server left out stopped: {exc}]")
            leads_of = [None] * len(checked)
        for usage, leads in zip(checked, leads_of, strict=True):
            if leads is None:
                unsure.append(listed(usage, "not checked (the server failed on it)"))
            elif not leads:
                unsure.append(listed(usage, "the server cannot tell what it is"))
            elif any((place.path, place.line) in defined for place in leads):
                unsure.append(listed(usage, "left out by the server, yet it leads to this symbol"))
            else:
                others += 1
        unsure += [listed(u, f"not checked (over {CHECKED_LIMIT})") for u in rest[CHECKED_LIMIT:]]
        return unsure, others


def _failed(result: Result[Any]) -> Result[Any]:
    """A failed result, retyped for the caller (its data is never read)."""
    return result.cast(None)


def _covered(places: Iterable[Place]) -> set[tuple[Path, int, int]]:
    return {(place.path, place.line, place.column) for place in places}


def _page(references: list[Reference], offset: int, limit: int) -> tuple[list[Reference], int | None]:
    page = references[offset:offset + limit]
    return page, (offset + limit if offset + limit < len(references) else None)


# -- the questions -------------------------------------------------------------------------


def references(nav: Navigation, offset: int, limit: int) -> Result[ReferenceReport]:
    """The server's references once it is ready; the index's occurrences of the name meanwhile."""
    occurrences = nav.occurrences()
    if not occurrences.ok:
        return _failed(occurrences)
    answered = server_references(nav, occurrences.data, offset, limit)
    if answered is not None:
        return answered
    found = [nav.reference(u, name_based=True) for u in occurrences.data]
    return Result.success(reference_report(nav, found, offset, limit, [], 0), *nav.notes, nav.index_note())


def server_references(nav: Navigation, occurrences: list[Usage], offset: int,
                      limit: int) -> Result[ReferenceReport] | None:
    """The ready server's references, with the occurrences it leaves out checked; None without a server."""
    session = nav.session()
    if session is None:
        return None
    target = nav.target
    try:
        places = session.references(target.real, target.line, target.column)
        definitions = session.definition(target.real, target.line, target.column)
        defined = {(p.path, p.line, p.column) for p in definitions}
        found = [nav.reference(p, definition=(p.path, p.line, p.column) in defined) for p in places]
        unsure, others = nav.left_out(_covered(places), definitions, occurrences)
    except LspError as exc:
        nav.failed(exc)
        return None
    return Result.success(reference_report(nav, found, offset, limit, [ref for ref, _u in unsure], others),
                          *nav.notes)


def reference_report(nav: Navigation, found: list[Reference], offset: int, limit: int, unsure: list[Reference],
                      others: int) -> ReferenceReport:
    found.sort(key=lambda r: (r.path, r.line, r.column))
    page, next_offset = _page(found, offset, limit)
    return ReferenceReport(symbol=nav.target.label, engine=nav.engine, name_based=nav.engine == INDEX_ENGINE,
                           total=len(found), files=len({r.path for r in found}), offset=offset,
                           next_offset=next_offset, references=page, unsure=unsure[:UNSURE_SHOWN],
                           unsure_total=len(unsure), other_symbols=others)


def definitions(nav: Navigation) -> Result[DefinitionReport]:
    session = nav.session()
    target = nav.target
    if session is not None:
        try:
            places = session.definition(target.real, target.line, target.column)
            return Result.success(DefinitionReport(symbol=target.label, engine=nav.engine, definitions=[
                nav.reference(p, definition=True) for p in places]), *nav.notes)
        except LspError as exc:
            nav.failed(exc)
    found = _index_definitions(nav)
    return Result.success(DefinitionReport(symbol=target.label, engine=INDEX_ENGINE, name_based=True,
                                           definitions=found), *nav.notes, nav.index_note())


def _index_definitions(nav: Navigation) -> list[Reference]:
    symbols, _total = nav.index.find(nav.target.word, mode="exact", limit=50)
    found: list[Reference] = []
    for symbol in symbols:
        if nav.languages and symbol.language not in nav.languages:
            continue
        text = symbol.signature or symbol.qualname
        found.append(Reference(path=nav.ctx.workspace.display(nav.index.root / symbol.path), line=symbol.name_line,
                               column=1, text=text, definition=True, name_based=True))
    return found


def symbol_info(nav: Navigation) -> Result[SymbolInfo]:
    session = nav.session()
    target = nav.target
    if session is not None:
        try:
            text = session.hover(target.real, target.line, target.column)
            places = session.definition(target.real, target.line, target.column)
            return Result.success(SymbolInfo(symbol=target.label, engine=nav.engine, info=text, definitions=[
                nav.reference(p, definition=True) for p in places]), *nav.notes)
        except LspError as exc:
            nav.failed(exc)
    found = _index_definitions(nav)
    info = "\n".join(f"{ref.text}" for ref in found) if found else ""
    return Result.success(SymbolInfo(symbol=target.label, engine=INDEX_ENGINE, name_based=True, info=info,
                                     definitions=found), *nav.notes, nav.index_note())


def diagnostics(nav: Navigation, text: str) -> Result[DiagnosticsReport]:
    session = nav.session()
    target = nav.target
    if session is not None:
        try:
            found = session.diagnostics(target.real)
            entries = [DiagnosticEntry(line=d.place.line, column=d.place.column, end_line=d.place.end_line,
                                       end_column=d.place.end_column, severity=d.severity, message=d.message,
                                       code=d.code, source=d.source) for d in found]
            return Result.success(DiagnosticsReport(path=target.display, engine=nav.engine, total=len(entries),
                                                    diagnostics=entries), *nav.notes)
        except LspError as exc:
            nav.failed(exc)
    language = tagged_language(target.real.name)
    entries = []
    if language is not None:
        for problem in syntax_problems(parse(text, language), limit=100):
            entries.append(DiagnosticEntry(line=problem.line, column=problem.column, end_line=problem.end_line,
                                           end_column=problem.column, severity="error",
                                           message=problem.describe().split(": ", 1)[-1], source="tree-sitter"))
    note = nav.index_note().replace("name-based answer from the symbol index", "syntax errors only (tree-sitter)")
    return Result.success(DiagnosticsReport(path=target.display, engine="tree-sitter (syntax only)",
                                            syntax_only=True, total=len(entries), diagnostics=entries),
                          *nav.notes, note)


# -- rename --------------------------------------------------------------------------------


UnsurePolicy = str
"""``refuse`` (apply nothing while an occurrence is unsure), ``rename`` (rename those too), ``leave``."""


def check_new_name(new_name: str, old_name: str, family: str) -> Result[str]:
    """A new name the language of ``family`` takes (its keywords refused)."""
    import keyword

    keywords = keyword.kwlist if family == "python" else KEYWORDS.get(family, "").split()
    languages = {"python": "Python", "typescript": "TypeScript or JavaScript", "go": "Go", "c": "C or C++"}
    return identifiers.check_new_name(new_name, old_name, keywords, language=languages.get(family, ""),
                                      dollar=family == "typescript")


@dataclass
class RenameDraft:
    """A rename worked out before anything is written: the edits per file, and what is unsure."""

    engine: str
    name_based: bool
    edits: dict[Path, list[TextEdit]]
    unsure: list[Reference]
    unsure_spots: list[tuple[Path, int, int]]
    """Where each unsure occurrence is (its file, 1-based line and column), to rename on request."""
    others: int
    notes: list[str]


def rename_draft(nav: Navigation, new_name: str) -> Result[RenameDraft]:
    """What the server (or, while it cannot answer, the index by name) would change."""
    occurrences = nav.occurrences()
    if not occurrences.ok:
        return _failed(occurrences)
    answered = server_rename_draft(nav, new_name, occurrences.data)
    if answered is not None:
        return answered
    edits: dict[Path, list[TextEdit]] = {}
    for usage in occurrences.data:
        edits.setdefault(nav.index.root / usage.path, []).append(word_edit(usage.line, usage.column,
                                                                            nav.target.word, new_name))
    return Result.success(RenameDraft(INDEX_ENGINE, True, edits, [], [], 0, [*nav.notes, nav.index_note()]))


def server_rename_draft(nav: Navigation, new_name: str, occurrences: list[Usage]) -> Result[RenameDraft] | None:
    """The ready server's rename, with the occurrences it leaves out checked; None without a server."""
    session = nav.session()
    if session is None:
        return None
    target = nav.target
    try:
        refused = session.prepare_rename(target.real, target.line, target.column)
        if refused is not None:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{nav.engine} will not rename {target.label}: {refused}",
                               "Point at a symbol defined in the project (a library's names cannot be renamed).")
        plan = session.rename(target.real, target.line, target.column, new_name)
        problem = _plan_problem(nav, plan)
        if problem is not None:
            return problem
        covered = {(path, edit.span.start_line + 1, edit.span.start_column + 1)
                   for path, edits in plan.edits.items() for edit in edits}
        definitions = session.definition(target.real, target.line, target.column)
        unsure, others = nav.left_out(covered, definitions, occurrences)
    except LspError as exc:
        nav.failed(exc)
        return None
    spots = [(nav.index.root / usage.path, usage.line, usage.column) for _ref, usage in unsure]
    return Result.success(RenameDraft(nav.engine, False, plan.edits, [ref for ref, _u in unsure], spots, others,
                                      nav.notes))


def word_edit(line: int, column: int, old: str, new: str) -> TextEdit:
    return TextEdit(Span(line - 1, column - 1, line - 1, column - 1 + len(old)), new)


def _plan_problem(nav: Navigation, plan: RenamePlan) -> Result[RenameDraft] | None:
    if plan.file_operations:
        return Result.fail(ErrorKind.CONFLICT, f"{nav.engine}'s rename also creates, renames or deletes files "
                           f"({'; '.join(plan.file_operations[:3])}), which codeward does not apply",
                           "Rename the file itself with move_file, then the symbol.")
    if plan.outside:
        return Result.fail(ErrorKind.CONFLICT, f"{nav.engine}'s rename changes documents that are not files "
                           f"({', '.join(plan.outside[:3])})", "Nothing was changed.")
    if not plan.edits:
        return Result.fail(ErrorKind.NOT_FOUND, f"{nav.engine} found nothing to rename for {nav.target.label}",
                           "Point at the symbol's name (its definition or a use).")
    return None


def rename(nav: Navigation, new_name: str, apply: bool, unsure: UnsurePolicy) -> Result[RenameReport]:
    """Plan, check and (with ``apply``) write a rename, all or nothing, as one checkpoint."""
    drafted = rename_draft(nav, new_name)
    if not drafted.ok:
        return _failed(drafted)
    draft = drafted.data
    edits = {path: list(items) for path, items in draft.edits.items()}
    if unsure == "rename":
        for path, line, column in draft.unsure_spots:
            edits.setdefault(path, []).append(word_edit(line, column, nav.target.word, new_name))
    return write_rename(nav.ctx, nav.target.label, new_name, draft, edits, apply, unsure)


def planned_files(ctx: ToolContext, edits: dict[Path, list[TextEdit]]) -> Result[list[PlannedWrite]]:
    """The new text of every file the edits change, each through the write gate (nothing written)."""
    planned: list[PlannedWrite] = []
    outside = [path for path in edits if not any(path == r or path.is_relative_to(r) for r in ctx.workspace.roots)]
    if outside:
        shown = ", ".join(str(p) for p in outside[:3])
        return Result.fail(ErrorKind.PERMISSION, f"the rename would change files outside the workspace ({shown}): "
                           "a library's definition?", "Rename a symbol defined in the project. Nothing was changed.")
    for path in sorted(edits):
        loaded = load_for_writing(ctx.workspace, path, "the rename")
        if not loaded.ok:
            return _failed(loaded)
        real, display, original = loaded.data
        try:
            new_text = apply_edits(original.text, edits[path])
        except EditConflict as exc:
            return Result.fail(ErrorKind.CONFLICT, f"the rename's edits to {display} do not fit the file: {exc}",
                               "The file changed while the rename was planned; nothing was changed. Run it again.")
        if new_text != original.text:
            planned.append(PlannedWrite(real, original, new_text, display))
    return Result.success(planned)


def write_rename(ctx: ToolContext, label: str, new_name: str, draft: RenameDraft,
                 edits: dict[Path, list[TextEdit]], apply: bool, unsure: UnsurePolicy) -> Result[RenameReport]:
    """Check every file the rename changes, show the diff, and write them all (or none)."""
    files = planned_files(ctx, edits)
    if not files.ok:
        return _failed(files)
    planned = files.data
    report = RenameReport(symbol=label, new_name=new_name, engine=draft.engine, name_based=draft.name_based,
                          applied=False, files=[step.display for step in planned],
                          edits=sum(len(items) for items in edits.values()), diff=unified_diff(planned),
                          unsure=draft.unsure[:UNSURE_SHOWN], unsure_total=len(draft.unsure),
                          other_symbols=draft.others)
    notes = list(draft.notes)
    if not apply:
        if draft.unsure and unsure == "refuse":
            notes.append("[applying this would be refused while occurrences are unsure: check them, then pass "
                         "unsure='rename' to rename them too or unsure='leave' to leave them]")
        return Result(data=report, notes=notes)
    if draft.name_based:
        return Result.fail(ErrorKind.UNAVAILABLE, f"not applied: this rename is name-based ({len(planned)} files "
                           "would change, every occurrence of the name whatever it refers to)",
                           " ".join(note.strip("[]") for note in draft.notes[-1:]) or "Call again.")
    if draft.unsure and unsure == "refuse":
        listed = "; ".join(f"{ref.path}:{ref.line} {ref.text.strip()[:60]} ({ref.reason})"
                           for ref in draft.unsure[:10])
        more = f" and {len(draft.unsure) - 10} more" if len(draft.unsure) > 10 else ""
        return Result.fail(ErrorKind.CONFLICT, f"not applied: {len(draft.unsure)} occurrence(s) of the name could not "
                           f"be tied to {label}: {listed}{more}",
                           "Nothing was changed. Check them (find_references lists them), then pass unsure='rename' "
                           "to rename them too, or unsure='leave' to apply without them.")
    written = write_all(ctx, planned)
    if not written.ok:
        return _failed(written)
    return Result(data=report.model_copy(update={"applied": True}), notes=notes)
