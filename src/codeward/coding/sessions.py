"""Persistent Python sessions: one sandboxed interpreter per ``session_id`` keeps its
variables, imports and files in ``/work`` between calls, until it idles out.

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
import select
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from codeward.coding.sandbox.cgroups import CgroupEvents
from codeward.coding.sandbox.model import Bind, Limit, SandboxRequest, SandboxResult, Status
from codeward.coding.sandbox.runner import Launch, StartableSandbox, kill_tree

SESSION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
PYTHON = "/usr/bin/python3"
SESSION_CPU_SECONDS = 3600

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


@dataclass
class Session:
    """A live interpreter and the pipes to talk to it."""

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
    """Live sessions by id, with an idle timeout and a cap on how many exist at once."""

    def __init__(self, sandbox: StartableSandbox, binds: Sequence[Bind] = (), idle_ttl_s: float = 900.0,
                 max_sessions: int = 8) -> None:
        self.sandbox = sandbox
        self.binds = tuple(binds)
        self.idle_ttl_s = idle_ttl_s
        self.max_sessions = max_sessions
        self._sessions: dict[str, Session] = {}
        self._expired: dict[str, None] = {}
        """Ids recently ended by the idle timeout (bounded), so their next call can say so."""
        self._lock = threading.Lock()

    def run(self, session_id: str, code: str, request: SandboxRequest) -> SandboxResult:
        """Run ``code`` in the session (created on first use); ``request`` gives the limits."""
        notes: list[str] = []
        session = self._get_or_create(session_id, request, notes)
        if isinstance(session, SandboxResult):
            return session
        with session.lock:
            result = self._call(session, code, request)
        result.notes[:0] = notes
        if not session.alive() or result.status is Status.TIMEOUT:
            self.end(session_id)
            result.notes.append(f"session {session_id!r} ended: its interpreter state is gone; "
                                "the next call with this session_id starts a fresh one")
        return result

    def end(self, session_id: str) -> bool:
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        _stop(session)
        return True

    def sweep(self) -> int:
        """End sessions idle past the TTL; returns how many ended."""
        now = time.monotonic()
        with self._lock:
            stale = [s for s in self._sessions.values() if now - s.last_used > self.idle_ttl_s or not s.alive()]
            for session in stale:
                self._sessions.pop(session.session_id, None)
                self._remember_expired(session.session_id)
        for session in stale:
            _stop(session)
        return len(stale)

    def _remember_expired(self, session_id: str) -> None:
        self._expired[session_id] = None
        while len(self._expired) > 256:
            self._expired.pop(next(iter(self._expired)))

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            _stop(session)

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    # -- internals -----------------------------------------------------------------------

    def _get_or_create(self, session_id: str, request: SandboxRequest, notes: list[str]) -> Session | SandboxResult:
        now = time.monotonic()
        evicted: list[Session] = []
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and (now - session.last_used > self.idle_ttl_s or not session.alive()):
                evicted.append(self._sessions.pop(session_id))
                self._remember_expired(session_id)
                session = None
            if session is None and session_id in self._expired:
                del self._expired[session_id]
                notes.append(f"session {session_id!r} had expired (idle over {self.idle_ttl_s:g} s) or ended; "
                             "its state is gone and a fresh one was started")
            if session is None and len(self._sessions) >= self.max_sessions:
                oldest = min(self._sessions.values(), key=lambda s: s.last_used)
                evicted.append(self._sessions.pop(oldest.session_id))
                notes.append(f"ended the least recently used session {oldest.session_id!r} "
                             f"(at most {self.max_sessions} sessions live at once)")
        for old in evicted:
            _stop(old)
        if session is not None:
            return session
        try:
            session = self._start(session_id, request)
        except OSError as exc:
            return SandboxResult.setup_error(f"could not start a session interpreter: {exc}",
                                             self.sandbox.name, self.sandbox.isolated)
        with self._lock:
            existing = self._sessions.setdefault(session_id, session)
        if existing is not session:
            _stop(session)
        else:
            notes.append(f"started session {session_id!r}")
        return existing

    def _start(self, session_id: str, request: SandboxRequest) -> Session:
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
        return Session(session_id, proc, launch, requests_write, answers_read, request.memory_mb)

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
    kill_tree(session.proc, session.launch.cgroup)
    with contextlib.suppress(subprocess.TimeoutExpired):
        session.proc.wait(timeout=5)
    for stream in (session.proc.stdin, session.proc.stdout, session.proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    session.launch.release()
