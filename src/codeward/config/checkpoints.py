"""``[checkpoints]``: every change a tool makes is recorded, so that ``undo`` can revert it."""

from __future__ import annotations

from pydantic import field_validator

from codeward.config.base import Bool, Int, Table


class CheckpointSettings(Table):
    """Whether tool calls are recorded (``.codeward/checkpoints/``), and how much the store keeps."""

    enabled: Bool = True
    """Record what every writing tool call changes (``undo``, ``list_checkpoints``); ``false`` records
    nothing, and ``delete_path``/``move_path``, which keep what they remove in the store, refuse."""
    keep: Int = 100
    """Tool calls kept; older checkpoints are pruned."""
    max_mb: Int = 1024
    """Megabytes of snapshots and trash kept, at most; older checkpoints are pruned past it."""

    @field_validator("keep", "max_mb")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be an integer of at least 1")
        return value
