"""The JSON-RPC guard on its own: what passes to the SDK untouched, what is answered, and how."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from codeward.engines.jsonrpc.guard import MAX_NESTING, MAX_VALUES, Rejection, screen


def request(**fields: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", **fields}).encode()


@pytest.mark.parametrize("text", [
    'a "quoted" [word], {x}', "back\\slash\\", '\\"', "\\\\\"", "[" * 200, "," * (MAX_VALUES + 10),
])
def test_brackets_and_commas_inside_strings_count_for_nothing(text: str) -> None:
    data = request(params={"name": "write_file", "arguments": {"path": "a", "content": text}})
    screened = screen(data)
    assert isinstance(screened, types.JSONRPCRequest), screened


def test_nesting_and_value_counts_are_bounded_before_parsing() -> None:
    deep = b'{"jsonrpc":"2.0","id":5,"method":"x","params":{"a":' + b"[" * (MAX_NESTING + 1) + \
        b"]" * (MAX_NESTING + 1) + b"}}"
    rejected = screen(deep)
    assert isinstance(rejected, Rejection) and "nests more than" in rejected.reason
    assert rejected.reply["id"] == 5 and rejected.reply["error"]["code"] == -32600
    wide = request(params={"name": "x", "arguments": {"v": list(range(MAX_VALUES + 1))}})
    rejected = screen(wide)
    assert isinstance(rejected, Rejection) and "values" in rejected.reason and rejected.reply["id"] == 1
    fine = request(params={"name": "x", "arguments": {"v": list(range(MAX_VALUES // 2))}})
    assert isinstance(screen(fine), types.JSONRPCRequest)


@pytest.mark.parametrize(("message", "answer_id", "fragment"), [
    ({"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": [1]}, "a", "'params' must be an object"),
    ({"jsonrpc": "2.0", "id": False, "method": "ping"}, None, "got a boolean"),
    ({"jsonrpc": "2", "id": 3, "method": "ping"}, 3, "'jsonrpc' must be"),
    ({"jsonrpc": "2.0", "method": 7}, None, "'method' must be a string"),
    ("just a string", None, "must be a JSON object"),
])
def test_invalid_requests_are_answered_with_what_to_fix(message: object, answer_id: object, fragment: str) -> None:
    rejected = screen(json.dumps(message).encode())
    assert isinstance(rejected, Rejection)
    assert rejected.reply["id"] == answer_id and fragment in rejected.reply["error"]["message"]
    assert rejected.reply["error"]["data"]["hint"]


def test_notifications_and_responses_that_fail_are_dropped_unanswered() -> None:
    for message in ({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]},
                    {"jsonrpc": "2.0", "id": 4, "result": 1, "error": {"code": 1}}):
        rejected = screen(json.dumps(message).encode())
        assert isinstance(rejected, Rejection) and rejected.reply is None


def test_a_batch_gets_one_error_per_request_and_bad_bytes_a_parse_error() -> None:
    batch = screen(b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},'
                   b'{"jsonrpc":"2.0","id":"two","method":"ping"}]')
    assert isinstance(batch, Rejection) and [r["id"] for r in batch.reply] == [1, "two"]
    broken = screen(b'{"jsonrpc": "2.0", "id": 9, "method": ')
    assert isinstance(broken, Rejection) and broken.reply["error"]["code"] == -32700 and broken.reply["id"] is None
    latin1 = screen(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"caf\xe9"}}')
    assert isinstance(latin1, types.JSONRPCRequest)  # read with U+FFFD, as the SDK's text transport does
