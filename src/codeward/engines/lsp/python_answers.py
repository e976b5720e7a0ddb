"""Python references and renames: basedpyright once it is ready, jedi meanwhile.

Both answer scope-aware and in the same shape (:mod:`codeward.engines.lsp.reports`). basedpyright is the
whole-project engine: it resolves every import form and layout (``src/``, namespace packages,
tests, ``.pyi`` stubs) the way a type checker does. While it starts, the symbol index answers at
once (by name, as for every language: jedi's first answer takes seconds). Where it is not
installed (or is off, or failed), jedi answers: the index's occurrences of the name, each resolved
by jedi (``goto``) — with the project's ``src/`` folder first on its path, so a test's
``from pkg.module import name`` leads to the project and not to an installed copy. Occurrences
neither engine ties to the symbol are listed as unsure, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.engines.code_intel import python_refs
from codeward.engines.code_intel.symbol_index import SymbolIndex
from codeward.engines.files.planned_writes import PlannedWrite
from codeward.engines.lsp import answers
from codeward.engines.lsp.answers import (
    Navigation,
    RenameDraft,
    Target,
    gate_reader,
    planned_files,
    reference_report,
    server_references,
    server_rename_draft,
    word_edit,
    write_rename,
)
from codeward.engines.lsp.pool import Availability
from codeward.engines.lsp.positions import TextEdit
from codeward.engines.lsp.reports import Reference, ReferenceReport, RenameReport
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

JEDI = "jedi"


def _failed(result: Result[Any]) -> Result[Any]:
    return result.cast(None)


def _jedi_note(nav: Navigation) -> str:
    """Why jedi answered instead of the language server."""
    why, then = nav.why_not_server()
    if "few seconds" not in then:
        then = "jedi resolves what it can; unsure occurrences are listed"
    return f"[answered by jedi: {why}; {then}]"


def _judged(ctx: ToolContext, nav: Navigation) -> Result[tuple[python_refs.Definition, list[python_refs.Verdict]]]:
    """jedi's definition of the target, and its verdict on every occurrence of the name."""
    target, index = nav.target, nav.index
    resolver = python_refs.Resolver(index.root, tuple(ctx.workspace.roots), gate_reader(ctx))
    defined = resolver.define(target.real, target.line, target.column)
    if not defined.ok:
        return _failed(defined)
    definition = defined.data
    if not ctx.workspace.visible(definition.path):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{target.label} is defined outside the workspace "
                           f"({definition.path.name}, a library?)",
                           "Point at a symbol defined in the project; a library's names cannot be renamed here.")
    occurrences = nav.occurrences()
    if not occurrences.ok:
        return _failed(occurrences)
    candidates = [python_refs.Candidate(index.root / u.path, u.line, u.column, u.text) for u in occurrences.data]
    if not any(c.path == definition.path and c.line == definition.line for c in candidates):
        text = gate_reader(ctx)(definition.path) or ""
        lines = text.split("\n")[definition.line - 1:definition.line]
        candidates.append(python_refs.Candidate(definition.path, definition.line, definition.column + 1,
                                                lines[0] if lines else ""))

    def report(done: int) -> None:
        ctx.progress(done, len(candidates), f"checked {done} of {len(candidates)} occurrences")

    return Result.success((definition, resolver.judge(candidates, definition, report)))


def _reference(ctx: ToolContext, verdict: python_refs.Verdict) -> Reference:
    candidate = verdict.candidate
    return Reference(path=ctx.workspace.display(candidate.path), line=candidate.line, column=candidate.column,
                     text=candidate.text, definition=verdict.definition, name_based=not verdict.sure,
                     reason=verdict.reason)


def _starting(nav: Navigation) -> bool:
    """basedpyright is on its way: the index answers at once (jedi's first answer takes seconds)."""
    return nav.lease is not None and nav.lease.availability is Availability.STARTING


