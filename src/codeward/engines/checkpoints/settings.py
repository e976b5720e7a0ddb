"""Whether tool calls are recorded, and how much the store keeps: the part of checkpoints every context carries.

Apart from the journal and the store so that building a context (a server's start) does not
import the store's record models; they come with the first call that writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeward.engines.checkpoints.store import CheckpointStore


@dataclass(frozen=True)
class CheckpointSettings:
    """Whether tool calls are recorded, and how much the store keeps."""

    enabled: bool = True
    keep: int = 100
    """Tool calls kept (older checkpoints are pruned)."""
    max_mb: int = 1024
    """Snapshots and trash kept, at most (older checkpoints are pruned past it)."""

    def store(self, root: Path) -> CheckpointStore:
        from codeward.engines.checkpoints.store import CheckpointStore

        return CheckpointStore(root, keep=self.keep, max_bytes=self.max_mb << 20)
