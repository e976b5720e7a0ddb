"""Helpers for the gateway tests: ports, background server processes, peer commands."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from codeward.gateway.config import GatewayConfig, parse_gateway_table

TESTS = Path(__file__).resolve().parent
PEER = str(TESTS / "gateway_peer.py")
LEGACY_PEER = str(TESTS / "gateway_legacy_peer.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout}s")


def start(cmd: list[str], port: int, env: Mapping[str, str] | None = None, *, cwd: Path | None = None,
          timeout: float = 30.0) -> subprocess.Popen[bytes]:
    """Start a server process in its own process group and wait until it listens on ``port``."""
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd=cwd)
    try:
        wait_for_port(port, proc, timeout)
    except BaseException:
        stop(proc)
        raise
    return proc


@contextmanager
def background(cmd: list[str], port: int, env: Mapping[str, str] | None = None, *, cwd: Path | None = None,
               timeout: float = 30.0) -> Iterator[subprocess.Popen[bytes]]:
    """A server process for the duration of a ``with`` block (stopped with its whole group)."""
    proc = start(cmd, port, env, cwd=cwd, timeout=timeout)
    try:
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def peer_http(port: int, *extra: str, mode: str = "http") -> list[str]:
    return [sys.executable, PEER, mode, "--port", str(port), *extra]


def stdio_peer(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [PEER, "stdio"], **extra}


def config(servers: Mapping[str, Mapping[str, Any]], **mcp: Any) -> GatewayConfig:
    return parse_gateway_table({"servers": {k: dict(v) for k, v in servers.items()}, **mcp})


def process_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with suppress(ChildProcessError):  # reap it if it is our zombie child
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return False
