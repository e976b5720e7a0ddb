"""What a tool receives besides its arguments: the security policy, settings and channels.

Everything a tool may depend on travels in a :class:`ToolContext`; there is no module-level
state, so two contexts with different workspaces can serve calls concurrently.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from codeward.checkpoints.journal import CheckpointSettings, Journal
from codeward.workspace import Workspace

CLIENT_KEY = "mcp_client"
"""The extras key saying whose call it is (``codeward.server.client_of``), for state a tool
keeps per client (Python sessions): ``""`` for a process's one client (stdio, the
command line, the agent), the MCP session over handshake-era HTTP, ``None`` when the transport
names no client."""


class Reporter(Protocol):
    """Where a tool sends progress and log messages while it works (thread-safe)."""

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None: ...

    def log(self, level: str, message: str) -> None: ...


class NullReporter:
    """Drops progress and log messages (direct calls without a client)."""

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        return None

    def log(self, level: str, message: str) -> None:
        return None


class Peer(Protocol):
    """The client side of a session, for tools that ask it something (sampling, elicitation)."""

    def sample(self, prompt: str, max_tokens: int = 256) -> str: ...

    def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Settings:
    """Behaviour switches shared by every tool call of one server or session."""

    output_cap_chars: int = 100_000
    """About 25k tokens of text; longer outputs are cut with a marker and saved in full."""
    spill_keep: int = 100
    """Saved outputs kept; older ones are deleted as new ones are saved."""
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    """Whether every change a tool makes is recorded (for ``undo``), and how much is kept."""


@dataclass
class ToolContext:
    """The per-call environment: policy (workspace), settings, progress/log channel, peer."""

    workspace: Workspace
    settings: Settings = field(default_factory=Settings)
    reporter: Reporter = field(default_factory=NullReporter)
    peer: Peer | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    extras: dict[str, Any] = field(default_factory=dict)
    """Services other layers attach (metrics, gateway handles); keyed by their own names."""
    approved: bool = False
    """A person approved this very call (set by the approval layer that asked them — never by a tool or
    the model): a tool marked ``ask_always`` then does not ask again."""
    journal: Journal | None = None
    """The checkpoint recorder of this call (set by the catalog for tools that write): a tool
    writing a file its arguments do not name calls ``journal.before(path)`` first."""

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self.reporter.progress(done, total, message)

    def log(self, level: str, message: str) -> None:
        self.reporter.log(level, message)

    def child(self, **changes: Any) -> ToolContext:
        values = {**self.__dict__, **changes}
        return ToolContext(**values)


ContextFactory = Callable[[], ToolContext]
