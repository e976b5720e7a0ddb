"""A warm pool of started Python containers per image, so a Docker run costs about what a local sandbox run does.

A cold Docker run pays for the container's creation, its start (namespaces, mounts, cgroups) and the
interpreter's start-up. A pool entry has paid all three: it is a container of the run's image with the
same confinement as a cold one (:meth:`DockerSandbox.create`: read-only root, no capabilities, no
network, limits), started with its standard input attached, its interpreter blocked reading the program
from that input. A call takes an entry, writes ``<length>\\n<source><stdin>`` and closes the input, then
waits and reads the result like a cold run. Each container runs exactly one program and is then removed
(so nothing one run leaves is seen by the next); a background thread removes used ones and starts new
ones, at most ``size`` per image, after the calls in flight.

Only runs the entries were made for use them: Python, no network, the pool's limits (memory, processes,
CPU, environment); any other run is a cold container as before.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

from codeward.engines.sandbox.docker import (
    ContainerResult,
    DockerSandbox,
    attach_stdin,
    container_limits,
    container_result,
)
from codeward.engines.sandbox.model import SandboxRequest

log = logging.getLogger(__name__)

ENTRY_MAX_AGE_S = 600.0
"""An entry older than this is replaced rather than used (an image retagged meanwhile is picked up)."""
SOURCE_NAME = "/work/main.py"
CLOSE_WAIT_S = 30.0
"""How long closing waits for a container being started to be removed (an engine that hangs: no longer)."""

BOOT = r"""
import atexit, linecache, os, sys, threading, traceback
def _codeward_read(count):
    chunks = []
    while count:
        chunk = os.read(0, count)
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)
_codeward_header = b""
while not _codeward_header.endswith(b"\n"):
    _codeward_byte = os.read(0, 1)
    if not _codeward_byte:
        os._exit(0)
    _codeward_header += _codeward_byte
_codeward_nonce, _codeward_length = _codeward_header.split()
_codeward_source = _codeward_read(int(_codeward_length)).decode("utf-8", "surrogateescape")
del _codeward_read, _codeward_header, _codeward_length
def _codeward_run(source, nonce):
    linecache.cache[__NAME__] = (len(source), None, source.splitlines(True), __NAME__)
    sys.argv = [__NAME__]
    code = 0
    try:
        exec(compile(source, __NAME__, "exec"), {"__name__": "__main__", "__file__": __NAME__,
                                                  "__builtins__": __builtins__})
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            code = exit.code or 0
        else:
            print(exit.code, file=sys.stderr)
            code = 1
    except SyntaxError as error:
        traceback.print_exception(type(error), error, None)
        code = 1
    except BaseException as error:
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    trailer = b"\0codeward-exit " + nonce + b" %d\n" % (code & 0xFF)
    os.write(1, trailer)
    os.write(2, trailer)
    os._exit(code & 0xFF)
