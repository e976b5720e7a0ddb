"""Attack 8 of the issue: malformed JSON-RPC, sent as raw bytes over stdio and HTTP. Every request
that carries an id gets a JSON-RPC error back (to that id when it is usable, else to null), what
cannot be parsed gets a parse error, and a huge or deeply nested request is refused before it
is turned into objects (the server's memory barely moves)."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import psutil

from tests.redteam.harness import Host

TOKEN = "redteam-token"
MALFORMED: list[tuple[str, Any, Any]] = [
    # (what, message, the id the error must carry)
    ("wrong jsonrpc version", {"jsonrpc": "1.0", "id": 11, "method": "tools/list"}, 11),
    ("no jsonrpc member", {"id": 12, "method": "tools/list"}, 12),
    ("params an array", {"jsonrpc": "2.0", "id": 13, "method": "tools/list", "params": [1, 2]}, 13),
    ("params a string", {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": "read_file"}, 14),
    ("method a number", {"jsonrpc": "2.0", "id": 15, "method": 5}, 15),
    ("id a boolean", {"jsonrpc": "2.0", "id": True, "method": "tools/list"}, None),
    ("id a fraction", {"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}, None),
    ("id an object", {"jsonrpc": "2.0", "id": {"n": 1}, "method": "tools/list"}, None),
    ("id null", {"jsonrpc": "2.0", "id": None, "method": "tools/list"}, None),
    ("a scalar", 42, None),
    ("an empty batch", [], None),
    ("unknown method", {"jsonrpc": "2.0", "id": 16, "method": "no/such/method"}, 16),
]
DEEP = (b'{"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {"name": "read_file", "arguments": '
        b'{"path": ' + b"[" * 5000 + b"]" * 5000 + b"}}}\n")
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "r", "version": "1"}}}


def million_keys(request_id: int) -> bytes:
    arguments = ",".join(f'"k{i}":{i}' for i in range(1_000_000))
    return (f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"read_file",'
            f'"arguments":{{{arguments}}}}}}}\n').encode()


def errors_for(messages: list[Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for message in messages:
        found.extend(m for m in (message if isinstance(message, list) else [message])
                     if isinstance(m, dict) and "error" in m)
    return found


def test_every_malformed_request_over_stdio_is_answered(host: Host) -> None:
    with host.raw_stdio() as raw:
        raw.initialize()
        for _what, message, _id in MALFORMED:
            raw.send(message)
        raw.send([{"jsonrpc": "2.0", "id": 17, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 18, "method": "ping"}])
        raw.send(b'{"jsonrpc": "2.0", "id": 19, "method": "tools/list"\n')  # cut short
        raw.send(b"\xff\xfe not json\n")
        raw.send(DEEP)
        raw.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        assert raw.response("after").get("result") == {}, "the server still serves after all of that"
        for request_id in (11, 12, 13, 14, 15, 16, 17, 18, 21):
            answer = raw.response(request_id)
            assert answer["error"]["code"] in (-32600, -32601), answer
        errors = errors_for(raw.messages())
        nulls = [e for e in errors if e["id"] is None]
        # id true / 1.5 / object / null, a scalar, an empty batch, the cut-short line, the bytes that are no JSON
        assert len(nulls) == 8, nulls
        assert sum(e["error"]["code"] == -32700 for e in nulls) == 2
        assert all(e["error"]["message"] and e["error"].get("data", {}).get("hint") for e in errors if e["id"] != 16)
        text = json.dumps(errors)
        for fragment in ("'jsonrpc' must be \\\"2.0\\\"", "'params' must be an object", "'id' must be a string or "
                         "an integer", "batches", "nests more than"):
            assert fragment in text, fragment


def test_a_million_key_request_is_refused_before_it_is_parsed(host: Host) -> None:
    with host.raw_stdio() as raw:
        raw.initialize()
        raw.send({"jsonrpc": "2.0", "id": "warm", "method": "tools/list"})
        raw.response("warm")
        before = psutil.Process(raw.proc.pid).memory_info().rss
        raw.send(million_keys(31))
        answer = raw.response(31, timeout_s=120)
        assert answer["error"]["code"] == -32600 and "values" in answer["error"]["message"]
        grown = psutil.Process(raw.proc.pid).memory_info().rss - before
        # The line itself is 16 MB and is held while it is read; parsed, it grew the server by 150 MB.
        assert grown < 80 * 1024 * 1024, f"the server grew by {grown / 2**20:.0f} MiB"
        raw.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        assert raw.response("after").get("result") == {}


def test_every_malformed_request_over_http_is_answered(host: Host) -> None:
    with host.serve_http("--token-env", "CW_REDTEAM_TOKEN", env={"CW_REDTEAM_TOKEN": TOKEN}) as server:
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        with httpx.Client(timeout=60) as client:
            init = client.post(server.url, headers=headers, json=INIT)
            assert init.status_code == 200, init.text
            session = {**headers, "mcp-session-id": init.headers["mcp-session-id"],
                       "mcp-protocol-version": "2025-06-18"}
            for what, message, request_id in MALFORMED:
                if what == "unknown method":
                    continue  # the SDK answers it (over the event stream)
                reply = client.post(server.url, headers=session, content=json.dumps(message))
                host.record(reply.text)
                assert reply.status_code == 400, (what, reply.status_code, reply.text)
                body = reply.json()
                assert body["id"] == request_id and body["error"]["code"] == -32600, (what, body)
            deep = client.post(server.url, headers=session, content=DEEP)
            assert deep.status_code == 400 and deep.json()["id"] == 21
            huge = client.post(server.url, headers=session, content=million_keys(32))
            assert huge.status_code == 400 and huge.json()["id"] == 32 and "values" in huge.text
            unauthenticated = client.post(server.url, headers={**session, "Authorization": "Bearer wrong"},
                                          content=b"[]")
            assert unauthenticated.status_code == 401  # nothing is read before the token is checked
            assert client.post(server.url, headers=session, json={"jsonrpc": "2.0", "id": 40, "method": "ping"}
                               ).status_code == 200
