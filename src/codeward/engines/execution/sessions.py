"""Persistent Python sessions: one sandboxed interpreter per ``session_id`` keeps its
variables, imports and files in ``/work`` between calls, until it idles out.

Sessions belong to the client that started them: the store keys each by (client, session_id),
so two clients of one server that both say ``session_id="s"`` get two interpreters, and neither
can reach the other's. A transport that names no client (a 2026-07-28 HTTP request stands
alone) gets an unguessable handle instead: the first call's ``session_id`` comes back extended
by a random suffix, and only that handle reaches the session. The store is bounded: an idle
timeout (enforced by a reaper thread, not only when a call comes), a number of live sessions,
and a memory budget (the sum of the live sessions' memory limits).

The interpreter runs a small loop: it reads one JSON request per line from a pipe, runs
the code with fds 0/1/2 pointed at files in its private ``/tmp`` (so output of C code and
child processes is captured too), shows the value of a trailing expression like a REPL, and
answers with one JSON line on a second pipe. A call that times out, or an interpreter that dies
(out of memory, ``os._exit``), ends the session: the result says its state is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import select
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from codeward.engines.sandbox.cgroups import CgroupEvents
from codeward.engines.sandbox.model import Bind, Limit, SandboxRequest, SandboxResult, Status
from codeward.engines.sandbox.runner import Launch, StartableSandbox, terminate

SESSION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
PYTHON = "/usr/bin/python3"
SESSION_CPU_SECONDS = 3600
HANDLE_NAME_CHARS = 40
"""Characters of the client's name kept in front of a handle's random part (the whole stays within 64)."""
HANDLE_CLIENT = "\x00handle"
"""The owner of sessions reached by handle (no real client key contains a NUL)."""
REAPER_MAX_INTERVAL_S = 30.0

SESSION_LOOP = r"""
import ast, io, json, linecache, os, sys, traceback
_cw_globals = {"__name__": "__main__", "__builtins__": __builtins__}
_cw_requests = os.fdopen(int(sys.argv[1]), "rb")
_cw_answers = int(sys.argv[2])
sys.argv = [""]
_cw_count = 0
def _cw_read(path, limit):
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    return data[:limit].decode("utf-8", "replace"), len(data) > limit
def _cw_run(source, name):
    tree = ast.parse(source, name)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, name, "exec"), _cw_globals)
    if last is not None:
        value = eval(compile(last, name, "eval"), _cw_globals)
        if value is not None:
            print(repr(value))
