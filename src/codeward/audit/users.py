"""Per-user bearer tokens: a users file maps the SHA-256 of each token to a user name.

    # users.toml — only hashes are stored: printf %s "$TOKEN" | sha256sum
    [users.alice]
    token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

Why a token file and not OAuth: the MCP authorization spec makes an MCP server an OAuth 2.1
*resource server* whose tokens come from an authorization server the team runs (and the SDK's
``TokenVerifier`` is the seam for that); a team without one needs tokens it can hand out and
revoke today. :class:`UsersMiddleware` accepts either the server's one token (user ``operator``)
or a listed user's token, and names the user in the ASGI scope (``codeward.user``) for the audit.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

USER_KEY = "codeward.user"
"""Where the ASGI scope carries the authenticated user's name."""
OPERATOR = "operator"
"""The user of the server's own token (``--token-env`` or the generated one)."""


class UsersFileError(ValueError):
    """A users file that cannot be used; the message names the file, the entry and the fix."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_users(path: Path) -> dict[str, str]:
    """``{token_sha256: user}`` from a users file (TOML, see the module docstring)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsersFileError(f"cannot read the users file {path}: {error.strerror or error}") from error
    except tomllib.TOMLDecodeError as error:
        raise UsersFileError(f"the users file {path} is not valid TOML: {error}") from error
    users = data.get("users")
    if not isinstance(users, Mapping) or not users:
        raise UsersFileError(f"the users file {path} has no [users.<name>] tables; add one per user with "
                             'token_sha256 = "<printf %s TOKEN | sha256sum>"')
    found: dict[str, str] = {}
    for name, entry in users.items():
        digest = entry.get("token_sha256") if isinstance(entry, Mapping) else None
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise UsersFileError(f"{path}: [users.{name}] needs token_sha256 = 64 lowercase hex digits "
                                 "(printf %s TOKEN | sha256sum)")
        if digest in found:
            raise UsersFileError(f"{path}: users {found[digest]!r} and {name!r} have the same token")
        found[digest] = str(name)
    return found


class UsersMiddleware:
    """Bearer authentication with named users: the server's token or a users-file token, else 401."""

    def __init__(self, app: Any, users: Mapping[str, str], token: str | None = None) -> None:
        self.app = app
        self._users = dict(users)
        if token:
            self._users.setdefault(token_hash(token), OPERATOR)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = given.partition(" ")
        user = None
        if scheme.lower() == "bearer" and token:
            digest = token_hash(token)
            user = next((name for known, name in self._users.items() if hmac.compare_digest(known, digest)), None)
        if user is not None:
            await self.app({**scope, USER_KEY: user}, receive, send)
            return
        body = json.dumps({"error": "unauthorized", "message": "missing or unknown bearer token; send "
                           "'Authorization: Bearer <token>' with your own token (from the team's users file) "
                           "or the server's"}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="codeward"'),
            (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
