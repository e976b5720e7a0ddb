"""Where an HTTP server listens, and how it is authenticated: what a command line or a library caller asks
for, before anything of the HTTP stack is imported."""

from __future__ import annotations

from dataclasses import dataclass

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""Hosts only this machine reaches: a server bound to one needs no token and no Host check beyond the SDK's."""


@dataclass(frozen=True)
class HttpEndpoint:
    """Where an HTTP server listens and how it is authenticated."""

    host: str = "127.0.0.1"
    port: int = 8765
    token_env: str | None = None
    """The variable holding the token (``--token-env``); unset, a token is generated and saved."""
    no_auth: bool = False
    """No token at all (``--no-auth``, loopback only)."""
    token: str | None = None
    """A token chosen by a caller of the library (``run_gateway_cli(token=...)``): used as it is, and
    without one (and without ``token_env``) such a caller serves without authentication."""
    chosen: bool = False
    """The caller chose the token itself (``token``, possibly None): no token is generated or read."""

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"

    @property
    def allowed_hosts(self) -> list[str]:
        """The ``Host`` headers the server accepts beyond loopback's (DNS-rebinding protection): its own."""
        return [f"{self.host}:*"] if self.host not in LOOPBACK else []
