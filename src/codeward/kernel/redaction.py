"""Secrets cut out of text and JSON-like values before they are written or shown anywhere.

One :class:`Redactor` for every place that keeps or passes on what programs and models said: the
session logs (:mod:`codeward.apps.control.session_logs`), what a review's analyzers print
(:mod:`codeward.engines.review.engine`), and a held call's arguments as approvers on other replicas
see them (:mod:`codeward.serving.shared_state.approvals`: the shared state never holds them raw). It
knows the values of environment variables named like ``*KEY*``/``*TOKEN*``/``*SECRET*``, the exact
values it is told about, bearer and basic credentials, API-key shapes, key-bearing URL parameters
and assignments (``API_TOKEN=…``, ``password: …``), and blanks JSON fields named like secrets.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6
"""Shorter environment values (``1``, ``yes``, ``none``) are not secrets and would redact noise."""

SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
SECRET_FIELDS = frozenset({
    "authorization", "proxy_authorization", "api_key", "apikey", "x_api_key", "token", "access_token",
    "refresh_token", "id_token", "secret", "client_secret", "password", "passwd", "cookie", "set_cookie",
})
SECRET_FIELD_SUFFIXES = ("_token", "_secret", "_password", "_api_key", "_apikey")
SECRET_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?i)([?&](?:token|api_key|apikey|access_token|key)=)[^&\s\"']+"),
    # A shell assignment or a config line: API_TOKEN=…, export GH_SECRET="…", password: …
    re.compile(r"(?i)(\b[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Z0-9_]*\s*[=:]\s*[\"']?)[^\s\"';&|]{6,}"),
)

class Redactor:
    """Removes secrets from text and from JSON-like values before they are written anywhere."""

    def __init__(self, secrets: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        found = {value for name, value in env.items() if SECRET_ENV_NAME.search(name)}
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self.add(*found, *secrets)

    def add(self, *secrets: str | None) -> None:
        """Also redact these exact values from now on (a bearer token minted at run time)."""
        with self._lock:
            self._secrets.update(s for s in secrets if s and len(s) >= MIN_SECRET_CHARS)
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def text(self, value: str) -> str:
        pattern = self._pattern
        if pattern is not None:
            value = pattern.sub(REDACTED, value)
        for known in SECRET_PATTERNS:
            value = known.sub(_keep_prefix, value)
        return value

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like value with secret fields blanked and secrets cut out of strings."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in value.items():
                name = str(key)
                if is_secret_field(name) and isinstance(item, str) and item:
                    out[name] = REDACTED
                else:
                    out[name] = self.value(item)
            return out
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return value


def is_secret_field(name: str) -> bool:
    key = name.lower().replace("-", "_")
    return key in SECRET_FIELDS or key.endswith(SECRET_FIELD_SUFFIXES)


def _keep_prefix(match: re.Match[str]) -> str:
    prefix = match.group(1)
    if prefix.lower() in ("bearer", "basic"):
        return f"{prefix} {REDACTED}"
    if prefix.startswith(("?", "&")) or prefix.rstrip("\"' ").endswith(("=", ":")):
        return prefix + REDACTED
    return REDACTED
