"""What arrives on the wire before the SDK sees it: bounded, and answered when it is not JSON-RPC.

The SDK parses a message into Python objects in one go and silently drops what it cannot
validate. Two consequences for a server that faces a model: a request that is merely huge or
deeply nested (a million keys) costs memory before anything can refuse it, and a request the
SDK cannot validate (a wrong ``jsonrpc``, ``params`` that are not an object, an ``id`` of the
wrong type, a batch) gets no answer at all, so the client waits forever.

:func:`screen` looks at one message's bytes first: over :data:`MAX_MESSAGE_BYTES`, deeper
than :data:`MAX_NESTING` or with more than :data:`MAX_VALUES` values it is refused from a
cheap scan, never parsed; a message the SDK's own model accepts passes untouched; anything
else is answered with a JSON-RPC error naming the problem and the fix — to the request's
``id`` when it has a usable one, else to ``null`` as JSON-RPC 2.0 requires. Well-formed
notifications and responses that fail validation are dropped (JSON-RPC never answers those).
Both transports use it: stdio per line, HTTP per request body.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types

MAX_MESSAGE_BYTES = 48 * 1024 * 1024
"""One message's size: a tool call may carry 16 MiB of text, which JSON escaping can triple."""
MAX_NESTING = 64
"""Arrays and objects inside one another; tool arguments need a handful."""
MAX_VALUES = 200_000
"""Values (object members and array elements) in one message; a large edit list needs thousands."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_BRACKETS = re.compile(rb"[\[\]{}]")
_ID_NEAR = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,19})\s*[,}]')


@dataclass(frozen=True)
class Rejection:
    """A message that must not reach the SDK, and what to answer (None: nothing, by the spec)."""

    reason: str
    reply: Any = None
    """The JSON-RPC error response (a list for a batch) to send back, or None."""

    def reply_bytes(self) -> bytes | None:
        if self.reply is None:
            return None
        return json.dumps(self.reply, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")


def screen(data: bytes | str) -> types.JSONRPCMessage | Rejection:
    """The message ``data`` holds, parsed by the SDK's model; or why it may not be, with the error to send."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    over = _over_bounds(raw)
    if over:
        return Rejection(over, _error(_guess_id(raw), INVALID_REQUEST, f"Invalid Request: {over}",
                                      "Send large content in parts (several calls), with less nesting."))
    try:
        message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    except Exception:  # any validation failure is classified below
        message = None
    if message is not None and (not isinstance(message, types.JSONRPCNotification) or not _has_id(data)):
        return message
    # (A request whose id is no string or integer validates as a notification: it would go unanswered.)
    if isinstance(data, bytes):
        try:
            data.decode()
        except UnicodeDecodeError:  # read as text with errors="replace", as the SDK's transport does
            return screen(data.decode(errors="replace"))
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        reason = f"Parse error: the message is not valid JSON{where}"
        return Rejection(reason, _error(None, PARSE_ERROR, reason, "Send one JSON-RPC 2.0 object per message."))
    if isinstance(value, list):
        return _batch(value)
    return _single(value)


def _has_id(data: bytes | str) -> bool:
    try:
        value = json.loads(data)
    except ValueError:
        return False
    return isinstance(value, dict) and "id" in value


def _single(value: Any) -> Rejection:
    if not isinstance(value, dict):
        reason = f"Invalid Request: a message must be a JSON object, got {_kind(value)}"
        return Rejection(reason, _error(None, INVALID_REQUEST, reason,
                                        'Send {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}.'))
    problem = _request_problem(value)
    if "method" not in value and ("result" in value or "error" in value):
        return Rejection(f"a malformed response ({problem or 'not valid'}) was dropped")
    if "id" not in value and problem is None:
        return Rejection("a notification the SDK does not accept was dropped")
    if "id" not in value and isinstance(value.get("method"), str) and value.get("jsonrpc") == "2.0":
        return Rejection(f"a malformed notification ({problem}) was dropped")
    request_id = value.get("id")
    usable = request_id if _usable_id(request_id) else None
    reason = f"Invalid Request: {problem or 'the message is not a valid JSON-RPC 2.0 request'}"
    return Rejection(reason, _error(usable, INVALID_REQUEST, reason, _hint(problem)))


