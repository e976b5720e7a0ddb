"""Each streamable-HTTP request answered as it needs: one JSON body, or a stream when the client
asked for progress — through the official client, over real HTTP, in both protocol eras."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import codeward_http

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "2026-07-28"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "notes.md").write_text("# notes\nhello\n")
    for i in range(30):  # search_files reports progress every 1000 files it scans
        folder = tmp_path / f"d{i:02}"
        folder.mkdir()
        for j in range(110):
            (folder / f"f{j:03}.txt").write_bytes(b"")
    with codeward_http(str(tmp_path), timeout=30) as url:
        yield url


class Answers:
    """The content type of every answer to a ``tools/call`` POST, seen from the client's HTTP layer."""

    def __init__(self) -> None:
        self.types: list[str] = []

    async def __call__(self, response: httpx.Response) -> None:
        request = response.request
        if request.method == "POST" and b'"tools/call"' in request.content:
            self.types.append(response.headers.get("content-type", ""))


def _text(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_call_that_asks_for_no_stream_is_answered_with_one_json_body(served: str, mode: str) -> None:
    answers = Answers()
    async with httpx.AsyncClient(event_hooks={"response": [answers]}) as http, \
            Client(streamable_http_client(served, http_client=http), mode=mode) as client:
        for _ in range(3):
            result = await client.call_tool("read_file", {"path": "notes.md"})
            assert not result.is_error and "hello" in _text(result)
        missing = await client.call_tool("read_file", {"path": "nope.md"})
        assert missing.is_error and "nope.md" in _text(missing)
    assert answers.types == ["application/json"] * 4, answers.types


@pytest.mark.parametrize("mode", ERAS)
async def test_a_call_that_asks_for_progress_is_streamed_with_its_progress(served: str, mode: str) -> None:
    answers = Answers()
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with httpx.AsyncClient(event_hooks={"response": [answers]}) as http, \
            Client(streamable_http_client(served, http_client=http), mode=mode) as client:
        found = await client.call_tool("search_files", {"path": ".", "pattern": "*.md"},
                                       progress_callback=on_progress)
        assert not found.is_error
        plain = await client.call_tool("read_file", {"path": "notes.md"})
        assert "hello" in _text(plain)
    assert seen == [1000.0, 2000.0, 3000.0], answers.types
    assert answers.types[0].startswith("text/event-stream"), answers.types
    assert answers.types[1] == "application/json", answers.types


async def test_a_client_that_can_be_asked_gets_a_stream_for_each_call_in_the_handshake_era(served: str) -> None:
    """A call may elicit or sample mid-call, and the question rides the call's stream."""
    from mcp_types import ElicitResult

    async def elicit(context: object, params: object) -> ElicitResult:
        return ElicitResult(action="decline")

    answers = Answers()
    async with httpx.AsyncClient(event_hooks={"response": [answers]}) as http, \
            Client(streamable_http_client(served, http_client=http), mode="legacy",
                   elicitation_callback=elicit) as client:
        assert "hello" in _text(await client.call_tool("read_file", {"path": "notes.md"}))
    assert answers.types and answers.types[0].startswith("text/event-stream"), answers.types


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _events(text: str) -> list[dict[str, str]]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = value.strip()
        if fields:
            events.append(fields)
    return events


async def test_a_streamed_call_stays_resumable_in_the_handshake_era(served: str) -> None:
    """A client that asks for progress gets event ids; its broken stream is resumed with Last-Event-ID."""
    async with httpx.AsyncClient(timeout=30) as http:
        opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        opened = await http.post(served, json=opening, headers=HEADERS)
        assert opened.headers["content-type"] == "application/json"  # nothing asked a stream of it
        session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}
        await http.post(served, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "notes.md"}, "_meta": {"progressToken": "p1"}}}
        streamed = await http.post(served, json=call, headers=session)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = _events(streamed.text)
        priming, answer = events[0], events[-1]
        assert priming.get("id") and priming.get("retry"), events  # resumable from its first event
        assert json.loads(answer["data"])["id"] == 2

        # The client lost everything after the priming event: the log gives the answer again.
        replayed: list[dict[str, str]] = []
        with anyio.fail_after(20):
            async with http.stream("GET", served, headers={**session, "last-event-id": priming["id"]}) as resumed:
                assert resumed.headers["content-type"].startswith("text/event-stream")
                text = ""
                async for chunk in resumed.aiter_text():
                    text += chunk
                    replayed = [e for e in _events(text) if e.get("data")]
                    if replayed:
                        break
        message = json.loads(replayed[0]["data"])
        assert message["id"] == 2 and "hello" in message["result"]["content"][0]["text"]
        assert replayed[0]["id"] == answer["id"]
