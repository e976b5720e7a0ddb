"""``serve --http`` on each HTTP stack — uvloop + httptools (the ``fast`` extra), asyncio + h11 forced
with ``CODEWARD_FAST_HTTP=0``, and asyncio + h11 because the extra cannot be imported — keeps
every guarantee: the official client's calls in both protocol eras, bearer auth, DNS-rebinding
protection, a bound on a request's head (httptools alone has none, h11's depends on the
reads), the body bound, partial requests that do not stop anyone else, and a deadline on a
request's head (neither parser has one). Through real HTTP, against a real server process.
"""

from __future__ import annotations

import shlex
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from codeward.engines.jsonrpc.guard import MAX_MESSAGE_BYTES
from codeward.serving.transport.http_head_deadline import TIMED_OUT, DeadlineH11Protocol
from codeward.serving.transport.http_head_size import MAX_HEAD_BYTES
from tests.conftest import REPO
from tests.process_support import background, free_port, server_stderr

TOKEN = "stack-test-token-0123456789abcdef"
HIDE_FAST = ("import sys; sys.modules['uvloop'] = sys.modules['httptools'] = None; "
             "from codeward.apps.cli import main; sys.exit(main())")
"""``codeward`` as it runs where the fast extra is not installed (the modules cannot be imported)."""
FAST_LIBRARIES = ("uvloop/loop.", "httptools/parser/")
"""Paths of the compiled modules a process has mapped once it imported uvloop and httptools."""
STACKS = ["fast", "plain", "absent"]
HEAD_TIMEOUT = 3
"""The served servers' ``[server] http_head_timeout`` (30 s by default), short for the tests."""


@dataclass
class Served:
    stack: str
    url: str
    port: int
    pid: int
    banner: str
    root: Path

    @property
    def fast(self) -> bool:
        return self.stack == "fast"


