"""The JSON-RPC guard for streamable HTTP: every POST body is screened before the SDK parses it.

Over HTTP the SDK answers most malformed messages itself, but with ``id: null`` even when the
request had a usable id, with a validation dump for a message, and not at all for a request
whose id has the wrong type (it takes it for a notification: ``202 Accepted``). It also reads
and parses a body of any size. This middleware reads at most
:data:`~codeward.engines.jsonrpc.guard.MAX_MESSAGE_BYTES`, screens the body with
:func:`~codeward.engines.jsonrpc.guard.screen` and answers what it refuses itself
(``400`` with the JSON-RPC error, ``413`` when too large); the rest goes on to the SDK as sent,
with the screened message in the scope (``codeward.jsonrpc``) for the layers inside.
It sits inside the bearer-token check: nothing unauthenticated is read.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from codeward.engines.jsonrpc.guard import INVALID_REQUEST, MAX_MESSAGE_BYTES, Rejection, screen
from codeward.serving.transport.http_answers import MESSAGE_KEY

logger = logging.getLogger("codeward.serving.transport.http")
Scope = dict[str, Any]
Receive = Any
Send = Any


class JsonRpcGuardMiddleware:
    """Screen POST bodies (bounded read); answer refused ones with JSON-RPC errors."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_MESSAGE_BYTES:
                error = {"jsonrpc": "2.0", "id": None, "error": {
                    "code": INVALID_REQUEST, "data": {"hint": "Send large content in parts (several calls)."},
                    "message": f"Invalid Request: the body is over {MAX_MESSAGE_BYTES:,} bytes"}}
                await _respond(send, 413, json.dumps(error).encode())
                return
            if not message.get("more_body", False):
                break
        screened = screen(bytes(body))
        if isinstance(screened, Rejection):
            logger.warning("refused a message from the client: %s", screened.reason)
            reply = screened.reply_bytes()
            await _respond(send, 400 if reply is not None else 202, reply or b"")
            return
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()  # type: ignore[no-any-return]

        await self.app({**scope, MESSAGE_KEY: screened}, replay, send)


async def _respond(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
