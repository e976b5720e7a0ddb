"""Who may talk to the Hook API: the holder of this run's token, from this machine's own pages.

Any local process — and any web page the user has open — can reach a port on 127.0.0.1, so
the seed's open port would let them read the session and approve tool calls. Every request
here must pass three checks, in this order:

1. ``Host`` names the server itself (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT``):
   a rebinding attacker's page (``evil.example`` resolving to 127.0.0.1) is refused.
2. ``Origin``, when a browser sends one, is the server's own origin; and a request carried by
   the console cookie must come from the console itself (``Sec-Fetch-Site`` same-origin or a
   typed URL): no other page, not even one on another localhost port, can act with it.
3. The bearer token of this run: ``Authorization: Bearer <token>`` (scripts, ApiHookClient),
   or the console's cookie. Opening the console URL (``/?token=...``) sets that cookie and
   redirects to a URL without the token, so it does not linger in the address bar.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from codeward.serving.transport.http_token import is_loopback

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
ENTRY_PATHS = ("/", "/console", "/console/")
SAFE_FETCH_SITES = ("same-origin", "none")


def new_token() -> str:
    """A fresh bearer token for one run (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback bind address unless the user asked for it explicitly."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(f"binding the control API to {host} exposes the session and its approvals to the network; "
                         "bind to 127.0.0.1, or pass --control-allow-remote to do it on purpose (the bearer token "
                         "is still required on every request)")


def write_token_file(path: Path, token: str) -> Path:
    """Write the token where only this user can read it (mode 0600, created fresh)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return path


def cookie_name(port: int) -> str:
    """Per port, because browsers share cookies between all ports of a host."""
    return f"codeward_control_{port}"


class ControlGuard:
    """ASGI middleware applying the three checks; refusals are JSON bodies saying what to do."""

    def __init__(self, app: ASGIApp, token: str, *, extra_hosts: tuple[str, ...] = (), any_host: bool = False) -> None:
        if not token:
            raise ValueError("the control API needs a non-empty token")
        self.app = app
        self._token = token.encode()
        self._extra_hosts = tuple(h.lower() for h in extra_hosts)
        self._any_host = any_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # nothing here speaks WebSocket
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        port = int((scope.get("server") or ("", 0))[1] or 0)
        host = headers.get("host", "").lower()
        allowed = self._hosts(port)
        if not self._any_host and host not in allowed:
            await _refuse(send, 403, "forbidden_host",
                          f"Host {host or '(none)'!r} is not this server; requests must address "
                          f"http://127.0.0.1:{port} (DNS-rebinding protection)")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in allowed | {host}}:
            await _refuse(send, 403, "forbidden_origin",
                          f"requests from pages at {origin} are refused; use the console served by this "
                          "server, or a script with the bearer token")
            return
        if self._bearer_ok(headers):
            await self.app(scope, receive, send)
            return
        cookie_ok = self._cookie_ok(headers, port)
        if cookie_ok and headers.get("sec-fetch-site", "same-origin") in SAFE_FETCH_SITES:
            await self.app(scope, receive, send)
            return
        if cookie_ok:
            await _refuse(send, 403, "forbidden_site", "the console cookie only works on the console's own pages")
            return
        query_token = self._query_token(scope)
        if (query_token is not None and scope.get("method") == "GET" and scope["path"] in ENTRY_PATHS
                and hmac.compare_digest(query_token.encode(), self._token)):
            await _enter_console(send, cookie_name(port), self._token.decode())
            return
        await _refuse(send, 401, "unauthorized",
                      "missing or wrong bearer token; send 'Authorization: Bearer <token>' (the token is in the "
                      "file printed at start-up), or open the console URL printed in the terminal",
                      www_authenticate=True, html=scope["path"] in ENTRY_PATHS)

    def _hosts(self, port: int) -> set[str]:
        return {f"{name}:{port}" for name in LOOPBACK_NAMES} | {f"{h}:{port}" for h in self._extra_hosts}

    def _bearer_ok(self, headers: dict[str, str]) -> bool:
        given = headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self._token)

    def _cookie_ok(self, headers: dict[str, str], port: int) -> bool:
        from http.cookies import CookieError, SimpleCookie

        raw = headers.get("cookie")
        if not raw:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw)
        except CookieError:
            return False
        morsel = jar.get(cookie_name(port))
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self._token)

    @staticmethod
    def _query_token(scope: Scope) -> str | None:
        query = (scope.get("query_string") or b"").decode("latin-1")
        values = parse_qs(query).get("token")
        return values[0] if values else None


async def _enter_console(send: Send, name: str, token: str) -> None:
    cookie = f"{name}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", b"/console/"), (b"set-cookie", cookie.encode()),
                            (b"cache-control", b"no-store"), (b"referrer-policy", b"no-referrer"),
                            (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, status: int, error: str, message: str, *, www_authenticate: bool = False,
                  html: bool = False) -> None:
    if html:
        body = ("<!doctype html><title>codeward control</title><p>" + message.replace("<", "&lt;") +
                "</p>").encode()
        kind = b"text/html; charset=utf-8"
    else:
        body = json.dumps({"error": error, "message": message}).encode()
        kind = b"application/json"
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]
    if www_authenticate:
        headers.append((b"www-authenticate", b'Bearer realm="codeward-control"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
