"""Beads tools: list, create, update and find ready issues of the project's ``.beads/`` tracker.

They delegate to the ``bd`` CLI when it is on PATH and use the built-in store of
``.beads/issues.jsonl`` otherwise (see :mod:`codeward.engines.beads.tracker`). Without a ``.beads/``
folder in the primary root every tool answers the seed's "no active workspace" error.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from codeward.engines.beads.model import DEFAULT_PRIORITY, Bead, IssueType, Status
from codeward.engines.beads.tracker import MAX_TITLE_CHARS, BeadChanges, open_tracker
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access

Priority = Annotated[int, Field(ge=0, le=4, description="0 critical .. 4 backlog.")]


class BeadView(BaseModel):
    id: str
    title: str
    status: str
    priority: int
    issue_type: str
    description: str
    depends_on: list[str]
    created_at: str
    updated_at: str
    closed_at: str | None

    @classmethod
    def of(cls, bead: Bead) -> BeadView:
        return cls(id=bead.id, title=bead.title, status=bead.status, priority=bead.priority,
                   issue_type=bead.issue_type, description=bead.description,
                   depends_on=[d.depends_on_id for d in bead.dependencies], created_at=bead.created_at,
                   updated_at=bead.updated_at, closed_at=bead.closed_at)


class BeadList(BaseModel):
    beads: list[BeadView]
    backend: str
    empty_text: str = "No beads."

    def render(self) -> str:
        if not self.beads:
            return self.empty_text
        return "\n".join(f"ID: {b.id}, Status: {b.status}, Title: {b.title}" for b in self.beads)


class BeadChange(BaseModel):
    action: str
    bead: BeadView
    backend: str

    def render(self) -> str:
        b = self.bead
        text = f"{self.action} {b.id}: {b.title} (status {b.status}, priority {b.priority}, {b.issue_type})"
        if b.depends_on:
            text += f"\nDepends on: {', '.join(b.depends_on)}"
        return text


@tool(toolset="beads", read_only=True, output=BeadList, title="List beads",
      examples=[{"status": "open"}])
def bd_list(
    ctx: ToolContext,
    status: Status | None = None,
) -> Result[BeadList]:
    """The project's beads (issues, in .beads/): id, status, title."""
    tracker = open_tracker(ctx, Access.READ)
    if not tracker.ok or tracker.data is None:
        return tracker.cast(_no_list())
    listed = tracker.data.list_beads(status)
    if not listed.ok:
        return listed.cast(_no_list())
    empty = f"No beads with status {status}." if status else "No beads yet; create one with bd_create."
    return Result.success(BeadList(beads=[BeadView.of(b) for b in listed.data], backend=tracker.data.name,
                                   empty_text=empty))


@tool(toolset="beads", output=BeadChange, title="Create a bead",
      examples=[
          {
              "title": "Warn the day before perishable stock expires",
              "priority": 1,
              "issue_type": "feature",
              "dependencies": ["inv-3g9k"],
          },
      ])
def bd_create(
    ctx: ToolContext,
    title: Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS)],
    description: str = "",
    priority: Priority = DEFAULT_PRIORITY,
    issue_type: IssueType = "task",
    dependencies: Annotated[list[str], Field(description="Bead ids that must close first.")
                            ] = [],  # noqa: B006 - copied by pydantic
) -> Result[BeadChange | None]:
    """Create a bead (an issue in .beads/); it is not ready until its dependencies are closed."""
    if not title.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "title is blank", "Give a short summary of the work.")
    tracker = open_tracker(ctx, Access.WRITE)
    if not tracker.ok or tracker.data is None:
        return tracker.cast(None)
    created = tracker.data.create(title.strip(), description, priority, issue_type, dependencies)
    if not created.ok or created.data is None:
        return created.cast(None)
    return Result.success(BeadChange(action="Created", bead=BeadView.of(created.data), backend=tracker.data.name))


@tool(toolset="beads", idempotent=True, output=BeadChange, title="Update a bead",
      examples=[{"bead_id": "inv-3g9k", "status": "in_progress", "assignee": "sam"}])
def bd_update(
    ctx: ToolContext,
    bead_id: Annotated[str, Field(min_length=1)],
    status: Status | None = None,
    priority: Annotated[int | None, Field(ge=0, le=4)] = None,
    title: Annotated[str | None, Field(min_length=1, max_length=MAX_TITLE_CHARS)] = None,
    description: str | None = None,
    assignee: str | None = None,
) -> Result[BeadChange | None]:
    """Change a bead's status, priority, title, description or assignee (only those given)."""
    changes = BeadChanges(status=status, priority=priority, title=title, description=description,
                          assignee=assignee)
    if not changes.given():
        return Result.fail(ErrorKind.INVALID_INPUT, f"nothing to change for {bead_id}",
                           "Pass at least one of status, priority, title, description, assignee.")
    tracker = open_tracker(ctx, Access.WRITE)
    if not tracker.ok or tracker.data is None:
        return tracker.cast(None)
    updated = tracker.data.update(bead_id.strip(), changes)
    if not updated.ok or updated.data is None:
        return updated.cast(None)
    return Result.success(BeadChange(action="Updated", bead=BeadView.of(updated.data), backend=tracker.data.name))


@tool(toolset="beads", read_only=True, output=BeadList, title="Beads ready to work on",
      examples=[{}])
def bd_ready(ctx: ToolContext) -> Result[BeadList]:
    """The open beads whose dependencies are all closed, highest priority first: what to work on next."""
    tracker = open_tracker(ctx, Access.READ)
    if not tracker.ok or tracker.data is None:
        return tracker.cast(_no_list())
    ready = tracker.data.ready()
    if not ready.ok:
        return ready.cast(_no_list())
    return Result.success(BeadList(beads=[BeadView.of(b) for b in ready.data], backend=tracker.data.name,
                                   empty_text="No beads are ready: every open bead waits on an unclosed "
                                              "dependency, or none is open."))


def _no_list() -> BeadList:
    return BeadList(beads=[], backend="")
