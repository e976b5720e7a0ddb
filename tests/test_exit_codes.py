"""Every command stops as ``docs/cli.md`` says: 143 on SIGTERM (``kill``, ``systemctl stop``, ``docker
stop``, ``timeout``), 130 on Ctrl-C (SIGINT) — an HTTP server drains first and then exits 0 (its
stop is complete: ``tests/test_team_drain.py``) —, never with a traceback, and no program it started is
left running. Real processes (the ``codeward`` console script a person runs) get real signals, each
once it is doing what a stop interrupts: serving a session, waiting for the model, running a tool's
program.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from tests.fake_openai import FakeOpenAI, Reply, text
from tests.gateway_support import PEER
from tests.process_support import free_port, wait_for_port

CODEWARD = str(Path(sys.executable).parent / "codeward")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}


@contextmanager
def started(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """``codeward ARGS`` with pipes for stdin and stdout and its stderr kept in a file (read by :func:`stop`)."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    proc = subprocess.Popen([CODEWARD, *args], cwd=cwd, env={**os.environ, **(env or {})}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log)
    proc.stderr_log = log  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def stop(proc: subprocess.Popen[bytes], signum: int) -> tuple[int, str]:
    """Send ``signum`` (0: none, the command is ending); the exit code and everything it wrote on stderr."""
    if signum:
        proc.send_signal(signum)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"codeward did not exit within 30 s of {signal.Signals(signum).name}")
    log = proc.stderr_log  # type: ignore[attr-defined]
    log.seek(0)
    return code, log.read().decode(errors="replace")


def assert_clean(code: int, stderr: str, expected: int) -> None:
    assert code == expected, f"exit code {code}, expected {expected}; stderr:\n{stderr[-3000:]}"
    assert "Traceback" not in stderr and "Exception in" not in stderr and "ERROR" not in stderr, stderr[-3000:]


def initialize(proc: subprocess.Popen[bytes]) -> None:
    """The MCP handshake's first answer: the server is serving."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    assert b'"result"' in proc.stdout.readline()


def wait_until(ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        assert proc.poll() is None, f"codeward exited ({proc.returncode}) before {what}"
        time.sleep(0.05)
    pytest.fail(f"no {what} within {timeout} s")


def descendant(proc: subprocess.Popen[bytes], word: str) -> psutil.Process | None:
    """A process below ``proc`` whose command line holds ``word``."""
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if word in " ".join(child.cmdline()):
                return child
        except psutil.Error:
            continue
    return None


def running_anywhere(word: str, within: float = 10.0) -> list[psutil.Process]:
    """Processes on the host whose command line holds ``word`` (zombies aside), after up to ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        found = []
        for candidate in psutil.process_iter(["cmdline", "status"]):
            try:
                if word in " ".join(candidate.info["cmdline"] or ()) and candidate.info["status"] != "zombie":
                    found.append(candidate)
            except psutil.Error:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """codeward's data folder for this test (HTTP tokens, sessions), not the person's."""
    return {"CODEWARD_HOME": str(tmp_path / "data")}


DRAINED = 0
"""A server's exit once SIGTERM (or, over HTTP, Ctrl-C) has drained it (``serving/drain.py``)."""


@pytest.mark.parametrize(("signum", "expected"), [(signal.SIGTERM, DRAINED), (signal.SIGINT, 130)])
def test_serve_over_stdio_stops_cleanly(root: Path, home: dict[str, str], signum: int, expected: int) -> None:
    with started(["serve", str(root)], root, home) as proc:
        initialize(proc)
        assert_clean(*stop(proc, signum), expected)


def _send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def test_a_sigtermed_stdio_server_finishes_its_call_refuses_new_ones_and_exits_0(root: Path,
                                                                                home: dict[str, str]) -> None:
    """SIGTERM while a call runs: the call finishes (its program writes its file, its answer comes), a
    request sent after the signal is refused with an error naming the stop, and the server exits 0."""
    script = "sleep 1.5; echo finished > drained.txt; echo done"
    with started(["serve", str(root)], root, home) as proc:
        initialize(proc)
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "run_shell", "arguments": {"script": script}}})
        wait_until(lambda: descendant(proc, "sleep 1.5") is not None, proc, "sandboxed program")
        proc.send_signal(signal.SIGTERM)
        wait_until(lambda: b"draining" in _stderr(proc), proc, "drain")
        _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert proc.stdout is not None
        answers = {message["id"]: message for message in map(json.loads, proc.stdout) if "id" in message}
        code, stderr = stop(proc, 0)
        assert_clean(code, stderr, DRAINED)
    assert "stopping" in answers[3]["error"]["message"] and "send the request again" in answers[3]["error"]["message"]
    assert "done" in answers[2]["result"]["content"][0]["text"], answers[2]
    assert (root / "drained.txt").read_text() == "finished\n"


