"""The sandbox's vocabulary: what to run (:class:`SandboxRequest`), what came of it
(:class:`SandboxResult`) and the :class:`Sandbox` protocol every backend implements."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codeward.engines.sandbox.overlay import Overlays
    from codeward.engines.sandbox.shared_net import SharedNetwork

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class Status(StrEnum):
    """How a run ended, in the seed's words: the caller branches on this, not on messages."""

    SUCCESS = "success"
    """The program ran and exited with status 0."""
    ERROR = "error"
    """The program ran and failed: non-zero exit, a signal, or a resource limit it hit."""
    TIMEOUT = "timeout"
    """The wall-clock limit passed; every process of the run was killed."""
    SETUP_ERROR = "setup_error"
    """The program could not be started (no backend, missing toolchain, bad request)."""


class Limit(StrEnum):
    """Which resource limit ended a run (``SandboxResult.limit_hit``)."""

    TIMEOUT = "timeout"
    MEMORY = "memory"
    PROCESSES = "processes"
    CPU_TIME = "cpu_time"
    FILE_SIZE = "file_size"
    OUTPUT = "output"
    DISK = "disk"
    """What the run wrote filled its disk cap (``[sandbox] disk_mb``)."""


class SandboxUnavailable(RuntimeError):
    """A backend asked for by name cannot run here; the message says why and what to do."""


@dataclass(frozen=True)
class Bind:
    """A host path made visible inside the sandbox at ``dest`` (default: the same path)."""

    source: str
    dest: str = ""

    @property
    def target(self) -> str:
        return self.dest or self.source

    @classmethod
    def of(cls, value: str | tuple[str, str] | Bind) -> Bind:
        if isinstance(value, Bind):
            return value
        if isinstance(value, tuple):
            return cls(value[0], value[1])
        return cls(value)


BindSpec = str | tuple[str, str] | Bind


@dataclass(frozen=True)
class SandboxRequest:
    """One program to run contained. Sizes are in MB; ``None`` means "no limit of this kind".

    Paths in ``workdir`` and bind destinations are paths *inside* the sandbox. With no
    ``workdir`` the program starts in a private, empty, writable ``/work`` (a size-limited
    tmpfs, like ``/tmp``); give ``workdir`` = a bound directory to start there instead.
    """

    argv: Sequence[str]
    stdin: bytes | str = b""
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to a minimal environment (PATH, HOME=/tmp, LANG); nothing else is inherited."""
    workdir: str | None = None
    rw_binds: Sequence[BindSpec] = ()
    ro_binds: Sequence[BindSpec] = ()
    network: bool = False
    network_hosts: Mapping[str, tuple[str, ...]] | None = None
    """With ``network``: reach only these hosts (name → public IPv4 addresses, listed in the run's
    ``/etc/hosts``; no DNS, every other address unreachable). ``None``: the internet (bwrap only:
    other backends cannot narrow their network and are not used with it)."""
    timeout_s: float = 30.0
    memory_mb: int | None = 512
    max_processes: int | None = 64
    """Processes *and threads* (cgroup pids.max counts tasks)."""
    cpu_seconds: int | None = None
    """CPU time (RLIMIT_CPU); defaults to the timeout rounded up."""
    file_size_mb: int | None = 64
    open_files: int | None = 256
    scratch_mb: int = 256
    """Size of the private writable tmpfs mounts (``/tmp`` and the default ``/work``); a run with
    ``overlays`` on a disk keeps its ``/tmp`` there instead, under that disk's one cap."""
    address_space_mb: int | None = None
    """RLIMIT_AS; used only where no cgroup can limit memory (it breaks JVMs, node and Go)."""
    max_output_bytes: int = 1_000_000
    """Kept per stream; more is dropped (``*_truncated``); 16× more kills the run."""
    inherit_fds: tuple[int, ...] = ()
    """Host descriptors the program inherits at the same numbers (control pipes of sessions)."""
    protected: Sequence[BindSpec] = ()
    """Read-only binds mounted after ``rw_binds``, to keep parts of a writable tree read-only
    (bwrap only: backends without a mount namespace cannot and do not honour them)."""
    hidden: Sequence[BindSpec] = ()
    """Host paths inside bound trees covered by an empty read-only stand-in after every bind,
    so secrets there cannot be read (bwrap only, like ``protected``)."""
    run_as: tuple[int, int] | None = None
    """(uid, gid) of the host user to run as, when codeward runs as root (bwrap and process): a
    project's owner, so the program has that user's rights rather than root's."""
    overlays: Overlays | None = None
    shared_network: SharedNetwork | None = None
    """Join this loopback-only namespace (shared by one client's runs) instead of a fresh empty one;
    sockets are then allowed (the namespace has no route out). Ignored when ``network`` is on."""
    """Host directories (and files) shown writable at their own paths, whose writes land in
    private layers the caller applies afterwards (bwrap only; see :mod:`.overlay`)."""

    def stdin_bytes(self) -> bytes:
        return self.stdin.encode() if isinstance(self.stdin, str) else self.stdin


@dataclass
class SandboxResult:
    """What came of a run. ``backend`` and ``isolated`` say how contained it was."""

    status: Status
    exit_code: int | None
    """The exit status; ``-N`` when killed by signal N; ``None`` when nothing ran."""
    stdout: str
    stderr: str
    duration_s: float
    backend: str
    isolated: bool
    error_message: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    limit_hit: Limit | None = None
    peak_memory_mb: float | None = None
    notes: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    """The limits that were enforced, each with its mechanism (cgroup, rlimit, timeout)."""
    unenforced_limits: list[str] = field(default_factory=list)
    """Limits asked for that this host could not enforce, and why."""

    @property
    def ok(self) -> bool:
        return self.status is Status.SUCCESS

    @classmethod
    def setup_error(cls, message: str, backend: str, isolated: bool) -> SandboxResult:
        return cls(Status.SETUP_ERROR, None, "", "", 0.0, backend, isolated, message)


class Sandbox(Protocol):
    """A way to run a program contained. ``run`` never raises for anything the program does."""

    name: str
    isolated: bool

    def run(self, request: SandboxRequest) -> SandboxResult: ...

    def describe(self) -> str:
        """One line: backend, version and which protections are in force."""
        ...