_codeward_run(_codeward_source, _codeward_nonce)
""".replace("__NAME__", repr(SOURCE_NAME))
"""Reads the header (a nonce and the source's length in bytes) one byte at a time and then exactly the
source, so the program's own input is left in the pipe for ``sys.stdin``, untouched. At the end it writes
the exit status after the nonce on standard output and on standard error: once both arrived, everything
the program wrote before them has too (each pipe keeps its order), and the result is known without waiting
for the engine to see the container end (hundreds of ms more). A run killed (timeout, memory, signal)
writes none; its status comes from the engine."""
TRAILER = re.compile(rb"\0codeward-exit ([0-9a-f]+) (\d+)\n\Z")
TRAILER_MAX = 64
"""The longest a trailer can be (nonce of 16 hex digits, status up to 255), with room to spare."""


def boot_argv() -> list[str]:
    """The command an entry's container runs: the image's Python, isolated mode, reading its program."""
    return ["python3", "-I", "-B", "-c", BOOT]


@dataclass
class _Entry:
    container: Any
    stream: Any
    """The container's attached standard input (written) and output (read, in Docker's frames)."""
    born: float


@dataclass(frozen=True)
class PoolShape:
    """What an entry was made for; a run with anything else is a cold container."""

    image: str
    memory_mb: int
    max_processes: int
    file_size_mb: int | None
    open_files: int | None
    scratch_mb: int

    @classmethod
    def of(cls, image: str, request: SandboxRequest) -> PoolShape:
        return cls(image, request.memory_mb or 0, request.max_processes or 0, request.file_size_mb,
                   request.open_files, request.scratch_mb)


class DockerWarmPool:
    """Up to ``size`` started containers for one :class:`PoolShape`; :meth:`run` uses one or returns None."""

    def __init__(self, sandbox: DockerSandbox, shape: PoolShape, template: SandboxRequest, size: int = 2) -> None:
        self.sandbox = sandbox
        self.shape = shape
        self.size = size
        self._template = template
        self._entries: list[_Entry] = []
        self._used: list[Any] = []
        self._active = 0
        self._failures = 0
        self._closed = False
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin filling in the background (idempotent)."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._refill_loop, name="codeward-docker-pool", daemon=True)
            self._thread.start()

    def wait_ready(self, timeout_s: float = 60.0) -> bool:
        """Block until the pool is full (benchmarks, tests); whether it is."""
        self.start()
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while len(self._entries) < self.size and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._wake.wait(min(remaining, 0.5))
            return len(self._entries) >= self.size

    def run(self, code: str, request: SandboxRequest) -> ContainerResult | None:
        """Run ``code`` in a started container; None when the run does not fit the pool or none is ready."""
        if PoolShape.of(self.shape.image, request) != self.shape or request.network or request.env \
                or request.ro_binds or request.rw_binds:
            return None
        entry = self._take()
        if entry is None:
            return None
        started = time.monotonic()
        source = code.encode("utf-8", "surrogateescape")
        nonce = secrets.token_hex(8).encode()
        try:
            with contextlib.suppress(OSError):
                entry.stream.sendall(b"%s %d\n" % (nonce, len(source)) + source + request.stdin_bytes())
                entry.stream.shutdown(socket.SHUT_WR)
            return self._result(entry, request, started, nonce)
        finally:
            with contextlib.suppress(OSError):
                entry.stream.close()
            self._recycle(entry.container)

    def _result(self, entry: _Entry, request: SandboxRequest, started: float, nonce: bytes) -> ContainerResult:
        """Read the program's output up to its status trailers; without them (killed), its status from the
        engine — or kill it at the request's timeout."""
        cap = request.max_output_bytes
        stdout, stderr, state = read_frames(entry.stream, started + request.timeout_s, cap, nonce)
        if state == "timeout":
            with contextlib.suppress(Exception):
                entry.container.kill()
            result = container_result(request, started, -9, stdout, stderr, timed_out=True)
        elif isinstance(state, int):
            result = container_result(request, started, state, stdout, stderr)
        else:
            outcome = self.sandbox.collect(entry.container, request, started)
            outcome.result.stdout = stdout[:cap].decode("utf-8", "replace")
            outcome.result.stderr = stderr[:cap].decode("utf-8", "replace")
            return outcome
        result.limits = container_limits(request, f"{request.memory_mb}m" if request.memory_mb else None)
        return ContainerResult(result, str(entry.container.id)[:12])

    def close(self) -> None:
        """Remove every container of the pool (entries, used ones, and one being started now)."""
        with self._lock:
            self._closed = True
            containers = [entry.container for entry in self._entries] + self._used
            self._entries, self._used = [], []
            self._wake.notify_all()
            thread = self._thread
        for container in containers:
            _remove(container)
        if thread is not None and thread is not threading.current_thread():
            thread.join(CLOSE_WAIT_S)  # a container it is starting is removed by it, not left behind

    # -- internals -----------------------------------------------------------------------------

    def _take(self) -> _Entry | None:
        with self._lock:
            while self._entries:
                entry = self._entries.pop(0)
                if time.monotonic() - entry.born < ENTRY_MAX_AGE_S and _running(entry.container):
                    self._active += 1
                    self._wake.notify_all()
                    return entry
                self._used.append(entry.container)
            self._wake.notify_all()
            return None

    def _recycle(self, container: Any) -> None:
        with self._lock:
            self._active -= 1
            self._used.append(container)
            self._wake.notify_all()

    def _refill_loop(self) -> None:
        while True:
            with self._lock:
                while not self._closed and not self._used and (
                        len(self._entries) >= self.size or (self._active > 0 and self._entries)):
                    self._wake.wait(1.0)
                if self._closed:
                    return
                used, self._used = self._used, []
                missing = self.size - len(self._entries)
            for container in used:
                _remove(container)
            if missing > 0 and not self._add():
                self._failures += 1
                time.sleep(min(30.0, 0.5 * 2 ** min(self._failures, 6)))  # an engine or image problem: back off
            elif missing > 0:
                self._failures = 0

    def _add(self) -> bool:
        created = self.sandbox.create(self._template, self.shape.image, stdin=True)
        if isinstance(created, ContainerResult):
            log.warning("the Docker warm pool cannot start a container: %s", created.result.error_message)
            return False
        try:
            stream = attach_stdin(created, output=True)
            created.start()
        except Exception as error:  # the engine's errors: the pool stays smaller, runs go cold
            log.warning("the Docker warm pool cannot start a container: %s", error)
            _remove(created)
            return False
        with self._lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._entries.append(_Entry(created, stream, time.monotonic()))
                self._wake.notify_all()
        if closed:
            _remove(created)
        return True


