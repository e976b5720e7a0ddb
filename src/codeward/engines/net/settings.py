"""How the web tools may reach the network, configurable per server or session.

The settings are the ``[web]`` table (:class:`codeward.config.WebSettings`); they travel in
``ToolContext.services.web`` (see :func:`web_settings_of`). When absent, the safe
defaults apply: the SSRF guard on, no internal host allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeward.config.web import DEFAULT_SEARCH_ENDPOINT, DEFAULT_USER_AGENT, Resolver, WebSettings

if TYPE_CHECKING:
    from codeward.kernel.context import Services


__all__ = ["DEFAULT_SEARCH_ENDPOINT", "DEFAULT_USER_AGENT", "Resolver", "WebSettings",
           "web_settings_of"]


def web_settings_of(services: Services) -> WebSettings:
    """The settings a context carries, or the safe defaults."""
    return services.web or WebSettings()