def references(ctx: ToolContext, index: SymbolIndex, target: Target, offset: int,
               limit: int) -> Result[ReferenceReport]:
    nav = Navigation.open(ctx, index, target)
    if _starting(nav):
        return answers.references(nav, offset, limit)
    occurrences = nav.occurrences()
    if not occurrences.ok:
        return _failed(occurrences)
    answered = server_references(nav, occurrences.data, offset, limit)
    if answered is not None:
        return answered
    judged = _judged(ctx, nav)
    if not judged.ok:
        return _failed(judged)
    _definition, verdicts = judged.data
    found = [_reference(ctx, v) for v in verdicts if v.sure]
    unsure = [_reference(ctx, v) for v in verdicts if not v.sure and not v.other]
    others = sum(1 for v in verdicts if v.other)
    report = reference_report(nav, found, offset, limit, unsure, others)
    return Result.success(report.model_copy(update={"engine": JEDI, "name_based": False}), *nav.notes,
                          _jedi_note(nav))


def rename(ctx: ToolContext, index: SymbolIndex, target: Target, new_name: str, apply: bool,
           unsure: str) -> Result[RenameReport]:
    nav = Navigation.open(ctx, index, target)
    if _starting(nav):
        return answers.rename(nav, new_name, apply, unsure)
    drafted = scoped_draft(ctx, nav, new_name)
    if not drafted.ok:
        return _failed(drafted)
    draft = drafted.data
    edits = {path: list(items) for path, items in draft.edits.items()}
    if unsure == "rename":
        for path, line, column in draft.unsure_spots:
            edits.setdefault(path, []).append(word_edit(line, column, target.word, new_name))
    return write_rename(ctx, target.label, new_name, draft, edits, apply, unsure)


def scoped_draft(ctx: ToolContext, nav: Navigation, new_name: str) -> Result[RenameDraft]:
    """basedpyright's rename once it is ready, jedi's otherwise: scope-aware, never the index's by name."""
    occurrences = nav.occurrences()
    if not occurrences.ok:
        return _failed(occurrences)
    drafted = server_rename_draft(nav, new_name, occurrences.data)
    return drafted if drafted is not None else _jedi_draft(ctx, nav, new_name)


@dataclass(frozen=True)
class RenamePlan:
    """A scope-aware rename worked out, nothing written: every file's new text and what was left alone."""

    label: str
    old_name: str
    new_name: str
    files: list[PlannedWrite]
    unsure: list[Reference]

    def unsure_note(self) -> list[str]:
        if not self.unsure:
            return []
        shown = ", ".join(f"{ref.path}:{ref.line}" for ref in self.unsure[:10])
        more = f" and {len(self.unsure) - 10} more" if len(self.unsure) > 10 else ""
        return [f"[not renamed: {len(self.unsure)} occurrence(s) of {self.old_name} that could not be tied to this "
                f"symbol: {shown}{more}. Check them; py_rename_symbol with unsure='rename' renames them too]"]


def plan_rename(ctx: ToolContext, index: SymbolIndex, target: Target, new_name: str) -> Result[RenamePlan]:
    """The scope-aware rename of ``target`` as planned writes; unsure occurrences are left alone and listed.

    For edits that rename as they write (``rename=true`` of the ``py_*`` replace tools): they wait
    for jedi rather than take a name-based answer while basedpyright starts.
    """
    nav = Navigation.open(ctx, index, target)
    drafted = scoped_draft(ctx, nav, new_name)
    if not drafted.ok:
        return _failed(drafted)
    files = planned_files(ctx, drafted.data.edits)
    if not files.ok:
        return _failed(files)
    return Result.success(RenamePlan(target.label, target.word, new_name, files.data, drafted.data.unsure))


def _jedi_draft(ctx: ToolContext, nav: Navigation, new_name: str) -> Result[RenameDraft]:
    judged = _judged(ctx, nav)
    if not judged.ok:
        return _failed(judged)
    definition, verdicts = judged.data
    edits: dict[Path, list[TextEdit]] = {}
    unsure_refs: list[Reference] = []
    spots: list[tuple[Path, int, int]] = []
    for verdict in verdicts:
        candidate = verdict.candidate
        if verdict.sure:
            edits.setdefault(candidate.path, []).append(word_edit(candidate.line, candidate.column,
                                                                   definition.name, new_name))
        elif not verdict.other:
            unsure_refs.append(_reference(ctx, verdict))
            spots.append((candidate.path, candidate.line, candidate.column))
    others = sum(1 for v in verdicts if v.other)
    return Result.success(RenameDraft(JEDI, False, edits, unsure_refs, spots, others, [*nav.notes,
                                                                                      _jedi_note(nav)]))
