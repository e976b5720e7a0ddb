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

On a server with a users file (``[audit] users_file``: a team deployment), a person also signs in
with their own token, the same ways (``/?token=<own token>``, a bearer header): the console shows
held calls and answers them, so only a user with the *approver* role is let in — an agent's token is
refused (403, naming the role) — and each request carries the person's name
(:data:`~codeward.audit.users.USER_KEY`): their answers are audited under it, and their own calls are
not theirs to answer. The run's token stays the local operator's (audited as ``console``).
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from codeward.audit.users import USER_KEY, Directory, Role
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


@dataclass(frozen=True)
class _Person:
    """Who signed in: a users file's user (``name``), or the holder of the run's token (``None``)."""

    name: str | None
    roles: frozenset[Role]


class ControlGuard:
    """ASGI middleware applying the three checks; refusals are JSON bodies saying what to do."""

    def __init__(self, app: ASGIApp, token: str, *, extra_hosts: tuple[str, ...] = (), any_host: bool = False,
                 users: Callable[[], Directory | None] = lambda: None) -> None:
        if not token:
            raise ValueError("the control API needs a non-empty token")
        self.app = app
        self._token = token.encode()
        self._extra_hosts = tuple(h.lower() for h in extra_hosts)
        self._any_host = any_host
        self._users = users

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
        bearer = self._who(self._bearer(headers))
        if bearer is not None:
            await self._admit(bearer, scope, receive, send)
            return
        cookie = self._cookie(headers, port)
        who = self._who(cookie)
        if who is not None and headers.get("sec-fetch-site", "same-origin") in SAFE_FETCH_SITES:
            await self._admit(who, scope, receive, send)
            return
        if who is not None:
            await _refuse(send, 403, "forbidden_site", "the console cookie only works on the console's own pages")
            return
        query_token = self._query_token(scope)
        entering = self._who(query_token) if scope.get("method") == "GET" and scope["path"] in ENTRY_PATHS else None
        if entering is not None and query_token is not None:
            if await self._refused(entering, scope, send):
                return
            await _enter_console(send, cookie_name(port), query_token)
            return
        await _refuse(send, 401, "unauthorized",
                      "missing or wrong bearer token; send 'Authorization: Bearer <token>' (the token is in the "
                      "file printed at start-up), or open the console URL printed in the terminal",
                      www_authenticate=True, html=scope["path"] in ENTRY_PATHS)

    def _hosts(self, port: int) -> set[str]:
        return {f"{name}:{port}" for name in LOOPBACK_NAMES} | {f"{h}:{port}" for h in self._extra_hosts}

    def _who(self, token: str | None) -> _Person | None:
        """Whose token this is: the run's own (the local operator), a users file's user, or nobody."""
        if not token:
            return None
        if hmac.compare_digest(token.encode(), self._token):
            return _Person(None, frozenset(Role))
        users = self._users()
        user = users.find(token) if users is not None else None
        return _Person(user.name, user.roles) if user is not None else None

    async def _admit(self, person: _Person, scope: Scope, receive: Receive, send: Send) -> None:
        """Let a signed-in person through, named in the scope."""
        if not await self._refused(person, scope, send):
            await self.app({**scope, USER_KEY: person.name} if person.name else scope, receive, send)

    @staticmethod
    async def _refused(person: _Person, scope: Scope, send: Send) -> bool:
        """Refuse anyone but an approver (the console shows held calls and answers them); True if refused."""
        if Role.APPROVER in person.roles:
            return False
        held = ", ".join(sorted(person.roles)) or "none"
        await _refuse(send, 403, "forbidden", f"the console needs the approver role; user {person.name!r} has "
                      f"{held}. An administrator adds it in the users file ([users.{person.name}] roles), "
                      "then sends SIGHUP to the server", html=scope["path"] in ENTRY_PATHS)
        return True

    @staticmethod
    def _bearer(headers: dict[str, str]) -> str | None:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None

    @staticmethod
    def _cookie(headers: dict[str, str], port: int) -> str | None:
        from http.cookies import CookieError, SimpleCookie

        raw = headers.get("cookie")
        if not raw:
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw)
        except CookieError:
            return None
        morsel = jar.get(cookie_name(port))
        return morsel.value if morsel is not None else None

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
