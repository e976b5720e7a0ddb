"""``[web]``: how ``fetch_url`` and ``web_search`` may reach the network."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codeward.config.base import Int, Seconds, Str, Strings, Table, code_only

DEFAULT_SEARCH_ENDPOINT = "https://html.duckduckgo.com/html/"
DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; codeward/0.1; +fetch_url)"

Resolver = Callable[[str, int], Sequence[str]]
"""``resolver(host, port)`` → IP address strings; the default uses the system's getaddrinfo."""


class WebSettings(Table):
    """Limits and allowances of ``fetch_url`` and ``web_search``; the SSRF guard is always on."""

    allow_hosts: Strings = ()
    """Hostnames, IP addresses or CIDR networks (``10.0.0.0/8``) the SSRF guard lets through."""
    search_endpoint: Str = DEFAULT_SEARCH_ENDPOINT
    """A DuckDuckGo-HTML-compatible results page; the query is sent as ``?q=...``."""
    user_agent: Str = DEFAULT_USER_AGENT
    """The User-Agent header of every request."""
    connect_timeout: Seconds = 10.0
    """Seconds to establish a connection."""
    read_timeout: Seconds = 20.0
    """Seconds to wait for data on an open connection."""
    total_timeout: Seconds = 60.0
    """Seconds for a whole fetch, redirects included."""
    max_bytes: Int = 5_000_000
    """Bytes read from a response body; the rest is dropped and the result says so."""
    max_redirects: Int = 5
    """Redirects followed (each one checked by the SSRF guard like the first request)."""
    resolver: Resolver | None = code_only(None, "is a name-resolution hook for code (tests, split-horizon "
                                                "DNS); configuration files cannot set it")
    """Name resolution override; ``None`` uses getaddrinfo."""
