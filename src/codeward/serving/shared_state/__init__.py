"""Where HTTP servers keep what replicas share: resumable-stream events, sessions, in-flight calls.

``open_state(settings)`` gives the backend ``[state] url`` names: :class:`MemoryState` (this
process, the default) or :class:`RedisState` (every replica on one Redis). The MCP transport
sees only the SDK's ``EventStore`` seam, one per session (:meth:`StateBackend.events`);
:mod:`codeward.serving.shared_state.resume` lets a replica resume a stream another replica started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeward.kernel.state_unavailable import StateUnavailable
from codeward.serving.shared_state.backend import CallRecord, StateBackend
from codeward.serving.shared_state.memory import MemoryState

if TYPE_CHECKING:
    from codeward.config.state import StateSettings


def open_state(settings: StateSettings) -> StateBackend:
    """The backend ``settings.url`` names (nothing connects until first use)."""
    if not settings.shared:
        return MemoryState()
    from codeward.serving.shared_state.redis_state import RedisState

    return RedisState(settings)


__all__ = ["CallRecord", "MemoryState", "StateBackend", "StateUnavailable", "open_state"]
