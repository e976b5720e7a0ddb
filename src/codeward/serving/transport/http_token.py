"""Who may use an HTTP server: by default, the holder of a token codeward generated for it.

Any local user (and any web page the user has open) can reach a port on 127.0.0.1, so an
MCP server over HTTP without a token hands its tools — files, the shell — to all of them.
``serve --http`` and ``gateway --http`` therefore always require a bearer token:

- ``--token-env VAR``: the operator's token, from that environment variable;
- otherwise the token ``codeward install-client --http`` saved for that port, if there is one
  (``<codeward data home>/http/<port>.client-token``, 0600): the clients it configured keep
  working across restarts;
- otherwise a fresh token is generated and written, mode 0600, to
  ``<codeward data home>/http/<port>.token`` (``$CODEWARD_HOME``, else
  ``$XDG_DATA_HOME/codeward``, else ``~/.local/share/codeward``); the path is printed so a client
  can be configured with it, and the file is removed when the server stops;
- ``--no-auth``: no token, an explicit opt-out that is refused unless the server binds to a
  loopback address, and warned about on every start.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from codeward.kernel.user_dirs import data_home


class HttpAuthError(ValueError):
    """An authentication choice that cannot be honoured; the message says what to pass instead."""


@dataclass(frozen=True)
class HttpAuth:
    """The token a server requires (None only with ``--no-auth``) and what to tell the operator."""

    token: str | None
    token_file: Path | None = None
    notice: str = ""


def token_path(port: int, environ: Mapping[str, str] | None = None) -> Path:
    """Where a server on ``port`` writes its generated token."""
    return data_home(environ) / "http" / f"{port}.token"


def client_token_path(port: int, environ: Mapping[str, str] | None = None) -> Path:
    """Where ``install-client --http`` keeps the token of the server on ``port`` (kept across runs)."""
    return data_home(environ) / "http" / f"{port}.client-token"


def saved_client_token(port: int, environ: Mapping[str, str] | None = None) -> str | None:
    """The token ``install-client --http`` saved for ``port``, or None (a link is never followed)."""
    try:
        fd = os.open(client_token_path(port, environ), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8") as handle:
        token = handle.read().strip()
    return token or None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@contextmanager
def http_auth(*, host: str, port: int, token_env: str | None, no_auth: bool,
              environ: Mapping[str, str] | None = None) -> Iterator[HttpAuth]:
    """The authentication of one HTTP server's run; a generated token file is removed afterwards."""
    env = os.environ if environ is None else environ
    if no_auth and token_env:
        raise HttpAuthError("--no-auth and --token-env contradict each other; pass one of them")
    if no_auth:
        if not is_loopback(host):
            raise HttpAuthError(f"--no-auth is for loopback addresses only; binding to {host} without a token would "
                                "hand the tools to the network. Drop --no-auth (a token is generated) or bind to "
                                "127.0.0.1")
        yield HttpAuth(None, notice="WARNING: --no-auth: every local user and every web page open in a browser on "
                                    "this machine can call the tools. Drop --no-auth to require a token.")
        return
    if token_env:
        token = env.get(token_env)
        if not token:
            raise HttpAuthError(f"--token-env {token_env}: that environment variable is empty or unset")
        yield HttpAuth(token, notice=f"bearer token required (from ${token_env})")
        return
    saved = saved_client_token(port, env)
    if saved is not None:
        yield HttpAuth(saved, client_token_path(port, env),
                       notice=f"bearer token required: the one `codeward install-client --http` saved in "
                              f"{client_token_path(port, env)} (readable by you only)")
        return
    token = secrets.token_urlsafe(32)
    path = write_token_file(token_path(port, env), token)
    try:
        yield HttpAuth(token, path, notice=f"bearer token required; it is in {path} (readable by you only). "
                                           f"Clients send 'Authorization: Bearer <token>'; pass --token-env VAR "
                                           "to choose one, --no-auth to go without (loopback only)")
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


def write_token_file(path: Path, token: str) -> Path:
    """Write the token where only this user can read it (mode 0600, created fresh, no link followed)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return path
