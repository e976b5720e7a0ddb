"""The event-loop stdio transport, serving real MCP sessions to real subprocess servers.

A probe server (the SDK's low-level ``Server`` on :func:`fast_stdio_server`) runs as a
subprocess; the official client talks to it over real pipes, and raw pipe/file/terminal tests
cover what a well-behaved client never sends: broken JSON, lines split across writes, EOF.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import selectors
import socket
import subprocess
import sys
import time
import tty
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage

from codeward.engines.jsonrpc.line_streams import LineReaderProtocol, MessageReader

pytestmark = pytest.mark.anyio

FAST_READER = "codeward.engines.jsonrpc.line_streams.MessageReader"

PROBE_SERVER = '''
import asyncio
import os
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from codeward.serving.transport.era_loop import serve_stdio_connection
from codeward.serving.transport.stdio import fast_stdio_server

state = {}
if "--sdk-without-era-loops" in sys.argv:  # an SDK whose private era loop is not the one expected
    import mcp.server.runner

    sdk_loop = mcp.server.runner._serve_modern_stream
    mcp.server.runner._serve_modern_stream = lambda *args, **kwargs: sdk_loop(*args, **kwargs)


async def list_tools(ctx, params):
    names = ("echo", "repeat", "noisy", "transport", "sleep", "surrogate", "relay")
    return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in names])


async def call_tool(ctx, params):
    args = params.arguments or {}
    if params.name == "echo":
        text = args["text"]
    elif params.name == "repeat":
        text = args["char"] * args["count"]
    elif params.name == "noisy":
        print("stray print, flushed", flush=True)
        print("stray print, left in the buffer")
        os.write(1, b"stray bytes on fd 1\\n")
        text = "stdin reads " + repr(sys.stdin.read())
    elif params.name == "transport":
        text = state["reader"]
    elif params.name == "surrogate":
        text = "undecodable name: a\\udcffb"
    elif params.name == "relay":  # whether the SDK's relay task copies messages across
        text = str(any(task.get_name().endswith("replay_then_relay") for task in asyncio.all_tasks()))
    else:
        await anyio.sleep(args["seconds"])
        text = "slept"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("probe", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with fast_stdio_server() as (read, write):
        state["reader"] = type(read).__module__ + "." + type(read).__name__
        print("serving with " + state["reader"], file=sys.stderr, flush=True)
        await serve_stdio_connection(server, read, write, server.create_initialization_options())
    try:
        print("stdout restored after serving", flush=True)
    except OSError:  # a hung-up terminal
        pass


anyio.run(main)
'''

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call_request(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name,
                                                                               "arguments": arguments}}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    script = tmp_path / "probe_server.py"
    script.write_text(PROBE_SERVER)
    return script


def text_of(result: Any) -> str:
    assert not result.is_error, result
    return str(result.content[0].text)


@pytest.mark.parametrize("sdk", ["with-era-loops", "without-era-loops"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_official_client_session_over_pipes(probe: Path, mode: str, sdk: str) -> None:
    """Both protocol eras, served by the SDK's era loop reading the transport directly (no relay
    task), or through ``Server.run`` and its relay when this SDK lacks the private loops."""
    extra = ["--sdk-without-era-loops"] if sdk == "without-era-loops" else []
    params = StdioServerParameters(command=sys.executable, args=[str(probe), *extra])
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["echo", "repeat", "noisy", "transport", "sleep", "surrogate",
                                                 "relay"]
        assert text_of(await client.call_tool("relay", {})) == str(bool(extra))
        assert text_of(await client.call_tool("transport", {})) == FAST_READER
        assert text_of(await client.call_tool("echo", {"text": "héllo ✓ \u2028 \"quoted\"\n"})) == (
            "héllo ✓ \u2028 \"quoted\"\n")


async def test_messages_of_megabytes_both_ways_and_concurrent_calls(probe: Path) -> None:
    big = "abcdefghij" * 300_000  # 3 MB argument, echoed back
    params = StdioServerParameters(command=sys.executable, args=[str(probe)])
    async with Client(params) as client:
        assert text_of(await client.call_tool("echo", {"text": big})) == big
        results: dict[int, str] = {}

        async def repeat(i: int) -> None:
            char = "xyzw"[i % 4]
            results[i] = text_of(await client.call_tool("repeat", {"char": char, "count": 1_000_000 + i}))

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(repeat, i)
        assert {i: (len(t), t[0]) for i, t in results.items()} == {
            i: (1_000_000 + i, "xyzw"[i % 4]) for i in range(8)}


async def test_stray_output_from_a_tool_goes_to_stderr_not_the_protocol(probe: Path, tmp_path: Path) -> None:
    errlog_path = tmp_path / "stderr.txt"
    params = StdioServerParameters(command=sys.executable, args=[str(probe)])
    with errlog_path.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            assert text_of(await client.call_tool("noisy", {})) == "stdin reads ''"
            assert text_of(await client.call_tool("echo", {"text": "still fine"})) == "still fine"
    stderr = errlog_path.read_text()
    assert f"serving with {FAST_READER}" in stderr
    assert "stray print, flushed" in stderr
    assert "stray bytes on fd 1" in stderr
    assert "stray print, left in the buffer" in stderr  # flushed to stderr before fd 1 is restored


class RawPipeServer:
    """The probe server on plain pipes, spoken to line by line (no MCP client in between)."""

    def __init__(self, script: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout_fd = self.proc.stdout.fileno()
        self.pending = b""

    def write(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def read_line(self, timeout: float = 20) -> bytes:
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.stdout_fd, selectors.EVENT_READ)
            while b"\n" not in self.pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise AssertionError(f"no line from the server within {timeout}s; got {self.pending[:200]!r}")
                chunk = os.read(self.stdout_fd, 1 << 20)
                if not chunk:
                    raise AssertionError(f"server closed stdout; got {self.pending[:200]!r}")
                self.pending += chunk
        found, _, self.pending = self.pending.partition(b"\n")
        return found

    def message(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.read_line())
        return parsed

    def handshake(self) -> None:
        self.write(line(INITIALIZE))
        assert self.message()["result"]["serverInfo"]["name"] == "probe"
        self.write(line(INITIALIZED))

    def finish(self, timeout: float = 20) -> tuple[int, bytes, str]:
        """Close stdin (EOF) and collect the exit code, the rest of stdout, and stderr."""
        if not self.stdin.closed:
            self.stdin.close()
        code = self.proc.wait(timeout=timeout)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        return code, self.pending + self.proc.stdout.read(), self.proc.stderr.read().decode()


@pytest.fixture
def raw(probe: Path) -> Iterator[RawPipeServer]:
    server = RawPipeServer(probe)
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
        server.proc.communicate()


def test_invalid_json_lines_get_parse_errors_and_split_lines_are_joined(raw: RawPipeServer) -> None:
    raw.handshake()
    raw.write(b"this is not json\n")
    raw.write(b'{"jsonrpc": "2.0", "id": \n')
    raw.write(b'{"jsonrpc": "2.0", "id": 7, "method": "no/such"}\n\n   \n')
    request = line(call_request(2, "echo", text="split " * 5000))[:-1] + b"\r\n"
    for start in range(0, len(request), 4096):  # one message in eight writes, with pauses
        raw.write(request[start:start + 4096])
        time.sleep(0.01)
    for column in (1, 26):  # JSON-RPC: what cannot be parsed is answered with a parse error to id null
        parse_error = raw.message()
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
        assert f"column {column}" in parse_error["error"]["message"]
    unknown = raw.message()
    assert unknown["id"] == 7 and unknown["error"]["code"] == -32601
    answer = raw.message()
    assert answer["id"] == 2
    assert answer["result"]["content"][0]["text"] == "split " * 5000


def test_undecodable_bytes_in_and_lone_surrogates_out_do_not_break_the_session(raw: RawPipeServer) -> None:
    raw.handshake()
    request = line(call_request(2, "echo", text="caf\u00e9")).replace(b"caf\\u00e9", b"caf\xe9")
    raw.write(request)  # Latin-1 bytes where UTF-8 was due: read as U+FFFD, like the SDK's text layer
    assert raw.message()["result"]["content"][0]["text"] == "caf\ufffd"
    raw.write(line(call_request(3, "surrogate")))
    assert raw.message()["result"]["content"][0]["text"] == "undecodable name: a\udcffb"
    raw.write(line(call_request(4, "echo", text="still serving")))
    assert raw.message()["result"]["content"][0]["text"] == "still serving"


def test_eof_ends_the_session_cleanly_and_restores_stdout(raw: RawPipeServer) -> None:
    raw.handshake()
    raw.write(line(call_request(2, "transport")))
    assert raw.message()["result"]["content"][0]["text"] == FAST_READER
    code, rest, stderr = raw.finish()
    assert code == 0, stderr
    assert rest.decode().splitlines() == ["stdout restored after serving"]


def test_a_last_message_without_newline_is_still_read_at_eof(raw: RawPipeServer) -> None:
    # initialize is answered before the next line is read, so EOF cannot overtake it
    raw.write(line(INITIALIZE)[:-1])
    raw.stdin.close()
    assert raw.message()["result"]["serverInfo"]["name"] == "probe"
    code, rest, stderr = raw.finish()
    assert code == 0, stderr
    assert rest.decode().splitlines() == ["stdout restored after serving"]


def test_regular_files_fall_back_to_the_sdk_transport(probe: Path, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(line(INITIALIZE) + line(INITIALIZED))
    responses = tmp_path / "responses.jsonl"
    with requests.open("rb") as stdin, responses.open("wb") as stdout:
        done = subprocess.run([sys.executable, str(probe)], stdin=stdin, stdout=stdout,
                              stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert "serving with mcp.shared._context_streams" in done.stderr.decode()
    lines = responses.read_text().splitlines()
    assert json.loads(lines[0])["result"]["serverInfo"]["name"] == "probe"
    assert lines[-1] == "stdout restored after serving"


def test_a_socket_on_stdin_and_stdout_falls_back_to_the_sdk_transport(probe: Path) -> None:
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen([sys.executable, str(probe)], stdin=theirs, stdout=theirs, stderr=subprocess.PIPE)
    theirs.close()
    try:
        ours.settimeout(30)
        ours.sendall(line(INITIALIZE) + line(INITIALIZED) + line(call_request(2, "echo", text="over a socket")))
        received = b""
        while received.count(b"\n") < 2:
            chunk = ours.recv(1 << 16)
            assert chunk, f"socket closed early: {received!r}"
            received += chunk
        first, second = (json.loads(x) for x in received.splitlines()[:2])
        assert first["result"]["serverInfo"]["name"] == "probe"
        assert second["result"]["content"][0]["text"] == "over a socket"
        ours.shutdown(socket.SHUT_WR)
        assert proc.wait(timeout=30) == 0
        assert proc.stderr is not None
        assert "serving with mcp.shared._context_streams" in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
        ours.close()


def test_a_terminal_is_served_without_making_the_shared_terminal_non_blocking(probe: Path) -> None:
    master, slave = pty.openpty()
    tty.setraw(slave)  # no echo, no newline translation: the terminal carries bytes as they are
    proc = subprocess.Popen([sys.executable, str(probe)], stdin=slave, stdout=slave, stderr=subprocess.PIPE)
    try:
        os.write(master, line(INITIALIZE) + line(INITIALIZED) + line(call_request(2, "transport")))
        received = b""
        deadline = time.monotonic() + 30
        with selectors.DefaultSelector() as selector:
            selector.register(master, selectors.EVENT_READ)
            while received.count(b"\n") < 2 and time.monotonic() < deadline:
                if selector.select(1):
                    received += os.read(master, 1 << 16)
        first, second = (json.loads(x) for x in received.splitlines()[:2])
        assert first["result"]["serverInfo"]["name"] == "probe"
        assert second["result"]["content"][0]["text"] == FAST_READER
        assert os.get_blocking(slave), "the terminal's shared file description was made non-blocking"
        os.close(master)  # hang up: the server reads EOF (EIO) and ends
        master = -1
        assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
        if master >= 0:
            os.close(master)
        os.close(slave)


async def test_reading_pauses_while_unread_lines_pile_up_and_resumes_when_they_are_taken() -> None:
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    protocol = LineReaderProtocol(loop, high_water=1000)
    await loop.connect_read_pipe(lambda: protocol, os.fdopen(read_fd, "rb", buffering=0))
    assert protocol.transport is not None
    reader = MessageReader(protocol)
    notes = [line({"jsonrpc": "2.0", "method": "notifications/note", "params": {"i": i}}) for i in range(200)]
    os.write(write_fd, b"".join(notes))
    with anyio.fail_after(10):
        while protocol.transport.is_reading():
            await anyio.sleep(0.01)
    received = []
    for _ in range(200):
        item = await reader.receive()
        assert isinstance(item, SessionMessage)
        received.append(item.message.params["i"])  # type: ignore[union-attr]
    assert received == list(range(200))
    assert protocol.transport.is_reading()
    os.close(write_fd)
    with pytest.raises(anyio.EndOfStream):
        await reader.receive()
    await reader.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await reader.receive()
