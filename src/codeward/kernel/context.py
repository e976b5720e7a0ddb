"""What a tool receives besides its arguments: the security policy, settings, services, channels.

Everything a tool may depend on travels in a :class:`ToolContext`; there is no module-level
state, so two contexts with different workspaces can serve calls concurrently. What one server
(or agent session) shares across its calls is its :class:`Services`; what belongs to one call
alone is its :class:`CallInfo`.

:class:`Services` holds typed slots: the configuration's tables and the server's shared helpers,
each found by its type (``ctx.services.get(WebSettings)``). The kernel names none of those types,
so no package above it is imported from here, and a setting added to a configuration table
reaches every tool without a field, an accessor or an assembly step of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from codeward.kernel.afterwards import Afterwards, Later
from codeward.kernel.path_locks import PathLocks, hold_roots, write_lock_keys
from codeward.kernel.repository_guard import RepositoryCompleted, RepositoryGuard
from codeward.kernel.workspace import GIT_MARKER_LOCK, Workspace

if TYPE_CHECKING:
    from codeward.kernel.client_link import ClientLink
    from codeward.kernel.session_toolsets import SessionToolsets

T = TypeVar("T")


@dataclass(frozen=True)
class HostRunQuestion:
    """What a person is asked about host-run writes found during a call: which paths and why, and the diff."""

    summary: str
    diff: str


AskPerson = Callable[[HostRunQuestion], bool]
"""Ask a person a :class:`HostRunQuestion` from a tool's thread; True only for their yes."""


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

    # A peer may also say ``asks_during_call = False``: its questions end the call and the client
    # retries it with the answer (2026-07-28 input rounds), so a tool that cannot run twice (a
    # shell run's write-back) must not ask it mid-way. Read with getattr (default True).


@dataclass(frozen=True)
class Settings:
    """How every call's output is bounded (``[server] output_cap_tokens`` and ``spill_keep``)."""

    output_cap_chars: int = 100_000
    """About 25k tokens of text; longer outputs are cut with a marker and saved in full."""
    spill_keep: int = 100
    """Saved outputs kept; older ones are deleted as new ones are saved."""


class ChangeJournal(Protocol):
    """The recorder of what one call changes (its checkpoint), as the kernel and the writers see it.

    A writer calls :meth:`before` for each path just before changing it; the checkpoint step
    (:mod:`codeward.engines.checkpoints`) opens one per call of a writing tool and commits it after.
    """

    def before(self, path: Path) -> None: ...


