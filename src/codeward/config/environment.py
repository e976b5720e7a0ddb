"""Environment variables that override configuration keys — the one place they are read.

Each variable stands for one key and wins over both files (a server started by a client can
be adjusted without touching a file). An empty variable counts as unset. A bad value is an
error naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENV_FALSE = frozenset({"0", "false", "no", "off"})
ENV_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class Override:
    variable: str
    table: str
    key: str
    boolean: bool = False

    def value(self, text: str) -> Any:
        if not self.boolean:
            return text
        lowered = text.strip().lower()
        if lowered in ENV_TRUE:
            return True
        if lowered in ENV_FALSE:
            return False
        return text  # reported by validation: "must be a boolean"


OVERRIDES: tuple[Override, ...] = (
    Override("CODEWARD_SANDBOX", "sandbox", "backend"),
    Override("CODEWARD_MODEL", "coding", "model"),
    Override("CODEWARD_MODEL_BASE_URL", "coding", "model_base_url"),
    Override("CODEWARD_MODEL_API_KEY", "coding", "model_api_key"),
    Override("CODEWARD_USER_AI_DIR", "registry", "user_dir"),
    Override("CODEWARD_VENV_DIR", "registry", "venv_dir"),
    Override("CODEWARD_REGISTRY_HUB", "registry", "hub_dir"),
    Override("CODEWARD_INDEX_CTAGS", "index", "ctags", boolean=True),
    Override("CODEWARD_STATE_URL", "state", "url"),
    Override("CODEWARD_FAST_HTTP", "server", "fast_http", boolean=True),
)
"""Every variable, the key it overrides, and how its text becomes a value."""

BY_KEY: Mapping[tuple[str, ...], str] = {(o.table, o.key): o.variable for o in OVERRIDES}


def environment_tables(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The overrides that are set, as tables ready to validate like a file's."""
    env = os.environ if environ is None else environ
    tables: dict[str, dict[str, Any]] = {}
    for override in OVERRIDES:
        text = env.get(override.variable, "")
        if text:
            tables.setdefault(override.table, {})[override.key] = override.value(text)
    return tables


def variable_of(table: str, key: str) -> str:
    """The environment variable that overrides ``[table] key``."""
    return BY_KEY[(table, key)]
