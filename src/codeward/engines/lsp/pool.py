"""The language servers of one codeward process: started on first use, kept, stopped when idle.

A server is keyed by (language family, project root, the workspace's roots): the first call that
needs one starts it in the background and answers at once from the index; the server loads the
project (its own warm-up: the handshake, the files it finds, the work it reports in progress) and
is *ready* when that is done, and every later call asks it. A server whose process ends is started
again once, and the next answer says so; a second end leaves that server out (the index answers)
until the idle timeout forgets it. Servers unused for ``[lsp] idle_s`` are stopped by a reaper
thread; at most ``[lsp] max_servers`` live at once.

Between calls files change (codeward's own edits, the agent's shell, the person's editor): before
each request the server hears of every file of its languages whose size or time changed since
it last heard (``workspace/didChangeWatchedFiles``) and of every change to the documents it holds
open (``textDocument/didChange``), so answers follow the disk.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.config.lsp import LspSettings
from codeward.engines.lsp.box import NOT_ISOLATED_NOTE, NoIsolation, server_program, start_boxed
from codeward.engines.lsp.client import LspClient, LspError
from codeward.engines.lsp.servers import NotInstalled, ServerSpec
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    from codeward.engines.contained.project_sandbox import ProjectSandbox, Started
    from codeward.kernel.context import Services
    from codeward.kernel.result import Result

HANDSHAKE_TIMEOUT_S = 60.0
WARMUP_TIMEOUT_S = 300.0
"""The longest codeward waits for a server to load a project before trusting its answers anyway."""
DIAGNOSTICS_WAIT_S = 120.0
MAX_OPEN_DOCUMENTS = 64
CHANGE_SETTLE_S = 15.0
"""The longest a question waits for a server to take in files that changed since it last asked."""
REAPER_MAX_INTERVAL_S = 30.0

FileStates = dict[Path, tuple[int, int]]
"""Files a server answers for, with their (mtime_ns, size)."""
Reader = Callable[[Path], "str | None"]
"""A file's text through the workspace gate (None when it may not be read)."""


class Phase(StrEnum):
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"


@dataclass
class _Document:
    version: int
    mtime_ns: int
    size: int
    used: float = field(default_factory=time.monotonic)
    changed_at: float = field(default_factory=time.monotonic)
    """When the server was last sent this document's text (its diagnostics after that are current)."""


