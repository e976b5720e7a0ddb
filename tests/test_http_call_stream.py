"""Over streamable HTTP, what a tool asks or says mid-call travels on the call's own event stream.

A handshake-era client reads server requests on two streams: the POST that carries the call
and the session's standalone GET stream, which clients open in the background (and may not
have opened yet when the call runs). A request sent on the GET stream before it exists is
stored and never delivered: the client waits for a question it never sees. So elicitation,
sampling and log messages of a call must ride the POST's stream. The client here never opens
a GET stream, which makes the race deterministic.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest

from tests.conftest import REPO
from tests.process_support import background, free_port

FIXTURE = Path(__file__).parent / "conformance" / "fixture_server.py"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
VERSION = "2025-11-25"


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """One fixture server and one initialized session (URL, headers) for the module."""
    port = free_port()
    root = tmp_path_factory.mktemp("root")
    with background([sys.executable, str(FIXTURE), str(port), str(root)], port, cwd=REPO, capture_stderr=True):
        url = f"http://127.0.0.1:{port}/mcp"
        opening = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "clientInfo": {"name": "raw", "version": "1"},
            "capabilities": {"elicitation": {}, "sampling": {}}}}
        with httpx.Client(timeout=30) as http, http.stream("POST", url, json=opening, headers=HEADERS) as opened:
            assert opened.status_code == 200
            assert _answer(_events(opened), 0)["result"]["protocolVersion"] == VERSION
            headers = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"],
                       "Mcp-Protocol-Version": VERSION}
        initialized = httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        assert initialized.status_code == 202
        yield url, headers


class _SseMessages:
    """Folds SSE lines into JSON-RPC messages; priming events (no data) give none."""

    def __init__(self) -> None:
        self.data: list[str] = []

    def feed(self, line: str) -> dict[str, Any] | None:
        if line.startswith("data:"):
            self.data.append(line[5:].strip())
        elif not line and self.data:
            text, self.data = "\n".join(self.data), []
            if text:
                message: dict[str, Any] = json.loads(text)
                return message
        return None


def _events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of an SSE response, as they arrive."""
    folder = _SseMessages()
    for line in response.iter_lines():
        if (message := folder.feed(line)) is not None:
            yield message


def _answer(events: Iterator[dict[str, Any]], request_id: int) -> dict[str, Any]:
    for message in events:
        if message.get("id") == request_id and "method" not in message:
            return message
    raise AssertionError(f"the stream ended without the answer to request {request_id}")


ANSWERS: dict[str, dict[str, Any]] = {
    "elicitation/create": {"action": "accept", "content": {"name": "Jane", "age": 25, "score": 88.0,
                                                           "status": "inactive", "verified": False}},
    "sampling/createMessage": {"role": "assistant", "model": "raw",
                               "content": {"type": "text", "text": "four"}},
}


async def _async_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    folder = _SseMessages()
    async for line in response.aiter_lines():
        if (message := folder.feed(line)) is not None:
            yield message


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "arguments", "asked", "said"), [
    ("test_elicitation_sep1034_defaults", {}, ["elicitation/create"], 'content={"name": "Jane"'),
    ("test_sampling", {"prompt": "2+2?"}, ["sampling/createMessage"], "LLM response: four"),
    ("test_tool_with_logging", {}, ["notifications/message"] * 3, "executed successfully"),
])
async def test_what_a_call_asks_or_says_comes_on_its_own_stream(
    session: tuple[str, dict[str, str]], tool: str, arguments: dict[str, Any], asked: list[str], said: str
) -> None:
    url, headers = session
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    seen: list[str] = []
    result: dict[str, Any] | None = None
    # Without the fix the question sits in the event log of a GET stream nobody opened and the
    # call's stream only carries keep-alive pings: a deadline, not a read timeout, ends the wait.
    with anyio.move_on_after(20):
        async with httpx.AsyncClient(timeout=30) as http, \
                http.stream("POST", url, json=call, headers=headers) as stream:
            assert stream.status_code == 200
            async for message in _async_events(stream):
                if "method" in message:
                    seen.append(message["method"])
                    if "id" in message:  # a request: answered by a separate POST, as any client does
                        reply = {"jsonrpc": "2.0", "id": message["id"], "result": ANSWERS[message["method"]]}
                        assert (await http.post(url, json=reply, headers=headers)).status_code == 202
                    continue
                assert message["id"] == 7
                result = message["result"]
                break
    assert result is not None, f"no result on the call's stream within 20 s; it carried {seen}"
    assert seen == asked
    assert not result.get("isError"), result
    assert said in result["content"][0]["text"]
