"""Bearer-token authentication for codeward's HTTP endpoints, as plain ASGI middleware."""

from __future__ import annotations

import hmac
import json
from typing import Any

Scope = dict[str, Any]
Receive = Any
Send = Any


class BearerTokenMiddleware:
    """Refuse every HTTP request that does not carry ``Authorization: Bearer <token>``.

    The comparison is constant-time; the 401 body says what header is expected.
    """

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("an empty bearer token would let everyone in")
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps({
            "error": "unauthorized",
            "message": "missing or wrong bearer token; send 'Authorization: Bearer <token>' "
            "with the token the server was started with",
        }).encode()
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="codeward"'),
                        (b"content-length", str(len(body)).encode())],
        })
        await send({"type": "http.response.body", "body": body})
