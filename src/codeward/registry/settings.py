"""Where the registry keeps things and how long it lets tools run, per server or session.

The settings travel in ``ToolContext.extras["registry_settings"]`` (see :func:`registry_settings_of`);
when absent they are read from the environment at call time (``CODEWARD_USER_AI_DIR``,
``CODEWARD_VENV_DIR``, ``CODEWARD_REGISTRY_HUB``), so a server started by a client picks them up without a config file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXTRAS_KEY = "registry_settings"
USER_DIR_ENV = "CODEWARD_USER_AI_DIR"
VENV_DIR_ENV = "CODEWARD_VENV_DIR"
HUB_DIR_ENV = "CODEWARD_REGISTRY_HUB"
PROJECT_DIR_NAME = ".ai"


@dataclass(frozen=True)
class RegistrySettings:
    """Locations and limits of the registry."""

    user_dir: Path
    """The user space (``~/.ai`` unless ``CODEWARD_USER_AI_DIR`` says otherwise)."""
    venv_dir: Path | None = None
    """Where per-tool virtual environments live; ``None``: ``.codeward/venvs`` of the project
    for project tools, the user cache directory for user tools."""
    hub_dir: Path | None = None
    """A shared registry folder items are published to and pulled from (``CODEWARD_REGISTRY_HUB``)."""
    keep_outputs: int = 10
    """Saved outputs kept per tool; older ones are deleted."""
    default_timeout: float = 60.0
    max_timeout: float = 600.0
    install_timeout: float = 600.0
    """Seconds for creating a tool's virtual environment (pip install included)."""
    result_preview_chars: int = 20_000
    """Results longer than this (as JSON) are returned cut, with the path of the saved whole."""
    max_stderr_chars: int = 4_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RegistrySettings:
        env = os.environ if environ is None else environ
        user = env.get(USER_DIR_ENV) or str(Path.home() / PROJECT_DIR_NAME)
        venvs = env.get(VENV_DIR_ENV)
        hub = env.get(HUB_DIR_ENV)
        return cls(user_dir=Path(user).expanduser(), venv_dir=Path(venvs).expanduser() if venvs else None,
                   hub_dir=Path(hub).expanduser() if hub else None)

    def user_cache_dir(self, environ: Mapping[str, str] | None = None) -> Path:
        """The cache for user-space tools' environments (``$XDG_CACHE_HOME/codeward``)."""
        env = os.environ if environ is None else environ
        base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base).expanduser() / "codeward"


def registry_settings_of(extras: Mapping[str, Any]) -> RegistrySettings:
    """The settings a context carries, or those of the environment."""
    value = extras.get(EXTRAS_KEY)
    return value if isinstance(value, RegistrySettings) else RegistrySettings.from_env()
