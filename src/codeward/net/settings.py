"""How the web tools may reach the network, configurable per server or session.

The settings travel in ``ToolContext.extras["web_settings"]`` (see :func:`web_settings_of`);
when absent, the safe defaults apply: the SSRF guard on, no internal host allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EXTRAS_KEY = "web_settings"
DEFAULT_SEARCH_ENDPOINT = "https://html.duckduckgo.com/html/"
DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; codeward/0.1; +fetch_url)"

Resolver = Callable[[str, int], Sequence[str]]
"""``resolver(host, port)`` → IP address strings; the default uses the system's getaddrinfo."""


@dataclass(frozen=True)
class WebSettings:
    """Limits and allowances of ``fetch_url`` and ``web_search``."""

    allow_hosts: tuple[str, ...] = ()
    """Hostnames, IP addresses or CIDR networks (``10.0.0.0/8``) the SSRF guard lets through."""
    search_endpoint: str = DEFAULT_SEARCH_ENDPOINT
    """A DuckDuckGo-HTML-compatible results page; the query is sent as ``?q=...``."""
    user_agent: str = DEFAULT_USER_AGENT
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 60.0
    """Seconds for a whole fetch, redirects included."""
    max_bytes: int = 5_000_000
    """Bytes read from a response body; the rest is dropped and the result says so."""
    max_redirects: int = 5
    resolver: Resolver | None = None
    """Name resolution override (split-horizon DNS, tests); ``None`` uses getaddrinfo."""


def web_settings_of(extras: Mapping[str, Any]) -> WebSettings:
    """The settings a context carries, or the safe defaults."""
    value = extras.get(EXTRAS_KEY)
    return value if isinstance(value, WebSettings) else WebSettings()
