"""A bead (issue) as Beads writes it in ``.beads/issues.jsonl``.

Fields codeward does not use (design, notes, labels, comments...) are kept as they are, so a
file written by ``bd`` survives a round trip through the built-in store unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Status = Literal["open", "in_progress", "blocked", "deferred", "closed"]
IssueType = Literal["bug", "feature", "task", "epic", "chore"]
STATUSES: tuple[str, ...] = ("open", "in_progress", "blocked", "deferred", "closed")
HIDDEN_STATUSES = frozenset({"tombstone"})
"""Soft-deleted beads: kept in the file, never listed."""
BLOCKING_TYPES = frozenset({"blocks"})
"""Dependency types that keep a bead from being ready (related, discovered-from... do not)."""
DEFAULT_PRIORITY = 2


def now_timestamp() -> str:
    """RFC 3339 with microseconds, as Go's time.Time reads it."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Dependency(BaseModel):
    """``issue_id`` depends on ``depends_on_id``."""

    model_config = ConfigDict(extra="allow")

    issue_id: str = ""
    depends_on_id: str
    type: str = "blocks"
    created_at: str = ""
    created_by: str = ""


class Bead(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    title: str
    description: str = ""
    status: str = "open"
    priority: int = DEFAULT_PRIORITY
    issue_type: str = "task"
    created_at: str = ""
    updated_at: str = ""
    closed_at: str | None = None
    dependencies: list[Dependency] = Field(default_factory=list)

    @field_validator("dependencies", mode="before")
    @classmethod
    def _dependency_shapes(cls, value: Any) -> Any:
        """Accept bd's raw records, its enriched form (``id``, ``dependency_type``) and bare ids."""
        if value is None:
            return []
        if not isinstance(value, list):
            return value
        shaped: list[Any] = []
        for item in value:
            if isinstance(item, str):
                shaped.append({"depends_on_id": item})
            elif isinstance(item, dict) and "depends_on_id" not in item and "id" in item:
                shaped.append({"depends_on_id": item["id"], "type": item.get("dependency_type", "blocks")})
            else:
                shaped.append(item)
        return shaped

    def blockers(self) -> list[str]:
        """Ids of the beads this one waits for."""
        return [d.depends_on_id for d in self.dependencies if d.type in BLOCKING_TYPES]

    def to_json_line(self, key_order: Sequence[str] = ()) -> str:
        """One compact line, empty optional fields left out as bd does.

        Keys come in ``key_order`` (the order of the line this bead was read from), then in
        Beads' own field order.
        """
        import json

        data = self.model_dump(mode="json")
        if data.get("closed_at") is None:
            data.pop("closed_at", None)
        if not data.get("dependencies"):
            data.pop("dependencies", None)
        ordered = {k: data[k] for k in key_order if k in data} | data
        return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))

    def row(self) -> str:
        """The seed's listing format."""
        return f"ID: {self.id}, Status: {self.status}, Title: {self.title}"
