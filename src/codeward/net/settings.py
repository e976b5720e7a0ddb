"""How the web tools may reach the network, configurable per server or session.

The settings are the ``[web]`` table (:class:`codeward.config.WebSettings`); they travel in
``ToolContext.extras["web_settings"]`` (see :func:`web_settings_of`). When absent, the safe
defaults apply: the SSRF guard on, no internal host allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codeward.config.web import DEFAULT_SEARCH_ENDPOINT, DEFAULT_USER_AGENT, Resolver, WebSettings

EXTRAS_KEY = "web_settings"

__all__ = ["DEFAULT_SEARCH_ENDPOINT", "DEFAULT_USER_AGENT", "EXTRAS_KEY", "Resolver", "WebSettings",
           "web_settings_of"]


def web_settings_of(extras: Mapping[str, Any]) -> WebSettings:
    """The settings a context carries, or the safe defaults."""
    value = extras.get(EXTRAS_KEY)
    return value if isinstance(value, WebSettings) else WebSettings()