class Server:
    """One language server over one project root, in the sandbox (see the module docstring)."""

    def __init__(self, spec: ServerSpec, root: Path, workspace: Workspace, settings: LspSettings,
                 box: Result[ProjectSandbox | None], restarts: int = 0,
                 launcher: ThreadPoolExecutor | None = None) -> None:
        self.spec = spec
        self.root = root
        self.workspace = workspace
        self.settings = settings
        self.box = box
        """The project's sandbox the server starts in (or why there is none)."""
        self.restarts = restarts
        self._launcher = launcher
        self.phase = Phase.STARTING
        self.problem = ""
        self.version = ""
        self.ready = threading.Event()
        self.client: LspClient | None = None
        self.boxed: Started | None = None
        self.started = time.monotonic()
        self.ready_after: float | None = None
        self.last_used = time.monotonic()
        self.in_use = 0
        self._lock = threading.RLock()
        self._documents: dict[Path, _Document] = {}
        self._known: FileStates = {}
        self._stopped = threading.Event()

    @property
    def label(self) -> str:
        return f"{self.spec.name}{' ' + self.version if self.version else ''}"

    def boot(self, states: FileStates, first: Path | None, read: Reader) -> None:
        """Start the process and load the project (run in a thread of its own)."""
        try:
            located = self.spec.find(command_for(self.settings, self.spec.family))
            self.version = located.version
            program = server_program(located, self.root, self.settings.memory_mb)
            self._known = dict(states)
            # Started from the pool's long-lived launcher thread: bwrap dies with the thread that started it
            # (--die-with-parent is PR_SET_PDEATHSIG, which follows the parent *thread*).
            self.boxed = (self._launcher.submit(start_boxed, self.box, program).result()
                          if self._launcher is not None else start_boxed(self.box, program))
            folders = [{"uri": self.root.as_uri(), "name": self.root.name}]
            self.client = LspClient(self.boxed.proc, self.spec.name, self.spec.configuration, folders)
            capabilities = self.client.initialize(self.root.as_uri(), self.spec.init_options, HANDSHAKE_TIMEOUT_S)
            info = capabilities.get("serverInfo") if isinstance(capabilities, dict) else None
            if isinstance(info, dict) and info.get("version") and not self.version:
                self.version = str(info["version"])
            self._warm_up(first, read)
            self.phase = Phase.READY
            self.ready_after = time.monotonic() - self.started
            self.last_used = time.monotonic()  # idle from now on, not from the call that started it
        except (NotInstalled, NoIsolation) as exc:
            self._fail(str(exc))
        except (OSError, LspError) as exc:
            self._fail(f"{self.spec.name} could not start: {exc}")
        finally:
            self.ready.set()

    def _warm_up(self, first: Path | None, read: Reader) -> None:
        client = self.client
        assert client is not None
        if self.spec.ready_log is not None:
            client.wait_log(self.spec.ready_log, WARMUP_TIMEOUT_S)
        if first is not None:
            opened = time.monotonic()
            self.sync({}, read, [first])
            with contextlib.suppress(LspError):  # some servers cannot list symbols; the wait is what counts
                client.request("textDocument/documentSymbol", {"textDocument": {"uri": first.as_uri()}},
                               WARMUP_TIMEOUT_S)
            # The first diagnostics of the file mean its project is type-checked (the slow part of a first answer).
            client.wait_diagnostics(first.as_uri(), opened, DIAGNOSTICS_WAIT_S)
        deadline = time.monotonic() + self.spec.progress_grace_s
        ended = client.progress_ended
        while time.monotonic() < deadline and not client.busy() and client.progress_ended == ended:
            time.sleep(0.05)
        client.wait_idle(WARMUP_TIMEOUT_S)

    def _fail(self, problem: str) -> None:
        self.phase = Phase.FAILED
        self.problem = problem
        self.stop()

    def alive(self) -> bool:
        return self.client is not None and self.client.alive()

    def crashed(self) -> bool:
        return self.phase is Phase.READY and not self.alive()

    def status(self) -> str:
        """What the server is doing, for the answer's note (``loading packages``, ``indexing 3/10``)."""
        client = self.client
        busy = client.busy() if client is not None else []
        return ", ".join(busy) if busy else "launching" if client is None else "loading the project"

    def crash_report(self) -> str:
        client = self.client
        if client is None:
            return f"{self.spec.name} stopped"
        code = client.proc.poll()
        tail = [line for line in client.stderr_tail.splitlines() if line.strip()][-3:]
        how = f"exited with status {code}" if code is not None else "stopped answering"
        return f"{self.spec.name} {how}" + (f" (its last words: {' | '.join(tail)})" if tail else "")

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        client, boxed = self.client, self.boxed
        if client is not None:
            with contextlib.suppress(Exception):
                client.shutdown()
        if boxed is not None:
            boxed.stop()

    # -- documents ------------------------------------------------------------------------

    def sync(self, states: FileStates, read: Reader, wanted: list[Path]) -> None:
        """Tell the server what changed on disk since it last heard, and open ``wanted``."""
        client = self.client
        if client is None:
            return
        with self._lock:
            started = time.monotonic()
            changed = self._notify_changes(client, states) if states else []
            fresh = [path for path, document in list(self._documents.items())
                     if self._refresh(client, path, document, read)]
            if self.spec.open_to_ask and len(changed) <= MAX_OPEN_DOCUMENTS // 2:
                # clangd's index learns a file's new text from the file itself: opened, it is read again
                reread = [path for path in changed if path not in self._documents]
                fresh += reread
                wanted = [*wanted, *reread]
            for path in wanted:
                self._open(client, path, read)
            self._bound_documents(set(wanted))
        if self.spec.open_to_ask:
            # Servers that answer from open files take in new text in the background: its first diagnostics say
            # it is in, before the question that needs it.
            deadline = started + CHANGE_SETTLE_S
            for path in fresh:
                client.wait_diagnostics(path.as_uri(), started, max(0.0, deadline - time.monotonic()))

    def _notify_changes(self, client: LspClient, states: FileStates) -> list[Path]:
        """Tell the server which files appeared, changed or went; the ones that changed."""
        changed = [path for path, state in states.items() if path in self._known and self._known[path] != state]
        changes = [{"uri": path.as_uri(), "type": 1} for path in states.keys() - self._known.keys()]
        changes += [{"uri": path.as_uri(), "type": 2} for path in changed]
        changes += [{"uri": path.as_uri(), "type": 3} for path in self._known.keys() - states.keys()]
        self._known = dict(states)
        if changes:
            client.notify("workspace/didChangeWatchedFiles", {"changes": changes})
        return changed

    def _refresh(self, client: LspClient, path: Path, document: _Document, read: Reader) -> bool:
        """Send an open document's new text if it changed on disk; whether it did."""
        try:
            info = os.stat(path)
        except OSError:
            client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
            del self._documents[path]
            return False
        if (info.st_mtime_ns, info.st_size) == (document.mtime_ns, document.size):
            return False
        text = read(path)
        if text is None:
            client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
            del self._documents[path]
            return False
        document.version += 1
        document.mtime_ns, document.size = info.st_mtime_ns, info.st_size
        document.changed_at = time.monotonic()
        client.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": document.version},
                                                 "contentChanges": [{"text": text}]})
        return True

    def _open(self, client: LspClient, path: Path, read: Reader) -> None:
        document = self._documents.get(path)
        if document is not None:
            document.used = time.monotonic()
            return
        try:
            info = os.stat(path)
        except OSError:
            return
        text = read(path)
        if text is None:
            return
        self._documents[path] = _Document(1, info.st_mtime_ns, info.st_size)
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": self.spec.language_id(path), "version": 1, "text": text}})

    def _bound_documents(self, keep: set[Path]) -> None:
        client = self.client
        if client is None:
            return
        extra = len(self._documents) - MAX_OPEN_DOCUMENTS
        if extra <= 0:
            return
        for path, _document in sorted(self._documents.items(), key=lambda item: item[1].used):
            if extra <= 0:
                break
            if path in keep:
                continue
            client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
            del self._documents[path]
            extra -= 1

    def document_changed_at(self, path: Path) -> float:
        """When the server was last sent ``path``'s text (0 when it does not hold it open)."""
        with self._lock:
            document = self._documents.get(path)
            return document.changed_at if document is not None else 0.0

    def request(self, method: str, params: Any) -> Any:
        """A request to the ready server, within ``[lsp] request_timeout_s``."""
        client = self.client
        if client is None:
            raise LspError(f"{self.spec.name} is not running")
        return client.request(method, params, self.settings.request_timeout_s)


