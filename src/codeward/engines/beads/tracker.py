"""The four Beads operations over either backend: ``bd`` when it is on PATH, else the built-in store.

Settings (the ``[beads]`` table, :class:`BeadsSettings`) travel in the context's services; by default
codeward uses ``bd`` when it finds it and the built-in store otherwise, so a project can start
here and move to ``bd`` later without converting anything.
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from codeward.config.beads import BeadsSettings
from codeward.engines.beads.bd_cli import BdCli
from codeward.engines.beads.ids import new_id
from codeward.engines.beads.model import HIDDEN_STATUSES, Bead, Dependency, now_timestamp
from codeward.engines.beads.store import BeadsStore, open_store
from codeward.engines.contained.project_sandbox import BoxLauncher, ProjectAccess, ProjectSandbox
from codeward.engines.sandbox.choice import Executor
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Access

if TYPE_CHECKING:
    from codeward.kernel.context import ToolContext

MAX_TITLE_CHARS = 500
BD_MEMORY_MB = 1024
BD_ENV = {"BEADS_NO_DAEMON": "1"}
"""bd runs once per call in the sandbox: no background daemon (it would be killed with the run)."""


@dataclass(frozen=True)
class BeadChanges:
    """Fields of an update; ``None`` leaves a field as it is."""

    status: str | None = None
    priority: int | None = None
    title: str | None = None
    description: str | None = None
    assignee: str | None = None

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


class Tracker(Protocol):
    @property
    def name(self) -> str: ...

    def list_beads(self, status: str | None) -> Result[list[Bead]]: ...

    def create(self, title: str, description: str, priority: int, issue_type: str,
               dependencies: Sequence[str]) -> Result[Bead | None]: ...

    def update(self, bead_id: str, changes: BeadChanges) -> Result[Bead | None]: ...

    def ready(self) -> Result[list[Bead]]: ...


def open_tracker(ctx: ToolContext, access: Access) -> Result[Tracker | None]:
    """The tracker for the workspace's primary root; fails with the seed's error when there is no .beads/.
    ``bd`` runs in the project's sandbox (it runs ``.beads/hooks/`` scripts); the built-in store is
    codeward's own code."""
    workspace, services = ctx.workspace, ctx.services
    store = open_store(workspace, access)
    if not store.ok or store.data is None:
        return store.cast(None)
    settings = services.get(BeadsSettings)
    if settings.backend == "builtin":
        return Result.success(BuiltinTracker(store.data))
    executable = shutil.which(settings.bd_command)
    if executable is None:
        if settings.backend == "bd":
            return Result.fail(ErrorKind.UNAVAILABLE, f"the Beads CLI {settings.bd_command!r} is not on PATH",
                               "Install bd, or use the built-in store (beads settings: backend='builtin').")
        return Result.success(BuiltinTracker(store.data))

    opened = ProjectSandbox.open(ctx, Executor.BEADS, ProjectAccess.WRITE, hide_history=True)
    if not opened.ok or opened.data is None:
        refused = opened.errors[0]
        return Result.fail(refused.kind, refused.message, refused.hint + " Or use the built-in store: [beads] "
                           "backend = \"builtin\" in codeward.toml.")
    launcher = BoxLauncher(opened.data, memory_mb=BD_MEMORY_MB, env=BD_ENV)
    return Result.success(BdTracker(BdCli(executable, workspace.primary, settings.timeout, launcher)))


def ready_beads(beads: Sequence[Bead]) -> list[Bead]:
    """Open beads whose blocking dependencies are all closed; highest priority, then oldest, first.

    A dependency on an id that is not in the tracker counts as not closed.
    """
    status_of = {b.id: b.status for b in beads}
    ready = [b for b in beads if b.status == "open" and all(status_of.get(d) == "closed" for d in b.blockers())]
    return sorted(ready, key=lambda b: (b.priority, b.created_at, b.id))


