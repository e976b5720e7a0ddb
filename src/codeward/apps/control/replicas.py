"""The console's view of a deployment's approvals: every replica's pending calls, answered here.

The console's server runs its own event loop in a thread, while the shared state's connections
belong to the command's loop: :class:`ReplicaApprovals` carries each request over to that loop.
An answer releases the call on whichever replica holds it (the shared state announces it there)
and is audited as given by ``console`` on this replica. The console's performance panel shows the
whole deployment's call figures from here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from codeward.serving.shared_state.approvals import answer_pending
from codeward.serving.shared_state.metrics import deployment_metrics

if TYPE_CHECKING:
    from codeward.audit.log import AuditLog
    from codeward.audit.metrics import CallMetrics
    from codeward.serving.shared_state.backend import StateBackend

T = TypeVar("T")


class ReplicaApprovals:
    """Pending approvals of every replica, and answering one, from another thread's loop."""

    def __init__(self, state: StateBackend, audit: AuditLog | None, loop: asyncio.AbstractEventLoop,
                 metrics: CallMetrics | None = None) -> None:
        self.state = state
        self.audit = audit
        self.metrics = metrics
        self.replica = state.replica
        self._loop = loop

    async def _on_owner(self, work: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    async def pending(self) -> list[dict[str, Any]]:
        return await self._on_owner(self.state.pending_approvals())

    async def answer(self, approval_id: str, approved: bool, by: str) -> bool | None:
        return await self._on_owner(answer_pending(self.state, approval_id, approved, by, self.audit))

    async def figures(self) -> dict[str, Any] | None:
        """Every replica's call figures added up (``GET /metrics``'s answer), or None without a recorder."""
        if self.metrics is None:
            return None
        return await self._on_owner(deployment_metrics(self.state, self.metrics))
