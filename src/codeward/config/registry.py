"""``[registry]``: where the registry keeps tools, directives and knowledge, and how long they run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from codeward.config.base import ConfigPath, Field, Int, Seconds, Table

PROJECT_DIR_NAME = ".ai"


class RegistrySettings(Table):
    """Locations and limits of the registry."""

    user_dir: ConfigPath = Field(default_factory=lambda: Path.home() / PROJECT_DIR_NAME,
                                 json_schema_extra={"default_text": "~/.ai"})
    """The user space."""
    venv_dir: ConfigPath | None = None
    """Where per-tool virtual environments live; unset: ``.codeward/venvs`` of the project for
    project tools, the user cache directory for user tools."""
    hub_dir: ConfigPath | None = None
    """A shared registry folder items are published to and pulled from (e.g. a git checkout the team shares)."""
    keep_outputs: Int = 10
    """Saved outputs kept per tool; older ones are deleted."""
    default_timeout: Seconds = 60.0
    """Seconds a tool runs when its call names no timeout."""
    max_timeout: Seconds = 600.0
    """The longest timeout a call may ask for."""
    install_timeout: Seconds = 600.0
    """Seconds for creating a tool's virtual environment (pip install included)."""
    result_preview_chars: Int = 20_000
    """Results longer than this (as JSON) are returned cut, with the path of the saved whole."""
    max_stderr_chars: Int = 4_000
    """Characters of a failed tool's stderr shown."""

    def user_cache_dir(self, environ: Mapping[str, str] | None = None) -> Path:
        """The cache for user-space tools' environments (``$XDG_CACHE_HOME/codeward``)."""
        env = os.environ if environ is None else environ
        base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base).expanduser() / "codeward"
