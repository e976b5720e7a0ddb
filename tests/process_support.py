"""Server processes for tests: a free loopback port, a process started in its own group and
waited on until it listens, and ``codeward serve --http`` yielding its URL.

One place for these so every test that starts a real server stops it the same way (the
whole process group, SIGTERM then SIGKILL) and reports a server that died at start with
its own stderr instead of a bare timeout.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO


class ServerProcess(subprocess.Popen[bytes]):
    """A server process whose stderr, when kept, is in a temporary file (``stderr_log``)."""

    stderr_log: IO[bytes] | None = None


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0, host: str = "127.0.0.1") -> None:
    """Return once ``port`` accepts connections on ``host``; fail early (with its stderr) if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}{_stderr_of(proc)}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout}s")


def server_stderr(proc: subprocess.Popen[bytes], limit: int = 4000) -> str:
    """The end of what a server started with ``capture_stderr`` wrote so far ("" if not kept)."""
    log = getattr(proc, "stderr_log", None)
    if log is None:
        return ""
    log.seek(0)
    return str(log.read().decode(errors="replace").strip()[-limit:])


def _stderr_of(proc: subprocess.Popen[bytes]) -> str:
    text = server_stderr(proc)
    return f":\n{text}" if text else ""


def start(cmd: list[str], port: int, env: Mapping[str, str] | None = None, *, cwd: Path | None = None,
          timeout: float = 30.0, capture_stderr: bool = False, host: str = "127.0.0.1") -> subprocess.Popen[bytes]:
    """Start a server process in its own process group and wait until it listens on ``port``.

    ``env`` is added to this process's environment. With ``capture_stderr`` a server that dies
    at start is reported with what it wrote (kept in a temporary file, not a pipe: a pipe
    nobody drains blocks a chatty server).
    """
    log = tempfile.TemporaryFile() if capture_stderr else None  # noqa: SIM115 - closed in stop()
    proc = ServerProcess(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                         stderr=log if log is not None else subprocess.DEVNULL, start_new_session=True, cwd=cwd)
    proc.stderr_log = log
    try:
        wait_for_port(port, proc, timeout, host)
    except BaseException:
        stop(proc)
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process and its whole group: SIGTERM, then SIGKILL after five seconds."""
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    log = getattr(proc, "stderr_log", None)
    if log is not None:
        log.close()


@contextmanager
def background(cmd: list[str], port: int, env: Mapping[str, str] | None = None, *, cwd: Path | None = None,
               timeout: float = 30.0, capture_stderr: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """A server process for the duration of a ``with`` block (stopped with its whole group)."""
    proc = start(cmd, port, env, cwd=cwd, timeout=timeout, capture_stderr=capture_stderr)
    try:
        yield proc
    finally:
        stop(proc)


@contextmanager
def codeward_http(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                  command: str = "serve", timeout: float = 60.0) -> Iterator[str]:
    """``codeward <command> ARGS --http --port N`` in a subprocess; its ``/mcp`` URL once it listens.

    ``--no-auth`` is added unless the arguments name a token (``--token-env``/``--token-file``):
    a server without a token says so on purpose. ``env`` is added to this process's environment.
    """
    port = free_port()
    auth = [] if {"--token-env", "--token-file"} & set(args) else ["--no-auth"]
    cmd = [sys.executable, "-m", "codeward", command, *args, "--http", "--port", str(port), *auth]
    with background(cmd, port, env, cwd=cwd, timeout=timeout, capture_stderr=True):
        yield f"http://127.0.0.1:{port}/mcp"


@contextmanager
def http_handler_server(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[int]:
    """A loopback HTTP server answering with ``handler`` in a thread, for a ``with`` block; its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
