"""The project's beads as the seed's tracks and tickets (``/api/gui/mma_status``).

The seed's orchestrator plans *tracks* made of *tickets*. codeward has no planner; the honest
counterpart is the project's own tracker: epics are tracks, every other open bead a ticket
(``track`` names the epic it belongs to, by a parent-child dependency). Read from the built-in
store on each request; a project without ``.beads/`` has neither.
"""

from __future__ import annotations

from typing import Any

from codeward.engines.beads.store import open_store
from codeward.engines.beads.tracker import BuiltinTracker
from codeward.kernel.workspace import Access, Workspace


def beads_board(workspace: Workspace) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tracks, tickets) of the workspace's primary root; both empty without a tracker."""
    store = open_store(workspace, Access.READ)
    if not store.ok or store.data is None:
        return [], []
    listed = BuiltinTracker(store.data).list_beads(None)
    if not listed.ok:
        return [], []
    tracks: list[dict[str, Any]] = []
    tickets: list[dict[str, Any]] = []
    for bead in listed.data:
        record = {"id": bead.id, "title": bead.title, "status": bead.status, "priority": bead.priority,
                  "type": bead.issue_type, "blocked_by": bead.blockers()}
        if bead.issue_type == "epic":
            tracks.append(record)
        else:
            parent = next((d.depends_on_id for d in bead.dependencies if d.type == "parent-child"), None)
            tickets.append({**record, "track": parent})
    return tracks, tickets