class Availability(StrEnum):
    READY = "ready"
    STARTING = "starting"
    UNAVAILABLE = "unavailable"


@dataclass
class Lease:
    """What :meth:`LanguageServers.acquire` found: a ready server, or why the index answers instead."""

    availability: Availability
    server: Server | None = None
    spec: ServerSpec | None = None
    reason: str = ""
    """Why no server answers (not installed, starting, crashed twice...), for the answer's note."""
    notes: list[str] = field(default_factory=list)
    """Things to tell once (a crash and restart)."""


class LanguageServers:
    """Every language server of one codeward process (a ``Runtimes`` helper; see the module docstring)."""

    def __init__(self, settings: LspSettings) -> None:
        self.settings = settings
        self._servers: dict[tuple[str, Path, tuple[Path, ...]], Server] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._reaper: threading.Thread | None = None
        self._launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="codeward-lsp-launcher")
        """Starts every server process, and lives as long as the pool: a sandbox started from a thread
        that ends is killed with it."""

    def acquire(self, workspace: Workspace, spec: ServerSpec, root: Path, first: Path,
                states: Callable[[], FileStates], read: Reader,
                box: Callable[[], Result[ProjectSandbox | None]]) -> Lease:
        """The ready server for ``root``, or why there is none now; starts one when none is running,
        in the sandbox ``box`` opens (the call's
        :class:`~codeward.engines.contained.project_sandbox.ProjectSandbox`)."""
        if not self.settings.enabled:
            return Lease(Availability.UNAVAILABLE, spec=spec, reason="language servers are off ([lsp] enabled = "
                                                                     "false)")
        if spec.family in self.settings.disabled:
            return Lease(Availability.UNAVAILABLE, spec=spec,
                         reason=f"{spec.name} is turned off ([lsp] disabled names {spec.family!r})")
        key = (spec.family, root, tuple(sorted(workspace.roots)))
        notes: list[str] = []
        with self._lock:
            server = self._servers.get(key)
            if server is not None and server.crashed():
                del self._servers[key]
                report = server.crash_report()
                threading.Thread(target=server.stop, daemon=True).start()
                if server.restarts >= 1:
                    failed = Server(spec, root, workspace, self.settings, server.box, server.restarts + 1)
                    failed.phase, failed.problem = Phase.FAILED, f"{report}; it had been restarted once already, " \
                                                                 "so it is left off until it idles out"
                    failed.ready.set()
                    self._servers[key] = failed
                    server = failed
                else:
                    notes.append(f"[{report}; restarted it once]")
                    server = self._start(key, spec, root, workspace, states, first, read, server.restarts + 1,
                                         server.box)
                    if server is None:
                        return Lease(Availability.UNAVAILABLE, spec=spec, reason=self._no_room(), notes=notes)
            elif server is None:
                try:
                    spec.find(command_for(self.settings, spec.family))
                except NotInstalled as exc:
                    return Lease(Availability.UNAVAILABLE, spec=spec,
                                 reason=f"{exc}; install it with: {spec.install}")
                server = self._start(key, spec, root, workspace, states, first, read, 0, box())
                if server is None:
                    return Lease(Availability.UNAVAILABLE, spec=spec, reason=self._no_room())
            server.last_used = time.monotonic()
        if not server.ready.is_set() and self.settings.startup_wait_s > 0:
            server.ready.wait(self.settings.startup_wait_s)
        if server.phase is Phase.FAILED:
            return Lease(Availability.UNAVAILABLE, server=None, spec=spec, reason=server.problem, notes=notes)
        if server.phase is Phase.STARTING:
            waited = time.monotonic() - server.started
            return Lease(Availability.STARTING, spec=spec, notes=notes,
                         reason=f"{server.label} is starting ({server.status()}, {waited:.0f} s so far)")
        if server.boxed is not None and not server.boxed.isolated:
            notes.append(NOT_ISOLATED_NOTE.format(server=server.label))
        return Lease(Availability.READY, server=server, spec=spec, notes=notes)

    @contextlib.contextmanager
    def using(self, lease: Lease) -> Iterator[Server | None]:
        """Hold the lease's server while a call uses it (the reaper leaves it alone)."""
        server = lease.server
        if server is not None:
            with self._lock:
                server.in_use += 1
        try:
            yield server
        finally:
            if server is not None:
                with self._lock:
                    server.in_use -= 1
                    server.last_used = time.monotonic()

    def _start(self, key: tuple[str, Path, tuple[Path, ...]], spec: ServerSpec, root: Path, workspace: Workspace,
               states: Callable[[], FileStates], first: Path, read: Reader, restarts: int,
               box: Result[ProjectSandbox | None]) -> Server | None:
        """A new server, booting in a thread (call with the lock held); None when there is no room."""
        if not self._make_room():
            return None
        server = Server(spec, root, workspace, self.settings, box, restarts, self._launcher)
        self._servers[key] = server
        threading.Thread(target=server.boot, args=(states(), first, read), name=f"lsp-{spec.family}-boot",
                         daemon=True).start()
        self._start_reaper()
        return server

    def _make_room(self) -> bool:
        live = [s for s in self._servers.values() if s.phase is not Phase.FAILED]
        while len(live) >= self.settings.max_servers:
            idle = [s for s in live if s.in_use == 0]
            if not idle:
                return False
            oldest = min(idle, key=lambda s: s.last_used)
            live.remove(oldest)
            for key, value in list(self._servers.items()):
                if value is oldest:
                    del self._servers[key]
            threading.Thread(target=oldest.stop, daemon=True).start()
        return True

    def _no_room(self) -> str:
        return (f"every one of the {self.settings.max_servers} language servers allowed at once is busy "
                "([lsp] max_servers); try again when a call finishes")

    def servers(self) -> list[Server]:
        with self._lock:
            return list(self._servers.values())

    def sweep(self) -> int:
        """Stop servers idle past ``[lsp] idle_s`` since they were last used or became ready (and forget failed
        ones as old); how many."""
        now = time.monotonic()
        with self._lock:
            stale = [(k, s) for k, s in self._servers.items()  # a server still loading is not idle
                     if s.in_use == 0 and s.phase is not Phase.STARTING and now - s.last_used > self.settings.idle_s]
            for key, _server in stale:
                del self._servers[key]
        for _key, server in stale:
            server.stop()
        return len(stale)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()
        self._launcher.shutdown(wait=False)

    def _start_reaper(self) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return
        self._reaper = threading.Thread(target=self._reap, name="codeward-lsp-reaper", daemon=True)
        self._reaper.start()

    def _reap(self) -> None:
        interval = max(0.05, min(REAPER_MAX_INTERVAL_S, self.settings.idle_s / 4))
        while not self._closed.wait(interval):
            self.sweep()
            with self._lock:
                if not self._servers:
                    self._reaper = None
                    return


def command_for(settings: LspSettings, family: str) -> Path | None:
    """The executable ``[lsp] commands`` names for a language family, if any."""
    return next((path for name, path in settings.commands.items() if name == family), None)


def servers_of(services: Services) -> LanguageServers:
    """The process's language servers, made on first use (stopped with the other runtimes)."""
    return services.runtimes.get(LanguageServers, lambda: LanguageServers(services.get(LspSettings)))