@dataclass(frozen=True)
class BuiltinTracker:
    store: BeadsStore
    name: str = "built-in store"

    def list_beads(self, status: str | None) -> Result[list[Bead]]:
        loaded = self.store.load()
        if not loaded.ok:
            return loaded
        visible = [b for b in loaded.data if b.status not in HIDDEN_STATUSES]
        return Result.success([b for b in visible if status is None or b.status == status])

    def ready(self) -> Result[list[Bead]]:
        loaded = self.store.load()
        return loaded.cast(ready_beads([b for b in loaded.data if b.status not in HIDDEN_STATUSES]))

    def create(self, title: str, description: str, priority: int, issue_type: str,
               dependencies: Sequence[str]) -> Result[Bead | None]:
        wanted = list(dict.fromkeys(d.strip() for d in dependencies if d.strip()))

        def add(beads: list[Bead]) -> Result[tuple[list[Bead], Bead | None]]:
            known = {b.id for b in beads if b.status not in HIDDEN_STATUSES}
            unknown = [d for d in wanted if d not in known]
            if unknown:
                return Result.fail(ErrorKind.NOT_FOUND, f"dependencies not found: {', '.join(unknown)}",
                                   _suggest(unknown[0], known) + " Nothing was created.")
            stamp = now_timestamp()
            bead_id = new_id(self.store.prefix(beads), title, stamp, {b.id for b in beads})
            actor = os.environ.get("USER") or "codeward"
            bead = Bead(
                id=bead_id, title=title, description=description, status="open", priority=priority,
                issue_type=issue_type, created_at=stamp, updated_at=stamp,
                dependencies=[Dependency(issue_id=bead_id, depends_on_id=d, type="blocks", created_at=stamp,
                                         created_by=actor) for d in wanted],
            )
            return Result.success(([*beads, bead], bead))

        return self.store.change(add, None)

    def update(self, bead_id: str, changes: BeadChanges) -> Result[Bead | None]:
        def apply(beads: list[Bead]) -> Result[tuple[list[Bead], Bead | None]]:
            index = next((i for i, b in enumerate(beads) if b.id == bead_id and b.status not in HIDDEN_STATUSES),
                         None)
            if index is None:
                return Result.fail(ErrorKind.NOT_FOUND, f"no bead with id {bead_id!r}",
                                   _suggest(bead_id, {b.id for b in beads}) + " Nothing was changed.")
            stamp = now_timestamp()
            values = changes.given()
            updated = beads[index].model_copy(update=values | {"updated_at": stamp})
            if "status" in values:
                closing = values["status"] == "closed"
                was_closed = beads[index].status == "closed"
                if closing and not was_closed:
                    updated.closed_at = stamp
                elif not closing:
                    updated.closed_at = None
            beads[index] = updated
            return Result.success((beads, updated))

        return self.store.change(apply, None)


@dataclass(frozen=True)
class BdTracker:
    cli: BdCli
    name: str = "bd"

    def list_beads(self, status: str | None) -> Result[list[Bead]]:
        return _beads(self.cli.run("list", *(("--status", status) if status else ())))

    def ready(self) -> Result[list[Bead]]:
        return _beads(self.cli.run("ready"))

    def create(self, title: str, description: str, priority: int, issue_type: str,
               dependencies: Sequence[str]) -> Result[Bead | None]:
        args = ["create", title, "-p", str(priority), "-t", issue_type]
        if description:
            args += ["-d", description]
        wanted = [d.strip() for d in dependencies if d.strip()]
        if wanted:
            args += ["--deps", ",".join(wanted)]
        return _bead(self.cli.run(*args))

    def update(self, bead_id: str, changes: BeadChanges) -> Result[Bead | None]:
        args = ["update", bead_id]
        for name, value in changes.given().items():
            args += [f"--{name}", str(value)]
        return _bead(self.cli.run(*args))


def _beads(ran: Result[Any]) -> Result[list[Bead]]:
    if not ran.ok:
        return ran.cast([])
    items = ran.data if isinstance(ran.data, list) else []
    try:
        return Result.success([Bead.model_validate(item) for item in items])
    except ValidationError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"bd returned issues of an unexpected shape: {exc.errors()[0]}",
                           "Update bd, or use the built-in store (beads settings: backend='builtin').", data=[])


def _bead(ran: Result[Any]) -> Result[Bead | None]:
    if not ran.ok:
        return ran.cast(None)
    item = ran.data[0] if isinstance(ran.data, list) and ran.data else ran.data
    try:
        return Result.success(Bead.model_validate(item))
    except ValidationError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"bd returned an issue of an unexpected shape: {exc.errors()[0]}",
                           "Update bd, or use the built-in store (beads settings: backend='builtin').", data=None)


def _suggest(wanted: str, known: set[str]) -> str:
    close = difflib.get_close_matches(wanted, sorted(known), n=3, cutoff=0.6)
    if close:
        return f"Did you mean {', '.join(close)}? bd_list shows every id."
    return "bd_list shows every id."
