"""``[sandbox]``: what contains every program codeward starts — the operator's choice, never a tool's.

One table for every executor (``run_shell``, ``run_tests``, code execution, the review's
analyzers, registry tools): which backend may run them, and how much a run may write.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import field_validator

from codeward.config.base import Int, Table

SandboxBackend = Literal["auto", "bwrap", "docker", "process"]
MIN_DISK_MB = 16
MAX_DISK_MB = 1024 * 1024


class SandboxSettings(Table):
    """The backend every executor runs in, and the cap on what one run writes."""

    table_name: ClassVar[str] = "sandbox"

    backend: SandboxBackend = "auto"
    """``auto``: an isolating backend only — bubblewrap, or for code execution a Docker engine —
    and every executor refuses (naming what to install) when none works here. ``bwrap`` or
    ``docker``: that one only. ``process``: plain host processes, NOT isolated (host files and
    network visible, secrets not hidden, writes not checked); runs only when set here, and every
    result then says so."""
    disk_mb: Int = 1024
    """MiB one run may write: the overlay's upper layer (a script's changes to the project before
    they are checked), ``/tmp`` and ``/work``, together, on a size-limited tmpfs in the run's own
    mount namespace. A run that fills it is stopped and nothing it wrote is applied. The files live
    in memory (they count toward the run's memory limit)."""

    @field_validator("disk_mb")
    @classmethod
    def _disk(cls, value: int) -> int:
        if not MIN_DISK_MB <= value <= MAX_DISK_MB:
            raise ValueError(f"must be between {MIN_DISK_MB} and {MAX_DISK_MB} MiB")
        return value
