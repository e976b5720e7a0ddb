"""The HTTP side of a drain (:mod:`codeward.serving.drain`): each JSON-RPC request counted while it is
answered, and refused with ``503`` once the server is stopping.

A session's standing ``GET`` stream is ended by the drain once the calls are done (the client opens
it again on another replica). It sits inside the JSON-RPC guard (the screened message is in the
scope): a notification or a client's answer to the server (an elicitation's) still goes through while
the calls that wait on it finish; only new requests are refused. The ``503`` carries ``Retry-After``
and ``Connection: close``, and a body naming the stop: a balancer configured like
``deploy/nginx.conf`` sends the request to another replica, which takes the session up.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import JSONRPCRequest

from codeward.serving.drain import STOPPING, Drain
from codeward.serving.transport.http_answers import MESSAGE_KEY

Scope = dict[str, Any]


class DrainGate:
    """Count requests in flight; refuse new ones while draining."""

    def __init__(self, app: Any, drain: Drain) -> None:
        self.app = app
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await self._standing(scope, receive, send)
            return
        message = scope.get(MESSAGE_KEY) if scope["type"] == "http" else None
        if not isinstance(message, JSONRPCRequest):
            await self.app(scope, receive, send)
            return
        if self.drain.draining:
            body = json.dumps({"jsonrpc": "2.0", "id": message.id, "error": {
                "code": -32000, "message": f"{STOPPING}; send the request again: another replica answers it"}}).encode()
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"retry-after", b"1"), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body})
            return
        with self.drain.serving():
            await self.app(scope, receive, send)

    async def _standing(self, scope: Scope, receive: Any, send: Any) -> None:
        """A ``GET`` event stream, ended cleanly (a last empty chunk) when the drain ends it."""
        started = finished = False

        async def watched(message: dict[str, Any]) -> None:
            nonlocal started, finished
            started = started or message["type"] == "http.response.start"
            finished = finished or (message["type"] == "http.response.body" and not message.get("more_body"))
            await send(message)

        with self.drain.standing() as standing:
            await self.app(scope, receive, watched)
        if standing.cancelled_caught and started and not finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
