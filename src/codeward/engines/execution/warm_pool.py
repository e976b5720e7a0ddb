"""A warm pool of ready Python sandboxes, so a call costs about as much as a bare ``python3 -c``.

A cold run pays for namespaces, mounts and interpreter start-up. A pool entry has paid all
of that in advance: it is a sandboxed interpreter blocked reading its program from a pipe
. A call takes an entry, adjusts the entry's cgroup limits to the request, writes the
source and closes the pipe, then feeds stdin and collects the result like any run. Each
entry runs exactly one program and is then gone; a background thread refills the pool once
the calls in flight are done, so the refill never competes with a call for the CPU.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from codeward.engines.sandbox.model import Bind, SandboxRequest, SandboxResult
from codeward.engines.sandbox.runner import Launch, RunObserver, StartableSandbox, terminate

PYTHON = "/usr/bin/python3"
ENTRY_MAX_AGE_S = 600.0
POOL_CPU_SECONDS = 3600
"""CPU rlimit of pool entries; the wall-clock timeout of each call is what bounds a program."""
SOURCE_NAME = "/code/main.py"
REFILL_MAX_DEFER_S = 2.0
"""Refilling waits for calls in flight, but no longer than this (under constant load)."""

BOOT = r"""
import atexit, linecache, os, sys, threading, traceback
def _codeward_load():
    chunks = []
    while True:
        chunk = os.read(int(sys.argv[1]), 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(int(sys.argv[1]))
    return b"".join(chunks).decode("utf-8", "surrogateescape")
_codeward_source = _codeward_load()
del _codeward_load
if not _codeward_source:
    sys.exit(0)
linecache.cache[__NAME__] = (len(_codeward_source), None, _codeward_source.splitlines(True), __NAME__)
sys.argv = [__NAME__]
_codeward_globals = {"__name__": "__main__", "__file__": __NAME__, "__builtins__": __builtins__}
try:
    _codeward_code = compile(_codeward_source, __NAME__, "exec")
except SyntaxError as error:
    traceback.print_exception(type(error), error, None)
    sys.exit(1)
del _codeward_source
try:
    exec(_codeward_code, _codeward_globals)
except SystemExit:
    raise
except BaseException as error:
    traceback.print_exception(type(error), error, error.__traceback__.tb_next)
    sys.exit(1)
# A normal end without the interpreter's teardown (the sandbox is thrown away anyway):
# what a program can observe of an exit still happens — threads joined, atexit, flushing.
threading._shutdown()
atexit._run_exitfuncs()
for _codeward_stream in (sys.stdout, sys.stderr):
    try:
        _codeward_stream.flush()
    except Exception:
        pass
os._exit(0)
""".replace("__NAME__", repr(SOURCE_NAME))


@dataclass
class _Entry:
    proc: subprocess.Popen[bytes]
    launch: Launch
    control: int
    born: float


class WarmPool:
    """Keeps ``size`` started Python sandboxes; :meth:`run` uses one or returns ``None``."""

    def __init__(self, sandbox: StartableSandbox, size: int = 2, binds: Sequence[Bind] = (),
                 memory_mb: int = 256, max_processes: int = 64) -> None:
        self.sandbox = sandbox
        self.size = size
        self.binds = tuple(binds)
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._active = 0
        """Runs in flight: refilling waits for them, so spawning never competes with a call."""
        self._failures = 0
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Begin filling in the background (idempotent)."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._refill_loop, name="codeward-warm-pool", daemon=True)
            self._thread.start()

    def wait_ready(self, timeout_s: float = 10.0) -> bool:
        """Block until the pool is full (benchmarks, tests); returns whether it is."""
        self.start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._entries) >= self.size:
                    return True
            time.sleep(0.01)
        return False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            entries, self._entries = self._entries, []
            self._wake.notify_all()
        for entry in entries:
            _discard(entry)

    @property
    def ready(self) -> int:
        with self._lock:
            return len(self._entries)

    # -- use -----------------------------------------------------------------------------

    def run(self, code: str, request: SandboxRequest, observer: RunObserver | None = None) -> SandboxResult | None:
        """Run ``code`` in a warm entry under ``request``'s limits; ``None`` when none is ready."""
        if self.sandbox_limits_fixed() and request.memory_mb != self.memory_mb:
            return None  # without a cgroup an entry's memory rlimit was set when it started
        entry = self._take()
        if entry is None:
            return None
        started = time.monotonic()
        try:
            if entry.launch.cgroup is not None and (request.memory_mb, request.max_processes) != (
                    self.memory_mb, self.max_processes):
                entry.launch.cgroup.set_limits(request.memory_mb, request.max_processes)
            _send(entry.control, code.encode("utf-8", "surrogateescape"))
        except OSError:
            self._done()
            _discard(entry)
            return None
        try:
            return self.sandbox.finish(entry.proc, entry.launch, request, request.stdin_bytes(), started, observer)
        finally:
            self._done()

    def sandbox_limits_fixed(self) -> bool:
        """Whether entries' limits are rlimits fixed at their start (no cgroup to adjust)."""
        return getattr(self.sandbox, "cgroups", True) is None

    def _done(self) -> None:
        with self._lock:
            self._active -= 1
            self._wake.notify_all()

    def _take(self) -> _Entry | None:
        with self._lock:
            while self._entries:
                entry = self._entries.pop(0)
                self._wake.notify_all()
                if entry.proc.poll() is None and time.monotonic() - entry.born < ENTRY_MAX_AGE_S:
                    self._active += 1
                    return entry
                threading.Thread(target=_discard, args=(entry,), daemon=True).start()
            self._wake.notify_all()
        return None

    # -- refilling -----------------------------------------------------------------------

    def template(self, control_fd: int) -> SandboxRequest:
        return SandboxRequest(
            argv=[PYTHON, "-I", "-B", "-c", BOOT, str(control_fd)], ro_binds=self.binds, inherit_fds=(control_fd,),
            timeout_s=POOL_CPU_SECONDS, cpu_seconds=POOL_CPU_SECONDS, memory_mb=self.memory_mb,
            max_processes=self.max_processes, scratch_mb=max(16, self.memory_mb // 4),
        )

    def _spawn(self) -> _Entry:
        read_end, write_end = os.pipe()
        try:
            proc, launch = self.sandbox.start(self.template(read_end))
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        return _Entry(proc, launch, write_end, time.monotonic())

    def _refill_loop(self) -> None:
        while True:
            with self._lock:
                while not self._closed and len(self._entries) >= self.size:
                    self._wake.wait(timeout=30)
                    self._expire_locked()
                waited = time.monotonic()
                while not self._closed and self._active and time.monotonic() - waited < REFILL_MAX_DEFER_S:
                    self._wake.wait(timeout=REFILL_MAX_DEFER_S)
                if self._closed:
                    return
            try:
                entry = self._spawn()
            except OSError:
                self._failures += 1
                time.sleep(min(5.0, 0.1 * 2 ** self._failures))
                continue
            self._failures = 0
            with self._lock:
                if self._closed:
                    _discard(entry)
                    return
                self._entries.append(entry)

    def _expire_locked(self) -> None:
        now = time.monotonic()
        keep = [e for e in self._entries if e.proc.poll() is None and now - e.born < ENTRY_MAX_AGE_S]
        for entry in self._entries:
            if entry not in keep:
                threading.Thread(target=_discard, args=(entry,), daemon=True).start()
        self._entries = keep


def _send(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)


def _discard(entry: _Entry) -> None:
    with contextlib.suppress(OSError):
        os.close(entry.control)
    terminate(entry.proc, entry.launch)