for _cw_line in _cw_requests:
    _cw_request = json.loads(_cw_line)
    _cw_count += 1
    _cw_name = "<cell %d>" % _cw_count
    _cw_source = _cw_request["code"]
    linecache.cache[_cw_name] = (len(_cw_source), None, _cw_source.splitlines(True), _cw_name)
    with open("/tmp/.cw-stdin", "wb") as _cw_handle:
        _cw_handle.write(_cw_request["stdin"].encode("utf-8", "surrogateescape"))
    _cw_fds = [os.open("/tmp/.cw-stdin", os.O_RDONLY),
               os.open("/tmp/.cw-stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
               os.open("/tmp/.cw-stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
    _cw_saved = [os.dup(0), os.dup(1), os.dup(2)]
    for _cw_target, _cw_fd in enumerate(_cw_fds):
        os.dup2(_cw_fd, _cw_target)
        os.close(_cw_fd)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    _cw_exit = 0
    try:
        _cw_run(_cw_source, _cw_name)
    except SystemExit as _cw_error:
        _cw_code = _cw_error.code
        if _cw_code is None:
            _cw_exit = 0
        elif isinstance(_cw_code, int):
            _cw_exit = _cw_code
        else:
            print(_cw_code, file=sys.stderr)
            _cw_exit = 1
    except BaseException as _cw_error:
        _cw_tb = _cw_error.__traceback__
        while _cw_tb is not None and _cw_tb.tb_frame.f_code.co_filename != _cw_name:
            _cw_tb = _cw_tb.tb_next
        traceback.print_exception(type(_cw_error), _cw_error, _cw_tb)
        _cw_exit = 1
    for _cw_stream in (sys.stdout, sys.stderr):
        try:
            _cw_stream.flush()
        except Exception:
            pass
    for _cw_target, _cw_fd in enumerate(_cw_saved):
        os.dup2(_cw_fd, _cw_target)
        os.close(_cw_fd)
    _cw_limit = _cw_request["limit"]
    _cw_out, _cw_out_cut = _cw_read("/tmp/.cw-stdout", _cw_limit)
    _cw_err, _cw_err_cut = _cw_read("/tmp/.cw-stderr", _cw_limit)
    _cw_answer = {"stdout": _cw_out, "stderr": _cw_err, "exit_code": _cw_exit,
                  "stdout_truncated": _cw_out_cut, "stderr_truncated": _cw_err_cut}
    os.write(_cw_answers, (json.dumps(_cw_answer) + "\n").encode())
"""


SessionKey = tuple[str, str]
"""(client, session id): a session belongs to the client that started it."""


@dataclass
class Session:
    """A live interpreter and the pipes to talk to it."""

    key: SessionKey
    session_id: str
    proc: subprocess.Popen[bytes]
    launch: Launch
    requests: int
    answers: int
    memory_mb: int | None
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alive(self) -> bool:
        return self.proc.poll() is None


class SessionStore:
    """Live sessions by (client, id), bounded by an idle timeout, a count and a memory budget."""

    def __init__(self, sandbox: StartableSandbox, binds: Sequence[Bind] = (), idle_ttl_s: float = 900.0,
                 max_sessions: int = 8, memory_budget_mb: int | None = 2048) -> None:
        self.sandbox = sandbox
        self.binds = tuple(binds)
        self.idle_ttl_s = idle_ttl_s
        self.max_sessions = max_sessions
        self.memory_budget_mb = memory_budget_mb
        """The most memory the live sessions may be allowed together (``None``: no budget)."""
        self._sessions: dict[SessionKey, Session] = {}
        self._expired: dict[SessionKey, None] = {}
        """Sessions recently ended by the idle timeout or an eviction (bounded), so their next call can say so."""
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._reaper: threading.Thread | None = None

    def run(self, session_id: str, code: str, request: SandboxRequest,
            client: str | None = "") -> tuple[SandboxResult, str]:
        """Run ``code`` in the client's session (created on first use); ``request`` gives the limits.

        ``client`` names who calls: ``""`` for a process's only client (stdio, the command line),
        a transport's session key otherwise, ``None`` when the transport names none — then the
        session is reached by handle. Returns the result and the session id to give back (the
        handle, for ``client=None``).
        """
        notes: list[str] = []
        key = self._address(session_id, client, notes)
        session = self._get_or_create(key, request, notes)
        if isinstance(session, SandboxResult):
            return session, key[1]
        with session.lock:
            result = self._call(session, code, request)
        result.notes[:0] = notes
        if not session.alive() or result.status is Status.TIMEOUT:
            self._end(key)
            result.notes.append(f"session {key[1]!r} ended: its interpreter state is gone; "
                                "the next call with this session_id starts a fresh one")
        return result, key[1]

    def end(self, session_id: str, client: str | None = "") -> bool:
        """End a client's session now; whether there was one."""
        return self._end((HANDLE_CLIENT if client is None else client, session_id))

    def end_client(self, client: str) -> int:
        """End every session of a client (it disconnected); how many ended."""
        with self._lock:
            keys = [key for key in self._sessions if key[0] == client]
        return sum(self._end(key) for key in keys)

    def sweep(self) -> int:
        """End sessions idle past the TTL (or whose interpreter died); returns how many ended."""
        now = time.monotonic()
        with self._lock:
            stale = [s for s in self._sessions.values()
                     if (now - s.last_used > self.idle_ttl_s and not s.lock.locked()) or not s.alive()]
            for session in stale:
                self._sessions.pop(session.key, None)
                self._remember_expired(session.key)
        for session in stale:
            _stop(session)
        return len(stale)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            _stop(session)

    def ids(self, client: str | None = "") -> list[str]:
        """The live session ids of one client."""
        owner = HANDLE_CLIENT if client is None else client
        with self._lock:
            return [key[1] for key in self._sessions if key[0] == owner]

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    # -- internals -----------------------------------------------------------------------

    def _address(self, session_id: str, client: str | None, notes: list[str]) -> SessionKey:
        """The key a call reaches: the client's own name, or (no client) a handle, minted when new."""
        if client is not None:
            return (client, session_id)
        key = (HANDLE_CLIENT, session_id)
        with self._lock:
            if key in self._sessions or key in self._expired:
                return key
        handle = f"{session_id[:HANDLE_NAME_CHARS]}.{secrets.token_urlsafe(15)}"
        notes.append(f"this connection does not identify its client (each 2026-07-28 HTTP request stands alone), "
                     f"so the session is reached by an unguessable handle: continue it with "
                     f"session_id={handle!r} (the name alone starts a new session)")
        return (HANDLE_CLIENT, handle)

    def _end(self, key: SessionKey) -> bool:
        with self._lock:
            session = self._sessions.pop(key, None)
        if session is None:
            return False
        _stop(session)
        return True

    def _remember_expired(self, key: SessionKey) -> None:
        self._expired[key] = None
        while len(self._expired) > 256:
            self._expired.pop(next(iter(self._expired)))

    def _get_or_create(self, key: SessionKey, request: SandboxRequest, notes: list[str]) -> Session | SandboxResult:
        now = time.monotonic()
        evicted: list[Session] = []
        session_id = key[1]
        wanted = request.memory_mb or 0
        with self._lock:
            session = self._sessions.get(key)
            if session is not None and (now - session.last_used > self.idle_ttl_s or not session.alive()):
                evicted.append(self._sessions.pop(key))
                self._remember_expired(key)
                session = None
            if session is None and key in self._expired:
                del self._expired[key]
                notes.append(f"session {session_id!r} had expired (idle over {self.idle_ttl_s:g} s) or ended; "
                             "its state is gone and a fresh one was started")
            if session is None:
                refused = self._make_room(key[0], wanted, evicted, notes)
                if refused is not None:
                    return SandboxResult.setup_error(refused, self.sandbox.name, self.sandbox.isolated)
        for old in evicted:
            _stop(old)
        if session is not None:
            return session
        try:
            session = self._start(key, request)
        except OSError as exc:
            return SandboxResult.setup_error(f"could not start a session interpreter: {exc}",
                                             self.sandbox.name, self.sandbox.isolated)
        with self._lock:
            existing = self._sessions.setdefault(key, session)
        if existing is not session:
            _stop(session)
        else:
            notes.append(f"started session {session_id!r}")
            self._start_reaper()
        return existing

    def _make_room(self, caller: str, wanted_mb: int, evicted: list[Session], notes: list[str]) -> str | None:
        """Evict the least recently used idle sessions until one more fits (call with the lock held);
        the reason a new session cannot start, or ``None``."""
        budget = self.memory_budget_mb
        if budget is not None and wanted_mb > budget:
            return (f"a session with a {wanted_mb} MB memory limit exceeds the sessions' memory budget of "
                    f"{budget} MB; ask for less memory_mb, or raise [coding] session_memory_budget_mb")

        def over() -> bool:
            if len(self._sessions) >= self.max_sessions:
                return True
            used = sum(s.memory_mb or 0 for s in self._sessions.values())
            return budget is not None and used + wanted_mb > budget

        while over():
            idle = [s for s in self._sessions.values() if not s.lock.locked()]
            if not idle:
                return (f"every one of the {len(self._sessions)} live sessions is busy and no more fit "
                        f"(at most {self.max_sessions} sessions, {budget} MB of memory limits together); "
                        "retry when one finishes, or run without session_id")
            oldest = min(idle, key=lambda s: s.last_used)
            evicted.append(self._sessions.pop(oldest.key))
            self._remember_expired(oldest.key)
            # Another client's session is never named (a handle is a secret).
            which = repr(oldest.session_id) if oldest.key[0] == caller and caller != HANDLE_CLIENT else "(another's)"
            limits = f"at most {self.max_sessions} sessions" + (f" and {budget} MB of memory limits" if budget else "")
            notes.append(f"ended the least recently used session {which} to make room ({limits} live at once)")
        return None

    def _start_reaper(self) -> None:
        """Idle sessions end on time even when no call comes (a thread per store, while sessions live)."""
        with self._lock:
            if self._reaper is not None and self._reaper.is_alive():
                return
            self._reaper = threading.Thread(target=self._reap, name="codeward-session-reaper", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        interval = max(0.05, min(REAPER_MAX_INTERVAL_S, self.idle_ttl_s / 4))
        while not self._closed.wait(interval):
            self.sweep()
            with self._lock:
                if not self._sessions:
                    self._reaper = None
                    return

    def _start(self, key: SessionKey, request: SandboxRequest) -> Session:
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        template = SandboxRequest(
            argv=[PYTHON, "-I", "-B", "-c", SESSION_LOOP, str(requests_read), str(answers_write)],
            ro_binds=self.binds,
            inherit_fds=(requests_read, answers_write), timeout_s=SESSION_CPU_SECONDS,
            cpu_seconds=SESSION_CPU_SECONDS, memory_mb=request.memory_mb, max_processes=request.max_processes,
            scratch_mb=request.scratch_mb, file_size_mb=request.file_size_mb, open_files=request.open_files,
        )
        try:
            proc, launch = self.sandbox.start(template)
        except BaseException:
            for fd in (requests_write, answers_read):
                os.close(fd)
            raise
        finally:
            os.close(requests_read)
            os.close(answers_write)
        if proc.stdin is not None:
            proc.stdin.close()
        return Session(key, key[1], proc, launch, requests_write, answers_read, request.memory_mb)

    def _call(self, session: Session, code: str, request: SandboxRequest) -> SandboxResult:
        started = time.monotonic()
        session.last_used = started
        session.calls += 1
        if session.launch.cgroup is not None and request.memory_mb != session.memory_mb:
            with contextlib.suppress(OSError):
                session.launch.cgroup.set_limits(request.memory_mb, request.max_processes)
                session.memory_mb = request.memory_mb
        line = json.dumps({"code": code, "stdin": request.stdin_bytes().decode("utf-8", "surrogateescape"),
                           "limit": request.max_output_bytes}) + "\n"
        backend, isolated = self.sandbox.name, self.sandbox.isolated
        try:
            _write_all(session.requests, line.encode("utf-8", "surrogateescape"))
        except OSError:
            return SandboxResult(Status.ERROR, None, "", "", 0.0, backend, isolated,
                                 "the session's interpreter is no longer running")
        answer, timed_out = _read_line(session.answers, started + request.timeout_s, session.proc)
        duration = round(time.monotonic() - started, 4)
        events = session.launch.cgroup.events() if session.launch.cgroup is not None else CgroupEvents()
        if timed_out:
            return SandboxResult(Status.TIMEOUT, None, "", "", duration, backend, isolated,
                                 f"timed out after {request.timeout_s:g} s; the session's interpreter was killed",
                                 limit_hit=Limit.TIMEOUT)
        if answer is None:
            session.proc.poll()
            reason = ("it ran out of memory (limit " f"{request.memory_mb} MB)" if events.oom_killed
                      else f"it exited (status {session.proc.returncode})")
            return SandboxResult(Status.ERROR, session.proc.returncode, "", _drain(session.proc), duration, backend,
                                 isolated, f"the session's interpreter died: {reason}",
                                 limit_hit=Limit.MEMORY if events.oom_killed else None,
                                 peak_memory_mb=events.peak_memory_mb)
        limits = session.launch.limits
        statements = [f"wall clock {request.timeout_s:g} s per call (the session ends when it passes)",
                      *limits.enforced]
        unenforced = list(limits.unenforced)
        if session.launch.cgroup is None and request.memory_mb != session.memory_mb:
            unenforced.append(f"memory {request.memory_mb} MB: without a cgroup the session keeps the memory "
                              f"limit it started with ({session.memory_mb} MB)")
        raw_code = answer.get("exit_code", 1)
        exit_code = raw_code if isinstance(raw_code, int) else 1
        result = SandboxResult(
            Status.SUCCESS if exit_code == 0 else Status.ERROR, exit_code, str(answer.get("stdout", "")),
            str(answer.get("stderr", "")), duration, backend, isolated,
            None if exit_code == 0 else f"the code raised an error or exited with status {exit_code}",
            bool(answer.get("stdout_truncated")), bool(answer.get("stderr_truncated")),
            peak_memory_mb=events.peak_memory_mb, limits=statements, unenforced_limits=unenforced,
        )
        return result


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_line(fd: int, deadline: float, proc: subprocess.Popen[bytes]) -> tuple[dict[str, object] | None, bool]:
    """One JSON answer from the session, ``(None, False)`` if it died, ``(None, True)`` on timeout."""
    buffer = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, True
        ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
        if not ready:
            if proc.poll() is not None:
                return None, False
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None, False
        buffer += chunk
        if buffer.endswith(b"\n"):
            try:
                value = json.loads(buffer)
            except ValueError:
                return None, False
            return (value if isinstance(value, dict) else None), False


def _drain(proc: subprocess.Popen[bytes]) -> str:
    if proc.stderr is None:
        return ""
    os.set_blocking(proc.stderr.fileno(), False)
    with contextlib.suppress(OSError, TypeError):
        return (proc.stderr.read(65536) or b"").decode("utf-8", "replace")
    return ""


def _stop(session: Session) -> None:
    for fd in (session.requests, session.answers):
        with contextlib.suppress(OSError):
            os.close(fd)
    terminate(session.proc, session.launch)
