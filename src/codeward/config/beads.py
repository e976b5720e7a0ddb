"""``[beads]``: which Beads backend the ``bd_*`` tools use."""

from __future__ import annotations

from typing import Literal

from codeward.config.base import Seconds, Str, Table


class BeadsSettings(Table):
    """The issue store behind the ``bd_*`` tools."""

    backend: Literal["auto", "builtin", "bd"] = "auto"
    """``auto``: ``bd`` when ``bd_command`` is found on PATH, else the built-in store."""
    bd_command: Str = "bd"
    """The ``bd`` program (a name on PATH or a path)."""
    timeout: Seconds = 30.0
    """Seconds one ``bd`` command may take."""
