"""The HTTP access log (``[server] access_log = true``): one line per HTTP request an HTTP server answers.

Each line — logger ``codeward.access``, level INFO, in the server's ``[server] log_format`` — says
the method and path, the status, how long the answer took and how many body bytes it sent, who asked
(the user of the bearer token, ``-`` without a known one), the MCP session, the JSON-RPC method and
request id of a POST (the id the audit's records carry), the client's address and the balancer's
``X-Request-Id`` when it sends one. The probes are logged too (a balancer's view of the replica).

:class:`AccessLog` sits outermost and writes the line when the answer ends; :class:`NoteRequest` sits
inside the JSON-RPC guard and adds what only the screened message says to the same line.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from mcp_types import JSONRPCNotification, JSONRPCRequest

from codeward.audit.users import Directory
from codeward.serving.transport.http_answers import MESSAGE_KEY

log = logging.getLogger("codeward.access")

NOTE_KEY = "codeward.access"
"""Where the scope carries the line being written (one dict, shared by the scope's copies)."""


class AccessLog:
    """Log each HTTP request once it is answered (or abandoned)."""

    def __init__(self, app: Any, users: Directory) -> None:
        self.app = app
        self.users = users

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        note: dict[str, Any] = {"method": scope.get("method"), "path": scope.get("path"), "status": 0, "bytes": 0,
                                "user": self._user(headers), "client": (scope.get("client") or ("-",))[0]}
        for header, field in (("mcp-session-id", "session"), ("x-request-id", "x_request_id")):
            if header in headers:
                note[field] = headers[header]
        started = time.perf_counter()

        async def noted(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                note["status"] = message["status"]
            elif message["type"] == "http.response.body":
                note["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app({**scope, NOTE_KEY: note}, receive, noted)
        finally:
            note["ms"] = round((time.perf_counter() - started) * 1000, 1)
            log.info("%s %s %s %sms %sB user=%s%s", note["method"], note["path"], note["status"] or "-", note["ms"],
                     note["bytes"], note["user"], "".join(f" {k}={note[k]}" for k in ("rpc", "request_id", "session")
                                                          if k in note), extra={"fields": note})

    def _user(self, headers: dict[str, str]) -> str:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        user = self.users.find(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        return user.name if user is not None else "-"


class NoteRequest:
    """Add the JSON-RPC method and request id of a screened POST to its access line."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        note = scope.get(NOTE_KEY) if scope["type"] == "http" else None
        message = scope.get(MESSAGE_KEY)
        if note is not None and isinstance(message, (JSONRPCRequest, JSONRPCNotification)):
            note["rpc"] = message.method
            if isinstance(message, JSONRPCRequest):
                note["request_id"] = str(message.id)
        await self.app(scope, receive, send)