@pytest.fixture(scope="module", params=STACKS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    stack = str(request.param)
    if stack == "fast":
        for name in ("uvloop", "httptools"):
            try:
                __import__(name)
            except ImportError:
                pytest.fail(f"{name} is not installed: pip install -e '.[test,fast]' (scripts/test does)")
    root = tmp_path_factory.mktemp(f"stack-{stack}")
    (root / "notes.md").write_text("# notes\nhello\n")
    config = tmp_path_factory.mktemp(f"config-{stack}") / "codeward.toml"
    config.write_text(f"[server]\nhttp_head_timeout = {HEAD_TIMEOUT}\n")
    port = free_port()
    launch = [sys.executable, "-c", HIDE_FAST] if stack == "absent" else [sys.executable, "-m", "codeward"]
    cmd = [*launch, "--config", str(config), "serve", str(root), "--http", "--port", str(port),
           "--token-env", "STACK_TEST_TOKEN"]
    env = {"STACK_TEST_TOKEN": TOKEN, "CODEWARD_FAST_HTTP": "0" if stack == "plain" else ""}
    with background(cmd, port, env, timeout=60, capture_stderr=True) as proc:
        yield Served(stack, f"http://127.0.0.1:{port}/mcp", port, proc.pid, server_stderr(proc), root)


def _mapped(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def test_the_start_up_line_names_the_stack_that_runs(served: Served) -> None:
    lines = [line.strip() for line in served.banner.splitlines() if line.strip().startswith("http:")]
    assert len(lines) == 1, served.banner
    expected = {
        "fast": "http: uvloop + httptools (the fast extra)",
        "plain": "http: asyncio + h11 (fast_http = false in [server] or CODEWARD_FAST_HTTP=0)",
        "absent": "http: asyncio + h11 (uvloop and httptools not installed: the fast extra); to add it: "
                  f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(str(REPO) + '[fast]')}",
    }
    assert lines[0] == expected[served.stack]  # (from this clone: its editable install gets the extra)
    maps = _mapped(served.pid)  # what the process really loaded, not what it says
    for library in FAST_LIBRARIES:
        assert (library in maps) is served.fast, (served.stack, library)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_calls_with_its_token(served: Served, mode: str) -> None:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http, \
            Client(streamable_http_client(served.url, http_client=http), mode=mode) as client:
        for _ in range(3):
            result = await client.call_tool("read_file", {"path": "notes.md"})
            assert not result.is_error and "hello" in result.content[0].text  # type: ignore[union-attr]
        missing = await client.call_tool("read_file", {"path": "../etc/passwd"})
        assert missing.is_error


def test_a_request_without_the_token_or_from_another_host_is_refused(served: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    no_token = httpx.post(served.url, json=body, headers=headers, timeout=10)
    assert no_token.status_code == 401
    wrong = httpx.post(served.url, json=body, headers={**headers, "Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401
    authed = {**headers, "Authorization": f"Bearer {TOKEN}"}
    rebound = httpx.post(served.url, json=body, headers={**authed, "Host": f"evil.example:{served.port}"}, timeout=10)
    assert rebound.status_code == 421, rebound.text
    foreign = httpx.post(served.url, json=body, headers={**authed, "Origin": "http://evil.example"}, timeout=10)
    assert foreign.status_code == 403, foreign.text


def _status_of(port: int, head: bytes, body: bytes = b"", piece: int = 4096) -> tuple[int | None, bytes]:
    """Send ``head`` (and ``body``) in pieces, as a slow network would; the status the server answered
    (None: it closed without one) and the answer's first bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            data = head + body
            for start in range(0, len(data), piece):
                sock.sendall(data[start:start + piece])
        except OSError:
            pass  # refused before everything was sent: the answer is what counts
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    if not answer.startswith(b"HTTP/1.1 "):
        return None, answer[:200]
    return int(answer[9:12]), answer[:400]


def _head(port: int, *extra: bytes, token: bool = False, length: int = 0) -> bytes:
    lines = [b"POST /mcp HTTP/1.1", b"Host: 127.0.0.1:%d" % port, b"Accept: application/json, text/event-stream",
             b"Content-Type: application/json", b"Connection: close", b"Content-Length: %d" % length,
             *([b"Authorization: Bearer " + TOKEN.encode()] if token else []), *extra]
    return b"\r\n".join(lines) + b"\r\n\r\n"


@pytest.mark.parametrize("piece", [4096, 1 << 20], ids=["in-pieces", "whole"])
def test_a_request_head_over_the_bound_is_refused_on_every_stack(served: Served, piece: int) -> None:
    """h11 alone refused a head only while it was *incomplete* past 16 KiB, and httptools not at all: a
    30 KiB head that arrived in one read reached the app. codeward counts the head itself."""
    huge_header = _head(served.port, b"X-Big: " + b"a" * 2_000_000)
    many_headers = _head(served.port, *(b"X-H%d: v" % i for i in range(3000)))
    just_over = _head(served.port, b"X-Big: " + b"a" * MAX_HEAD_BYTES)
    for head in (huge_header, many_headers, just_over):
        status, answer = _status_of(served.port, head, piece=piece)
        assert status == 431 or (status is None and len(head) > piece), answer  # (or cut off mid-send)
        if status is not None:
            assert f"over {MAX_HEAD_BYTES:,} bytes".encode() in answer
    # A head under the bound is parsed and reaches the app (which wants the token first), and so does
    # one of the same size on a kept-alive connection after a first request.
    under = _head(served.port, b"X-Big: " + b"a" * (MAX_HEAD_BYTES - 300)).replace(b"Connection: close", b"X-K: 1")
    assert len(under) < MAX_HEAD_BYTES
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        for _ in range(2):
            sock.sendall(under)
            assert _read_answer(sock).startswith(b"HTTP/1.1 401 "), "the second head was refused"
        sock.sendall(just_over.replace(b"Connection: close", b"X-K: 1"))
        assert _read_answer(sock).startswith(b"HTTP/1.1 431 "), "a third head over the bound was taken"
    assert httpx.get(served.url.replace("/mcp", "/nope"), timeout=10).status_code in (401, 404)  # still serving


def _read_answer(sock: socket.socket) -> bytes:
    """One answer on a kept-alive connection: its head and its ``content-length`` bytes of body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lengths = [line.split(b":")[1] for line in head.lower().split(b"\r\n") if line.startswith(b"content-length")]
    length = int(lengths[0])
    while len(body) < length:
        body += sock.recv(65536)
    return data


@pytest.mark.anyio
async def test_a_write_larger_than_the_sdks_default_body_bound_lands_whole(served: Served) -> None:
    """The SDK refuses bodies over 4 MiB unless told otherwise (mcp 2.3); codeward's bound is its own guard's."""
    content = "0123456789abcdef" * (6 * 1024 * 1024 // 16)  # 6 MiB, no JSON escapes
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
            Client(streamable_http_client(served.url, http_client=http), mode="legacy") as client:
        result = await client.call_tool("write_file", {"path": "large.txt", "content": content})
    assert not result.is_error, result.content
    assert (served.root / "large.txt").read_text() == content


def test_a_body_over_the_message_bound_is_refused(served: Served) -> None:
    length = MAX_MESSAGE_BYTES + 1024 * 1024
    head = _head(served.port, token=True, length=length)
    status, answer = _status_of(served.port, head, b" " * (MAX_MESSAGE_BYTES + 64 * 1024), piece=1 << 20)
    assert status == 413, answer
    assert f"over {MAX_MESSAGE_BYTES:,} bytes".encode() in answer


def _answer_to(sock: socket.socket, deadline: float | None = None) -> tuple[bytes, float]:
    """What the server sent until it closed the connection (or ``deadline``, a ``time.monotonic()``,
    passed), and when."""
    answer = b""
    if deadline is not None:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except OSError:
        pass
    return answer, time.monotonic()


@pytest.mark.anyio
async def test_partial_requests_held_open_do_not_stop_the_official_client_and_are_closed_in_time(
        served: Served) -> None:
    partial = _head(served.port)[:-30]  # a head that never ends, as a slowloris client sends it
    held = []
    try:
        for _ in range(64):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=HEAD_TIMEOUT + 20)
            sock.sendall(partial)
            held.append(sock)
        sent = time.monotonic()
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http, \
                Client(streamable_http_client(served.url, http_client=http)) as client:
            result = await client.call_tool("read_file", {"path": "notes.md"})
            assert not result.is_error and "hello" in result.content[0].text  # type: ignore[union-attr]
        waited = time.monotonic() + HEAD_TIMEOUT + 15
        answers = [_answer_to(sock, waited) for sock in held]  # the server ends every one of them
        assert all(answer.startswith(b"HTTP/1.1 408 ") and TIMED_OUT in answer for answer, _ in answers), answers[0]
        last = max(closed for _, closed in answers) - sent
        assert HEAD_TIMEOUT - 0.5 <= last < HEAD_TIMEOUT + 15, last
    finally:
        for sock in held:
            sock.close()


def test_a_connection_that_sends_nothing_is_closed_after_the_head_deadline(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=HEAD_TIMEOUT + 20) as sock:
        opened = time.monotonic()
        answer, closed = _answer_to(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert HEAD_TIMEOUT - 0.5 <= closed - opened < HEAD_TIMEOUT + 15


def test_a_slow_head_that_finishes_in_time_is_served_and_the_next_one_has_its_own_deadline(served: Served) -> None:
    head = _head(served.port, token=False).replace(b"Connection: close", b"Connection: keep-alive")
    pieces = [head[:20], head[20:60], head[60:]]
    with socket.create_connection(("127.0.0.1", served.port), timeout=HEAD_TIMEOUT + 20) as sock:
        for piece in pieces:  # the whole head over about 2/3 of the deadline
            sock.sendall(piece)
            time.sleep(HEAD_TIMEOUT / 3)
        first = b""
        while b"\r\n\r\n" not in first:
            first += sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 401 "), first[:200]  # parsed and answered (no token)
        length = int(first.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(first.split(b"\r\n\r\n", 1)[1]) < length:
            first += sock.recv(65536)
        sock.sendall(head[:40])  # the next request on the kept-alive connection starts, never finishes
        started = time.monotonic()
        answer, closed = _answer_to(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert HEAD_TIMEOUT - 0.5 <= closed - started < HEAD_TIMEOUT + 15


def test_the_switch_is_read_from_the_file_and_the_environment_and_checked(tmp_path: Path) -> None:
    from codeward.config import ConfigError, load_config
    from codeward.serving.transport.http_stack import http_stack

    config_file = tmp_path / "project" / "codeward.toml"
    config_file.parent.mkdir()
    config_file.write_text("[server]\nfast_http = false\n")
    assert load_config(str(config_file), environ={}, user=False).server.fast_http is False
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert load_config(None, cwd=elsewhere, environ={"CODEWARD_FAST_HTTP": "0"}, user=False).server.fast_http is False
    assert load_config(None, cwd=elsewhere, environ={}, user=False).server.fast_http is True
    with pytest.raises(ConfigError) as bad:
        load_config(None, cwd=elsewhere, environ={"CODEWARD_FAST_HTTP": "maybe"}, user=False)
    assert "CODEWARD_FAST_HTTP" in str(bad.value) and "boolean" in str(bad.value)
    assert not http_stack(False).fast
    assert http_stack(False).uvicorn_options() == {"http": DeadlineH11Protocol, "loop": "asyncio"}
    timed = http_stack(False, 5.0).uvicorn_options()["http"]
    assert issubclass(timed, DeadlineH11Protocol) and timed.head_timeout == 5.0
    config_file.write_text("[server]\nhttp_head_timeout = 0\n")
    with pytest.raises(ConfigError) as bad_timeout:
        load_config(str(config_file), environ={}, user=False)
    assert "http_head_timeout" in str(bad_timeout.value) and "above 0" in str(bad_timeout.value)


def test_serving_over_stdio_never_imports_the_fast_stack(tmp_path: Path) -> None:
    import json
    import subprocess

    watch = ("import atexit, sys\n"
             "atexit.register(lambda: sys.stderr.write('fast modules: %s\\n' % sorted(\n"
             "    m for m in sys.modules if m.split('.')[0] in ('uvloop', 'httptools'))))\n"
             "from codeward.apps.cli import main\n"
             "sys.exit(main())\n")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    done = subprocess.run([sys.executable, "-c", watch, "serve", str(tmp_path)], cwd=tmp_path,
                          input="".join(json.dumps(m) + "\n" for m in messages), capture_output=True, text=True,
                          timeout=120)
    assert '"id":2' in done.stdout.replace(" ", ""), done.stderr[-2000:]
    assert "fast modules: []" in done.stderr, done.stderr[-2000:]
