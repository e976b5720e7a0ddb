"""Per-user bearer tokens and roles: a users file maps the SHA-256 of each token to a user and what
the user may do.

    # users.toml — only hashes are stored: printf %s "$TOKEN" | sha256sum
    [users.alice]
    token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    roles = ["agent"]                 # the default: calls tools, nothing else

    [users.carol]
    token_sha256 = "…"
    roles = ["approver", "auditor"]   # answers others' held calls, reads the audit and the figures

The roles (:class:`Role`) split what one token used to allow: an agent's token cannot answer the
approvals its own calls wait on, nor read everyone's audit. The server's own token (user
``operator``) holds every role. The file is read again on SIGHUP (:meth:`Directory.reload`).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

USER_KEY = "codeward.user"
"""Where the ASGI scope carries the authenticated user's name."""
ROLES_KEY = "codeward.roles"
"""Where the ASGI scope carries the authenticated user's roles (a frozenset of :class:`Role`)."""
OPERATOR = "operator"
"""The user of the server's own token (``--token-env`` or the generated one)."""


class Role(StrEnum):
    """What a user's token may do on a server's HTTP port."""

    AGENT = "agent"
    """Call tools: the MCP endpoint (``/mcp``)."""
    APPROVER = "approver"
    """List the calls waiting for a person on every replica, with their arguments' secrets redacted, and
    answer them (``/approvals``) — never a call of one's own."""
    AUDITOR = "auditor"
    """Read every user's audit records and the deployment's call figures (``/audit``, ``/metrics``)."""


EVERY_ROLE = frozenset(Role)
DEFAULT_ROLES = frozenset({Role.AGENT})
"""A user whose entry names no roles calls tools and does nothing else."""


@dataclass(frozen=True)
class User:
    """Who a token belongs to and what it may do."""

    name: str
    roles: frozenset[Role] = DEFAULT_ROLES


class UsersFileError(ValueError):
    """A users file that cannot be used; the message names the file, the entry and the fix."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_users(path: Path) -> dict[str, User]:
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
    found: dict[str, User] = {}
    for name, entry in users.items():
        digest = entry.get("token_sha256") if isinstance(entry, Mapping) else None
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise UsersFileError(f"{path}: [users.{name}] needs token_sha256 = 64 lowercase hex digits "
                                 "(printf %s TOKEN | sha256sum)")
        if digest in found:
            raise UsersFileError(f"{path}: users {found[digest].name!r} and {name!r} have the same token")
        if str(name) == OPERATOR:
            raise UsersFileError(f"{path}: [users.{OPERATOR}] is the name of the server's own token; "
                                 "give this user another name")
        found[digest] = User(str(name), _roles(path, str(name), entry.get("roles")))
    return found


def _roles(path: Path, name: str, given: object) -> frozenset[Role]:
    if given is None:
        return DEFAULT_ROLES
    known = ", ".join(f'"{role}"' for role in Role)
    if not isinstance(given, list) or not all(isinstance(role, str) for role in given):
        raise UsersFileError(f"{path}: [users.{name}] roles must be a list of role names ({known}), "
                             f"got {given!r}")
    unknown = [role for role in given if role not in EVERY_ROLE]
    if unknown:
        raise UsersFileError(f"{path}: [users.{name}] has unknown role {unknown[0]!r}; the roles are {known}")
    return frozenset(Role(role) for role in given)


class Directory:
    """The tokens a server accepts: its own (user ``operator``, every role) and a users file's, which
    :meth:`reload` reads again (SIGHUP) without dropping a connection."""

    def __init__(self, path: Path | None, token: str | None = None) -> None:
        self.path = path
        self._own: dict[str, User] = {}
        self._users = load_users(path) if path is not None else {}
        self.accept_own(token)

    def accept_own(self, token: str | None) -> None:
        """Accept the server's own token as user ``operator`` (known once the endpoint chose one)."""
        self._own = {token_hash(token): User(OPERATOR, EVERY_ROLE)} if token else {}

    def find(self, token: str) -> User | None:
        """The user of a bearer token (compared in constant time), or None."""
        digest = token_hash(token)
        users = {**self._users, **self._own}
        return next((user for known, user in users.items() if hmac.compare_digest(known, digest)), None)

    def reload(self) -> str:
        """Read the users file again; a file that cannot be used leaves the users as they were and raises
        :class:`UsersFileError`. Returns what changed, for the log."""
        if self.path is None:
            return "no users file to reload ([audit] users_file is not set)"
        users = load_users(self.path)
        before = {user.name for user in self._users.values()}
        after = {user.name for user in users.values()}
        self._users = users
        return (f"reloaded {self.path}: {len(after)} users"
                f"{'; added ' + ', '.join(sorted(after - before)) if after - before else ''}"
                f"{'; removed ' + ', '.join(sorted(before - after)) if before - after else ''}")


RoleNeeded = Callable[[str, str], Role | None]
"""The role a request needs, from its method and path (None: any authenticated user)."""


class UsersMiddleware:
    """Bearer authentication with named users and roles: an unknown token is 401, a known one without
    the role its path needs is 403 naming that role."""

    def __init__(self, app: Any, users: Directory, needs: RoleNeeded) -> None:
        self.app = app
        self.users = users
        self.needs = needs

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = given.partition(" ")
        user = self.users.find(token) if scheme.lower() == "bearer" and token else None
        if user is None:
            whose = ("your own token (from the team's users file) or the server's" if self.users.path is not None
                     else "the token the server was started with")
            await _refuse(send, 401, {"error": "unauthorized", "message": "missing or unknown bearer token; send "
                                      f"'Authorization: Bearer <token>' with {whose}"},
                          [(b"www-authenticate", b'Bearer realm="codeward"')])
            return
        needed = self.needs(scope.get("method", "GET"), scope.get("path", ""))
        if needed is not None and needed not in user.roles:
            held = ", ".join(sorted(user.roles)) or "none"
            wanted = ", ".join(f'"{role}"' for role in sorted({*user.roles, needed}))
            await _refuse(send, 403, {
                "error": "forbidden", "role": str(needed),
                "message": f"{scope.get('method', 'GET')} {scope.get('path', '')} needs the {needed} role; user "
                           f"{user.name!r} has {held}. An administrator adds it in the users file: "
                           f"[users.{user.name}] roles = [{wanted}]"
                           " (then SIGHUP the replicas)"})
            return
        await self.app({**scope, USER_KEY: user.name, ROLES_KEY: user.roles}, receive, send)


async def _refuse(send: Any, status: int, payload: dict[str, Any],
                  headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), *headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
