"""The state backend seam: what ``serve --http`` and ``gateway --http`` keep outside one request.

A backend hands the SDK one ``EventStore`` per MCP session (so a stream id — the SDK uses the
request id — never meets another session's) and keeps a record of every call in flight with a
lease its replica renews; a replica that finds a lease expired may finish the call for a client
that reconnected to it (:mod:`codeward.serving.shared_state.resume`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mcp.server.streamable_http import EventCallback, EventId, StreamId
from mcp_types import JSONRPCMessage

if TYPE_CHECKING:
    from codeward.gateway.pins import PinStore


@dataclass(frozen=True)
class StoredEvent:
    """One event of a session's log: its id, the SDK stream it belongs to, the message (JSON text,
    or None for a priming event)."""

    event_id: str
    stream_id: str
    message: str | None


@dataclass(frozen=True)
class CallRecord:
    """A request in flight: enough for another replica to finish it (the JSON-RPC request as sent)."""

    session_id: str
    stream_id: str
    request: dict[str, Any]
    owner: str


class EventLog(Protocol):
    """One session's events: the SDK's ``EventStore`` methods plus reading onward from an event (tailing)."""

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Store one event of a stream; its id goes out with it (empty: not resumable)."""
        ...

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Send the stream's events after ``last_event_id``; the stream, or None if the event is unknown."""
        ...

    async def stream_of(self, event_id: str) -> str | None:
        """The stream an event belongs to, or None if the event is unknown (or expired)."""
        ...

    async def stream_events(self, stream_id: str) -> Sequence[StoredEvent]:
        """Every stored event of one stream, oldest first."""
        ...

    async def read_after(self, event_id: str, wait: float) -> Sequence[StoredEvent]:
        """Events stored after ``event_id``, waiting up to ``wait`` seconds for the first one."""
        ...


class StateBackend(Protocol):
    """Shared state of one HTTP server; every replica of a deployment opens the same one."""

    shared: bool
    """Whether other processes see this state (Redis) or only this one (memory)."""
    replica: str
    """This process's name among the replicas (random per start)."""
    where: str
    """The backend for messages (a Redis URL without its password, or ``memory``)."""

    def events(self, session_id: str) -> EventLog:
        """The event log of one MCP session."""
        ...

    async def check(self) -> None:
        """Raise :class:`~codeward.kernel.state_unavailable.StateUnavailable` unless the backend answers now."""
        ...

    async def remember_session(self, session_id: str, initialize: dict[str, Any]) -> None:
        """Keep the ``initialize`` request that opened a session, so any replica can take the session up."""
        ...

    async def session_opening(self, session_id: str) -> dict[str, Any] | None:
        """The ``initialize`` request that opened a session (on any replica), or None."""
        ...

    async def begin_call(self, record: CallRecord) -> str | None:
        """Record a call in flight on this replica (its lease starts now); None once recorded. If the same
        request of the same session is already recorded (a balancer sent it twice), nothing changes and
        the answer is the replica that recorded it: the request is not to run again."""
        ...

    async def end_call(self, session_id: str, stream_id: str) -> None:
        """The call answered: forget its record and lease."""
        ...

    async def renew_leases(self) -> None:
        """Extend the lease of every call this replica runs, and its heartbeat (called every second: the
        approvals a replica holds are reaped once its heartbeat is older than a lease)."""
        ...

    async def call_record(self, session_id: str, stream_id: str) -> CallRecord | None:
        """The record of a call in flight, on any replica, or None."""
        ...

    async def lease_alive(self, session_id: str, stream_id: str) -> bool:
        """Whether the replica running the call renewed its lease recently."""
        ...

    async def claim(self, session_id: str, stream_id: str) -> bool:
        """Take over a call whose lease expired; True for exactly one replica."""
        ...

    async def open_approval(self, approval_id: str, data: dict[str, Any]) -> None:
        """Publish a pending approval (what the call is, which replica holds it)."""
        ...

    async def pending_approvals(self) -> list[dict[str, Any]]:
        """Every approval still waiting, on any replica."""
        ...

    async def answer_approval(self, approval_id: str, approved: bool, by: str) -> bool | None:
        """Answer one: True if this answer decided it, False if it was already answered, None if unknown."""
        ...

    async def wait_approval(self, approval_id: str) -> dict[str, Any]:
        """Wait for the answer to one approval (``{"approved": bool, "by": str}``)."""
        ...

    async def withdraw_approval(self, approval_id: str) -> None:
        """Take a pending approval back (its replica is stopping): no longer listed, answering it is ``gone``."""
        ...

    async def approval_gone(self, approval_id: str) -> dict[str, Any] | None:
        """An approval taken back because its replica stopped (``{"gone": "stopped"}``) or died without
        one (``"died"``: no heartbeat for a lease), with what it was; None if no such approval."""
        ...

    async def audit(self, record: Mapping[str, Any]) -> None:
        """Add one audit record to the shared audit stream."""
        ...

    async def recent_audit(self, count: int) -> list[dict[str, Any]]:
        """The newest ``count`` audit records of every replica, newest first."""
        ...

    async def publish_metrics(self, figures: Mapping[str, Any]) -> None:
        """Replace this replica's published call figures (:mod:`codeward.serving.shared_state.metrics`)."""
        ...

    async def replica_metrics(self) -> dict[str, dict[str, Any]]:
        """Every replica's published call figures, by replica."""
        ...

    def pins(self) -> PinStore | None:
        """The gateway's tool pins shared by every replica, or None (this process keeps them in a file)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
