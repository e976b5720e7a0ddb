"""``[registry]``: where the registry keeps tools, directives and knowledge, and how long they run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from codeward.config.base import ConfigPath, Field, Int, Seconds, Str, Strings, Table, code_only

PROJECT_DIR_NAME = ".ai"


class RegistrySettings(Table):
    """Locations and limits of the registry."""

    table_name: ClassVar[str] = "registry"

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
    allow_hosts: Strings = ()
    """Hosts a Python tool may reach when it also declares them (``__network__``); ``"*"``: any host
    a tool declares. Loopback, private and reserved addresses stay unreachable whatever is allowed."""
    memory_mb: Int = 1024
    """Memory of one tool run, all its processes together."""
    max_processes: Int = 256
    """Processes and threads of one tool run."""
    keys_dir: ConfigPath | None = code_only(None, "is codeward's data folder (signing/ under $XDG_DATA_HOME/codeward), "
                                                 "outside every project; it is not configurable")
    """The signing key and the trusted keys; unset: ``signing/`` in codeward's data folder."""
    python: Str = code_only("/usr/bin/python3", "is the system's interpreter, the one the sandbox shows; it is not "
                                                "configurable")
    """The interpreter Python tools run with in the sandbox."""

    def user_cache_dir(self, environ: Mapping[str, str] | None = None) -> Path:
        """The cache for user-space tools' environments (``$XDG_CACHE_HOME/codeward``)."""
        env = os.environ if environ is None else environ
        base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base).expanduser() / "codeward"
