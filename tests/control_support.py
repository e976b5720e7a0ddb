"""Helpers for the control-plane tests: agent processes on pipes or a pseudo-terminal."""

from __future__ import annotations

import os
import re
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from codeward.apps.control.client import ApiHookClient
from tests.fake_openai import FakeOpenAI, tool_calls

ANNOUNCE = re.compile(r"control API at (\S+) \(token in (\S+)\)")
WRITE = tool_calls(("write_file", '{"path": "x.txt", "content": "hi"}'))


def agent_env(fake: FakeOpenAI, home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake-model",
            "OPENAI_API_KEY": "sk-control-test-key-0123456789", "CODEWARD_HOME": str(home),
            "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", **extra}


class Lines:
    """A process's stderr read on a thread, so tests can wait for a line without blocking."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line)

    def wait_for(self, pattern: re.Pattern[str], timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = pattern.search(line)
                if found:
                    return found
            time.sleep(0.02)
        raise AssertionError(f"{pattern.pattern!r} not printed; stderr so far:\n{''.join(self.lines)}")

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "".join(self.lines)


def client_from(found: re.Match[str]) -> ApiHookClient:
    return ApiHookClient(found.group(1), Path(found.group(2)).read_text().strip())


def finish(proc: subprocess.Popen[str]) -> str:
    """The process's stdout once it exits (stderr belongs to its :class:`Lines` reader)."""
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait(timeout=60)
    return out


class Terminal:
    """``codeward chat`` on a pseudo-terminal: type into it, read what it shows."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        main, child = os.openpty()
        self.fd = main
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=child, stdout=child, stderr=child,
                                     start_new_session=True)
        os.close(child)
        self.seen = ""

    def read_until(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.seen)
            if found:
                return found
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:
                    break
        raise AssertionError(f"{pattern!r} did not appear; terminal so far:\n{self.seen}")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=20)
        finally:
            self.proc.kill()
            os.close(self.fd)
