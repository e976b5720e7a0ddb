"""``list_checkpoints`` and ``undo``: the way back from any tool call that changed files.

Every call of a tool that writes is recorded by the catalog as a checkpoint (see
:mod:`codeward.engines.checkpoints`); these tools show them and revert them. ``undo`` refuses to
overwrite a file that changed outside codeward since — it names each one and asks the client
(elicitation) when the client can answer, else it needs ``force=true``.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from codeward.config.checkpoints import CheckpointSettings
from codeward.engines.checkpoints.journal import Journal, journal_of
from codeward.engines.checkpoints.rewind import Outcome, Rewind, in_effect, reverted_by, select
from codeward.engines.checkpoints.store import CheckpointStore, Record, store_for
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.host_run import NEEDS_PERSON
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import HOST_RUN_HINT, Workspace

TOOLSET = "checkpoints"
SHOWN_PATHS = 4


class CheckpointEntry(BaseModel):
    id: int
    kind: str = Field(description="edit: a tool call's changes; undo: what an undo changed back.")
    time: str
    tool: str
    summary: str
    paths: list[str]
    state: str = Field(description="'in effect', 'undone by N', or for an undo 'reverted N'.")


class CheckpointList(BaseModel):
    total: int
    checkpoints: list[CheckpointEntry]

    def render(self) -> str:
        if not self.checkpoints:
            return "no checkpoints yet: no tool call has changed a file"
        lines = [f"{self.total} checkpoint{'s' if self.total != 1 else ''} (newest first"
                 + (f", showing {len(self.checkpoints)}" if self.total > len(self.checkpoints) else "") + "):"]
        for entry in self.checkpoints:
            shown = ", ".join(entry.paths[:SHOWN_PATHS]) + (f" +{len(entry.paths) - SHOWN_PATHS} more"
                                                            if len(entry.paths) > SHOWN_PATHS else "")
            lines.append(f"#{entry.id}  {entry.time}  {entry.summary}  [{entry.state}]  {shown}")
        return "\n".join(lines)


class UndoReport(BaseModel):
    reverted: list[int]
    restored: list[str]
    skipped: list[str] = Field(default_factory=list)
    overwritten: list[str] = Field(default_factory=list, description="Files changed outside codeward that "
                                                                      "force overwrote (the undo can be undone).")
    dry_run: bool = False

    def render(self) -> str:
        ids = ", ".join(f"#{number}" for number in self.reverted)
        verb = "Would undo" if self.dry_run else "Undid"
        lines = [f"{verb} {ids}: {len(self.restored)} path{'s' if len(self.restored) != 1 else ''} "
                 + ("to restore" if self.dry_run else "restored")]
        lines.extend(f"  {path}" for path in self.restored)
        if self.overwritten:
            lines.append("overwrote changes made outside codeward:")
            lines.extend(f"  {text}" for text in self.overwritten)
        if self.skipped:
            lines.append("not restored:")
            lines.extend(f"  {text}" for text in self.skipped)
        if not self.dry_run:
            lines.append("This undo is a checkpoint too: list_checkpoints shows it, and undoing it redoes the changes.")
        return "\n".join(lines)


def _store(ctx: ToolContext) -> CheckpointStore:
    journal = journal_of(ctx)
    return journal.store if journal is not None else store_for(ctx.workspace.primary,
                                                                ctx.services.get(CheckpointSettings))


def _paths(workspace: Workspace, record: Record) -> list[str]:
    shown: list[str] = []
    for change in record.changes:
        text = workspace.display(Path(change.path))
        if change.moved_to:
            text += f" → {workspace.display(Path(change.moved_to))}"
        elif change.trash:
            text += " (deleted)"
        shown.append(text)
    return shown


@tool(toolset=TOOLSET, read_only=True, title="List checkpoints", output=CheckpointList,
      examples=[{}, {"limit": 5}])
def list_checkpoints(
    ctx: ToolContext,
    limit: Annotated[int, Field(ge=1, le=500)] = 20,
) -> Result[CheckpointList | None]:
    """The checkpoints, newest first: each tool call that changed files (and each undo), with what it touched."""
    records = _store(ctx).records()
    effective = in_effect(records)
    undone = reverted_by(records)
    entries: list[CheckpointEntry] = []
    for record in reversed(records[-limit:]):
        if record.kind == "undo":
            state = "reverted " + ", ".join(f"#{n}" for n in record.reverts)
            if record.id not in effective:
                state += f"; itself undone by #{undone.get(record.id)}"
        else:
            state = "in effect" if record.id in effective else f"undone by #{undone.get(record.id)}"
        when = datetime.datetime.fromtimestamp(record.time).strftime("%Y-%m-%d %H:%M:%S")
        entries.append(CheckpointEntry(id=record.id, kind=record.kind, time=when, tool=record.tool,
                                       summary=record.summary, paths=_paths(ctx.workspace, record), state=state))
    return Result.success(CheckpointList(total=len(records), checkpoints=entries))


def _undo_preview(arguments: Mapping[str, Any], ctx: ToolContext) -> str | None:
    """The diff an undo call would make (what its approval prompt shows)."""
    steps, checkpoint = arguments.get("steps", 1), arguments.get("checkpoint")
    if arguments.get("dry_run") or not isinstance(steps, int) or not isinstance(checkpoint, int | None):
        return None
    journal = Journal(ctx.workspace, "undo", "preview", ctx.services.get(CheckpointSettings))
    planned = _plan(ctx, journal.store, journal, steps, checkpoint)
    return planned.data[0].preview() if planned.ok else None


@tool(toolset=TOOLSET, destructive=True, title="Undo tool edits", output=UndoReport, preview=_undo_preview,
      examples=[{"dry_run": True}, {}, {"steps": 2}])
def undo(
    ctx: ToolContext,
    steps: Annotated[int, Field(ge=1, le=1000, description="Tool calls to undo, latest first.")] = 1,
    checkpoint: Annotated[int | None, Field(description="Instead: undo back to before this checkpoint (an undo's "
                                                        "id redoes).")] = None,
    force: bool = False,
    dry_run: bool = False,
) -> Result[UndoReport | None]:
    """Undo the latest tool edits: files restored, moves and deletions reversed. Refuses a file changed
    outside codeward since, naming it; force overwrites it."""
    journal = journal_of(ctx)
    if journal is None:
        return Result.fail(ErrorKind.UNAVAILABLE, "checkpoints are off, so there is nothing to undo",
                           "Turn checkpoints on (they are on by default).")
    store = journal.store
    planned = _plan(ctx, store, journal, steps, checkpoint)
    if not planned.ok:
        return planned.cast(None)
    rewind, conflicts, unrestorable = planned.data
    if conflicts and not force and not dry_run:
        if not _confirmed(ctx, conflicts):
            return Result.fail(ErrorKind.CONFLICT,
                               "these files changed outside codeward since: " + "; ".join(conflicts),
                               "Nothing was changed. Check them (read_file, get_git_diff); to overwrite them with "
                               "their earlier contents pass force=true (that undo can itself be undone).")
        force = True
    if unrestorable and not force and not dry_run:
        return Result.fail(ErrorKind.UNAVAILABLE, "some changes cannot be undone: " + "; ".join(unrestorable),
                           "Nothing was changed. Pass force=true to undo the rest.")
    ids = [record.id for record in rewind.records]
    if dry_run:
        touched = sorted({ctx.workspace.display(Path(c.path))
                          for record in rewind.records for c in record.changes})
        return Result.success(UndoReport(reverted=ids, restored=touched, skipped=unrestorable,
                                         overwritten=conflicts, dry_run=True))
    needs = rewind.needs_person()
    if needs:
        return Result.fail(ErrorKind.PERMISSION, "the undo writes files the host runs later: " + "; ".join(needs),
                           HOST_RUN_HINT, source=NEEDS_PERSON)
    journal.kind = "undo"
    journal.reverts = ids
    journal.summary = "undo " + ", ".join(f"#{number}" for number in ids)
    with store.locked():
        again = _plan(ctx, store, journal, steps, checkpoint)
        if not again.ok:
            return again.cast(None)
        rewind, now_conflicts, _unrestorable = again.data
        if set(now_conflicts) - set(conflicts):
            return Result.fail(ErrorKind.CONFLICT, "files changed while the undo was being confirmed: "
                               + "; ".join(sorted(set(now_conflicts) - set(conflicts))),
                               "Nothing was changed. Run undo again.")
        with ctx.call.hold_writes(rewind.written(), workspace=ctx.workspace):  # it may put back a HEAD...
            outcome: Outcome = rewind.run()
    return Result.success(UndoReport(reverted=outcome.reverted, restored=outcome.restored, skipped=outcome.skipped,
                                     overwritten=conflicts))


def _plan(ctx: ToolContext, store: CheckpointStore, journal: Journal, steps: int, checkpoint: int | None
          ) -> Result[tuple[Rewind, list[str], list[str]]]:
    records = store.records()
    chosen = select(records, steps, checkpoint)
    if not chosen.ok:
        failed: Result[Any] = chosen.cast(None)
        return failed
    rewind = Rewind(ctx.workspace, store, records, chosen.data, journal)
    return Result.success((rewind, rewind.conflicts(), rewind.unrestorable()))


def _confirmed(ctx: ToolContext, conflicts: list[str]) -> bool:
    """Ask the client's user whether to overwrite (elicitation); False when there is no one to ask."""
    if ctx.peer is None:
        return False
    message = ("Undo would overwrite files that changed outside codeward since:\n" + "\n".join(conflicts)
               + "\nOverwrite them with their earlier contents? (The undo can itself be undone.)")
    schema = {"type": "object", "properties": {"overwrite": {"type": "boolean", "title": "Overwrite",
                                                             "default": False}},
              "required": ["overwrite"]}
    try:
        answer = ctx.peer.elicit(message, schema)
    except Exception:
        return False
    content = answer.get("content") or {}
    return answer.get("action") == "accept" and content.get("overwrite") is True