def _running(container: Any) -> bool:
    """Whether an entry's container is still waiting for its program (not killed or ended meanwhile)."""
    try:
        container.reload()
    except Exception:
        return False
    return bool(container.attrs.get("State", {}).get("Running"))


def _remove(container: Any) -> None:
    with contextlib.suppress(Exception):
        container.remove(force=True)



def read_frames(stream: Any, deadline: float, cap: int, nonce: bytes) -> tuple[bytes, bytes, int | str]:
    """Standard output and error from an attached container's stream (Docker's frames: one byte naming
    the stream, three zero, a big-endian length, the bytes), each kept a little past ``cap`` bytes (the rest
    is read and dropped), until both end with the status trailer of ``nonce`` (its status), the stream
    ends without them (``"ended"``: the program was killed) or ``deadline`` passes (``"timeout"``)."""
    keep = cap + TRAILER_MAX + 1  # past the cap by more than a trailer: a caller sees the output was cut
    kept = [bytearray(), bytearray()]
    totals = [0, 0]
    tails = [b"", b""]
    buffer = b""
    while True:
        ends = [TRAILER.search(tail) for tail in tails]
        if all(found is not None and found.group(1) == nonce for found in ends):
            for index, found in enumerate(ends):
                start = totals[index] - len(found.group(0))  # type: ignore[union-attr]
                del kept[index][max(0, start):]  # the part of the trailer that was kept
            return bytes(kept[0]), bytes(kept[1]), int(ends[0].group(2))  # type: ignore[union-attr]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return bytes(kept[0]), bytes(kept[1]), "timeout"
        stream.settimeout(remaining)
        try:
            chunk = stream.recv(65536)
        except TimeoutError:
            return bytes(kept[0]), bytes(kept[1]), "timeout"
        except OSError:
            chunk = b""
        if not chunk:
            return bytes(kept[0]), bytes(kept[1]), "ended"
        buffer += chunk
        while len(buffer) >= 8:
            length = struct.unpack(">I", buffer[4:8])[0]
            if len(buffer) < 8 + length:
                break
            index = 1 if buffer[0] == 2 else 0
            data = buffer[8:8 + length]
            kept[index] += data[:max(0, keep - len(kept[index]))]
            totals[index] += len(data)
            tails[index] = (tails[index] + data)[-TRAILER_MAX:]
            buffer = buffer[8 + length:]