class Runtimes:
    """Long-lived helpers of one server, made on first use: the code-execution runtime (warm
    sandboxes, sessions), the shell runtime, the parse cache. Thread-safe; keyed by type."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: dict[type[Any], Any] = {}

    def get(self, kind: type[T], make: Callable[[], T]) -> T:
        """The helper of this type, made by ``make`` the first time it is asked for."""
        with self._lock:
            found = self._made.get(kind)
            if found is None:
                found = self._made[kind] = make()
            return found  # type: ignore[no-any-return]

    def peek(self, kind: type[T]) -> T | None:
        """The helper of this type if one was made, without making it."""
        with self._lock:
            return self._made.get(kind)

    def close(self) -> None:
        """Stop every helper that holds processes (those with a ``close()``)."""
        with self._lock:
            made, self._made = list(self._made.values()), {}
        for helper in made:
            closer = getattr(helper, "close", None)
            if callable(closer):
                closer()


class Services:
    """What every call of one server or agent session shares, built once from the configuration.

    Typed slots: ``Services(config.web, CallMetrics(), ...)`` holds one value per type, and
    :meth:`get` finds it by that type — a configuration table missing from the slots reads as its
    defaults with the environment's overrides, so a context built by hand (a test, a script) gets
    the settings a server started without a configuration file would have.
    :meth:`find` is for helpers that may be absent (the call recorder, the served tools).
    ``runtimes`` are the long-lived helpers made on first use.
    """

    __slots__ = ("_slots", "runtimes")

    def __init__(self, *values: object, runtimes: Runtimes | None = None) -> None:
        slots: dict[type[Any], object] = {}
        for value in values:
            if type(value) in slots:
                raise ValueError(f"two services of type {type(value).__name__}")
            slots[type(value)] = value
        self._slots: Mapping[type[Any], object] = MappingProxyType(slots)
        self.runtimes = runtimes if runtimes is not None else Runtimes()

    def get(self, kind: type[T]) -> T:
        """The value of this type; when none was given, what the type offers a context built without a
        configuration (its ``unconfigured()``: a configuration table's defaults with the environment's
        overrides), else ``kind()``."""
        found = self._slots.get(kind)
        if found is not None:
            return found  # type: ignore[return-value]
        unconfigured = getattr(kind, "unconfigured", None)
        return unconfigured() if callable(unconfigured) else kind()  # type: ignore[no-any-return]

    def find(self, kind: type[T]) -> T | None:
        """The value of this type, or None when none was given."""
        return self._slots.get(kind)  # type: ignore[return-value]

    def with_values(self, *values: object) -> Services:
        """These services with ``values`` put in (replacing those of the same type), sharing the runtimes."""
        replaced = {type(value) for value in values}
        kept = [value for kind, value in self._slots.items() if kind not in replaced]
        return Services(*kept, *values, runtimes=self.runtimes)

    def __repr__(self) -> str:
        return f"Services({', '.join(kind.__name__ for kind in self._slots)})"


@dataclass(frozen=True)
class CallInfo:
    """Facts about one call only: its id in the session's records, the transport's stream handle,
    its checkpoint journal, whether a person approved it."""

    call_id: str | None = None
    """The id the control plane gave this call (approvals in the console point at it)."""
    request_id: str | None = None
    """The JSON-RPC id of the MCP request that made this call (the audit's ``request_id``), None for a
    call from no request (the command line)."""
    session: str | None = None
    """The MCP session of the request over streamable HTTP (``Mcp-Session-Id``), else None."""
    close_sse_stream: Callable[[], Awaitable[None]] | None = None
    """Over streamable HTTP, ends the response stream early (the client resumes it)."""
    journal: ChangeJournal | None = None
    """The checkpoint recorder of this call (set by the checkpoint step for tools that write): a tool
    writing a file its arguments do not name calls ``journal.before(path)`` first."""
    client: str | None = ""
    """Whose call it is (``codeward.serving.server.client_of``), for state a tool keeps per client (Python
    sessions): ``""`` for a process's one client (stdio, the command line, the agent), the MCP
    session over handshake-era HTTP, ``None`` when the transport names no client."""
    user: str | None = None
    """The authenticated user of an HTTP call (``[audit] users_file``; ``operator`` for the server's own
    token), None where the transport names nobody — what the audit record says."""
    locks: PathLocks | None = None
    """The server's write locks (set by the catalog's locks step for tools that may write): see
    :meth:`hold_writes`."""
    approved: bool = False
    """A person approved this very call: at an approval prompt (terminal, console, the client's
    elicitation form) or by typing it on the command line — set by the approval layer that asked
    them or by the command line, never by a tool or the model. A tool marked ``ask_always``, a
    registry signature or a tool's first install then asks nobody again."""
    ask_person: AskPerson | None = None
    """Asks a person, during the call, to approve writing host-run files the call did not know it
    would write until it ran (a shell run's write-back): set by the approval layer
    (:class:`codeward.approval.host_run.HostRunApproval`); None when nobody can be asked."""
    toolsets: SessionToolsets | None = None
    """The toolsets the calling session enabled on a lean server (what ``toolsets`` changes); None for a
    call from no session (the command line)."""
    afterwards: Afterwards | None = None
    """What the call leaves for once its answer is out (:meth:`later`), started by the MCP server after the
    response; None where nobody starts it (the command line, a direct call): such work runs at once."""

    def later(self, work: Later) -> None:
        """Hand ``work`` over once this call's answer is out (:mod:`codeward.kernel.afterwards`): a
        background job that must not compete with the call's end. ``work`` must return at once."""
        if self.afterwards is None:
            work()
        else:
            self.afterwards.add(work)

    @contextmanager
    def hold_writes(self, paths: Iterable[Path], *, any_name: bool = False,
                    workspace: Workspace | None = None) -> Iterator[RepositoryGuard | None]:
        """Hold the locks for writing ``paths`` that the call's arguments do not name (a patch's
        files, a shell run's write-back): check and write under it, so a concurrent call — of this
        server, or of another codeward process on ``workspace``'s roots — cannot add the other half
        of a repository in between. ``any_name`` for a writer that learns its paths only while it
        writes. Outside a catalog call only the cross-process lock is taken.

        Given the ``workspace``, a write of ``paths`` that adds a repository-making name is checked
        again when the block ends (:class:`~codeward.kernel.repository_guard.RepositoryGuard`, yielded for a
        writer that checks itself first): a repository completed with another writer's files loses
        what this write created there, and :class:`~codeward.kernel.repository_guard.RepositoryCompleted` says so."""
        listed = list(paths)
        keys = write_lock_keys(listed, any_name=any_name)
        roots = workspace.roots if workspace is not None else ()
        if self.locks is not None:
            holding: AbstractContextManager[None] = self.locks.hold(keys, roots)
        else:
            holding = hold_roots(roots) if GIT_MARKER_LOCK in keys else nullcontext()
        with holding:
            guard = RepositoryGuard(workspace, listed) if workspace is not None and listed and GIT_MARKER_LOCK in \
                keys else None
            yield guard
            if guard is not None and not guard.checked:
                problem = guard.check()
                if problem:
                    raise RepositoryCompleted(problem)

@dataclass
class ToolContext:
    """The per-call environment: policy (workspace), settings, services, progress/log channel, peer."""

    workspace: Workspace
    settings: Settings = field(default_factory=Settings)
    reporter: Reporter = field(default_factory=NullReporter)
    peer: Peer | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    services: Services = field(default_factory=Services)
    call: CallInfo = field(default_factory=CallInfo)
    link: ClientLink | None = None
    """The MCP client behind this call, for a surface that relays another server's questions and reports
    to it (the gateway); None outside an MCP server (the agent, the command line)."""

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self.reporter.progress(done, total, message)

    def log(self, level: str, message: str) -> None:
        self.reporter.log(level, message)

    def child(self, **changes: Any) -> ToolContext:
        values = {**self.__dict__, **changes}
        return ToolContext(**values)


ContextFactory = Callable[[], ToolContext]