def _batch(items: list[Any]) -> Rejection:
    reason = "Invalid Request: batches (JSON arrays of messages) are not supported by MCP"
    hint = "Send each request as its own message."
    if not items:
        return Rejection(reason, _error(None, INVALID_REQUEST, reason, hint))
    replies = [_error(item["id"], INVALID_REQUEST, reason, hint) for item in items
               if isinstance(item, dict) and _usable_id(item.get("id")) and "method" in item]
    return Rejection(reason, replies or _error(None, INVALID_REQUEST, reason, hint))


def _request_problem(value: dict[str, Any]) -> str | None:
    """The first thing that makes ``value`` an invalid request, or None when none is found."""
    if value.get("jsonrpc") != "2.0":
        return f"'jsonrpc' must be \"2.0\", got {json.dumps(value.get('jsonrpc'))}"
    if "id" in value and not _usable_id(value["id"]):
        return f"'id' must be a string or an integer, got {_kind(value['id'])}"
    if not isinstance(value.get("method"), str):
        return f"'method' must be a string, got {_kind(value.get('method'))}"
    if "params" in value and not isinstance(value["params"], dict) and value["params"] is not None:
        return f"'params' must be an object, got {_kind(value['params'])}"
    return None


def _hint(problem: str | None) -> str:
    if problem and "'params'" in problem:
        return 'Pass named parameters as an object, e.g. "params": {"name": "read_file", "arguments": {...}}.'
    if problem and "'id'" in problem:
        return 'Use a string or integer id, e.g. "id": 1.'
    return 'Send {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}.'


def _usable_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}" if isinstance(value, int) else "a fractional number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _error(request_id: Any, code: int, message: str, hint: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": {"hint": hint}}}


def _over_bounds(data: bytes) -> str | None:
    """Why ``data`` is too big to parse (size, nesting, number of values), from its bytes alone.

    Counts taken with the strings included bound the real ones, so most messages need nothing
    more; otherwise the strings are cut out (a few passes over the bytes in C) and the structure
    left over is counted exactly.
    """
    if len(data) > MAX_MESSAGE_BYTES:
        return f"the message is {len(data):,} bytes; the limit is {MAX_MESSAGE_BYTES:,}"
    opens = data.count(b"{") + data.count(b"[")
    if opens <= MAX_NESTING and opens + data.count(b",") <= MAX_VALUES:
        return None
    structure = _without_strings(data)
    opens = structure.count(b"{") + structure.count(b"[")
    if opens + structure.count(b",") > MAX_VALUES:
        return f"the message holds more than {MAX_VALUES:,} values"
    if opens > MAX_NESTING:
        depth = 0
        for bracket in _BRACKETS.findall(structure):
            depth += 1 if bracket in (b"{", b"[") else -1
            if depth > MAX_NESTING:
                return f"the message nests more than {MAX_NESTING} arrays or objects"
    return None


def _without_strings(data: bytes) -> bytes:
    """The bytes outside JSON strings: escaped backslashes and quotes dropped, then every other
    stretch between quotes (valid or not, what is left only bounds what a parser would build)."""
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(unescaped.split(b'"')[0::2])


def _guess_id(data: bytes) -> str | int | None:
    """The request's id from the start or end of an oversized message (it is not parsed whole)."""
    for part in (data[:4096], data[-4096:]):
        found = _ID_NEAR.search(part)
        if found:
            try:
                value = json.loads(found.group(1))
            except ValueError:
                continue
            if _usable_id(value):
                return value  # type: ignore[no-any-return]
    return None
