"""The environment an upstream server the gateway starts runs with.

The SDK passes a started server only a minimal environment (``HOME``, ``LOGNAME``, ``PATH``,
``SHELL``, ``TERM``, ``USER``), which drops what ordinary tools need to work on a real machine:
the TLS settings of a company's intercepting proxy (``uvx mcp-server-git`` then fails to download),
the proxies themselves, the locale, the caches of uv, pip, npm, Go and Cargo. An upstream inherits
those names (:data:`INHERITED`, and the variables starting with :data:`INHERITED_PREFIXES`) from
codeward's own environment, then the server's configured ``env`` over them. Anything else — API
keys, cloud credentials, tokens — reaches an upstream only when its ``env`` names it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

INHERITED = frozenset({
    # who and where
    "HOME", "USER", "LOGNAME", "SHELL", "TERM", "PATH", "TMPDIR", "TEMP", "TMP", "TZ",
    # locale
    "LANG", "LANGUAGE",
    # TLS trust (an intercepting proxy's certificate authority)
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    # proxies
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    # tool homes and caches
    "GOPATH", "GOMODCACHE", "GOCACHE", "GOPROXY", "GOFLAGS", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR", "PNPM_HOME",
    "DENO_DIR", "BUN_INSTALL", "JAVA_HOME", "PIPX_HOME", "PIPX_BIN_DIR",
})
"""Variables an upstream inherits by name."""

INHERITED_PREFIXES = ("LC_", "XDG_", "UV_", "PIP_", "NPM_CONFIG_", "npm_config_")
"""Variables an upstream inherits by prefix: locale categories, per-user folders, uv's, pip's and npm's settings."""


def inherited(name: str) -> bool:
    """Whether an upstream inherits the variable ``name`` from codeward's environment."""
    return name in INHERITED or name.startswith(INHERITED_PREFIXES)


def upstream_environment(configured: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The inherited variables of ``environ`` (codeward's own by default), then ``configured`` over them."""
    source = os.environ if environ is None else environ
    return {**{name: value for name, value in source.items() if inherited(name)}, **configured}
