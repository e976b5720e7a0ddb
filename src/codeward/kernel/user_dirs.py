"""codeward's folders in the user's home, outside every project (XDG base directories).

``data_home()`` holds what belongs to the person, not to a project: agent sessions, the
control plane's and HTTP servers' tokens, the registry's signing key and trusted keys.
``CODEWARD_HOME`` moves it; otherwise ``$XDG_DATA_HOME/codeward`` (``~/.local/share/codeward``).
``cache_home()`` holds what can be rebuilt (user tools' packages): ``$XDG_CACHE_HOME/codeward``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

HOME_ENV = "CODEWARD_HOME"


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    """codeward's per-user data folder."""
    env = os.environ if environ is None else environ
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "codeward"


def cache_home(environ: Mapping[str, str] | None = None) -> Path:
    """codeward's per-user cache folder."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "codeward"