def _stderr(proc: subprocess.Popen[bytes]) -> bytes:
    log = proc.stderr_log  # type: ignore[attr-defined]
    log.seek(0)
    return bytes(log.read())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_over_http_stops_cleanly_and_keeps_its_token(root: Path, home: dict[str, str], signum: int) -> None:
    port = free_port()
    with started(["serve", str(root), "--http", "--port", str(port)], root, home) as proc:
        wait_for_port(port, proc, 60)
        token = Path(home["CODEWARD_HOME"]) / "http" / f"{port}.token"
        assert token.is_file()
        code, stderr = stop(proc, signum)
        assert_clean(code, stderr, DRAINED)
        assert "drained" in stderr, stderr
    assert token.is_file()  # clients configured with it connect again after a restart


def _gateway_config(root: Path) -> Path:
    config = root / "codeward.toml"
    config.write_text(f"[mcp.servers.peer]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(PEER)}, "
                      '"stdio"]\n', encoding="utf-8")
    return config


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_the_gateway_stops_cleanly_and_ends_its_upstreams(root: Path, home: dict[str, str], http: bool) -> None:
    _gateway_config(root)
    port = free_port()
    args = ["gateway", *(["--http", "--port", str(port)] if http else [])]
    with started(args, root, home) as proc:
        if http:
            wait_for_port(port, proc, 60)
        else:
            initialize(proc)
        wait_until(lambda: descendant(proc, PEER) is not None, proc, "upstream server")
        upstream = descendant(proc, PEER)
        assert upstream is not None
        assert_clean(*stop(proc, signal.SIGTERM if http else signal.SIGINT), DRAINED if http else 130)
    assert not upstream.is_running() or upstream.status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize(("signum", "expected"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_call_stops_cleanly_and_ends_the_program_it_runs(root: Path, home: dict[str, str], signum: int,
                                                           expected: int) -> None:
    """The tool's program runs in the sandbox, waited on in a worker thread: it is ended with the
    command instead of holding it until its timeout."""
    script = f"sleep 47.{signum}"  # a program no other test runs, found on the whole host afterwards
    with started(["call", "run_shell", f"script={script}"], root, home) as proc:
        wait_until(lambda: descendant(proc, script) is not None, proc, "sandboxed program")
        assert_clean(*stop(proc, signum), expected)
    assert not running_anywhere(script), "the sandboxed program outlived the command"


@pytest.mark.parametrize(("command", "signum", "expected"),
                         [("ask", signal.SIGINT, 130), ("chat", signal.SIGTERM, 143)])
def test_the_agent_stops_cleanly_while_the_model_works(root: Path, home: dict[str, str], command: str, signum: int,
                                                       expected: int) -> None:
    """(In ``chat`` Ctrl-C cancels the answer being written and the prompt comes back, as in a shell;
    SIGTERM ends it.)"""
    arrived = threading.Event()
    slow = Reply(text("never finished", pieces=50).chunks, delay_s=1.0, before=arrived.set)
    with FakeOpenAI([slow]) as fake:
        env = {**home, "OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": "sk-test"}
        args = ["ask", "what is in this folder?"] if command == "ask" else ["chat"]
        with started(args, root, env) as proc:
            if command == "chat":
                assert proc.stdin is not None
                proc.stdin.write(b"what is in this folder?\n")
                proc.stdin.flush()
            wait_until(arrived.is_set, proc, "request to the model")
            assert_clean(*stop(proc, signum), expected)


def test_review_stops_cleanly_and_ends_its_analyzers(root: Path, home: dict[str, str]) -> None:
    for number in range(40):
        (root / f"m{number}.py").write_text("".join(f"def f{i}(x: int) -> int:\n    return x + {i}\n"
                                                    for i in range(200)), encoding="utf-8")
    with started(["review", "."], root, home) as proc:
        wait_until(lambda: descendant(proc, "mypy") is not None, proc, "analyzer")
        analyzer = descendant(proc, "mypy")
        assert analyzer is not None
        assert_clean(*stop(proc, signal.SIGTERM), 143)
        assert not analyzer.is_running() or analyzer.status() == psutil.STATUS_ZOMBIE
