"""Helpers shared by the sandbox and code-execution tests: a runtime per test module, a tool
context carrying it, and probes for what this machine can do."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from codeward.config import CodingSettings
from codeward.engines.execution.runtime import CodingRuntime
from codeward.engines.sandbox import SandboxUnavailable, probe_sandbox
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace


def bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    try:
        probe_sandbox("bwrap")
    except SandboxUnavailable:
        return False
    return True


needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here")


def runtime_fixture(settings: CodingSettings | None = None) -> Callable[[], Iterator[CodingRuntime]]:
    """A module-scoped runtime (toolchain detection and the warm pool are shared by a module)."""

    def make() -> Iterator[CodingRuntime]:
        runtime = CodingRuntime(settings or CodingSettings(backend="bwrap" if bwrap_works() else None))
        yield runtime
        runtime.close()

    return make


def context(root: Path, runtime: CodingRuntime, settings: CodingSettings | None = None) -> ToolContext:
    services = Services(settings)
    services.runtimes.get(CodingRuntime, lambda: runtime)  # this runtime, not a fresh one
    return ToolContext(Workspace.create([root]), services=services)


def caller(catalog: Catalog, ctx: ToolContext) -> Callable[..., ToolOutcome]:
    def run(name: str, **arguments: Any) -> ToolOutcome:
        return catalog.call(name, arguments, ctx)

    return run


class TcpServer:
    """A real TCP server on 127.0.0.1 that counts the connections it accepted."""

    def __init__(self, address: str = "127.0.0.1") -> None:
        self.sock = socket.socket()
        self.sock.bind((address, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.sendall(b"hello from the host\n")
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def processes_with(marker: str) -> list[int]:
    """Host processes whose command line contains ``marker``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if marker in cmdline:
            found.append(proc.info["pid"])
    return found


def survivors(marker: str, grace_s: float = 5.0) -> list[int]:
    """Processes with ``marker`` still alive after ``grace_s``: killed ones may take a moment
    to exit (a pid namespace's members are killed by the kernel once its init is gone)."""
    deadline = time.monotonic() + grace_s
    while (found := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found
