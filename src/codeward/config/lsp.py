"""``[lsp]``: language servers behind the navigation tools (``find_references``, ``rename_symbol``...)."""

from __future__ import annotations

from typing import Literal

from codeward.config.base import Bool, ConfigPath, Field, Int, Seconds, Table

ServerName = Literal["python", "typescript", "go", "c"]
"""The servers codeward knows, by the language family they serve (``c`` is C and C++)."""


class LspSettings(Table):
    """How language servers are found, started and kept."""

    enabled: Bool = True
    """Use the language servers that are installed (in the sandbox); ``false`` answers every navigation
    question from the symbol index (name-based) and jedi (Python)."""
    disabled: tuple[ServerName, ...] = ()
    """Servers never to start, by language family: ``python``, ``typescript`` (also JavaScript), ``go``,
    ``c`` (also C++)."""
    commands: dict[ServerName, ConfigPath] = Field(default_factory=dict, json_schema_extra={"type_text": "table"})
    """The server executable of a language family when it is not on ``PATH``, e.g.
    ``{ go = "~/go/bin/gopls" }``; its folder is shown read-only inside the sandbox."""
    startup_wait_s: float = Field(default=0.0, ge=0, le=600)
    """How long a call waits for a server that is still starting before it answers from the index
    (0: at once, marked name-based, with a hint to call again)."""
    request_timeout_s: Seconds = 60.0
    """Seconds one request to a ready server may take before the call answers from the index."""
    idle_s: Seconds = 600.0
    """A server unused this long is stopped (the next call starts it again)."""
    memory_mb: Int = Field(default=2048, ge=256)
    """Memory limit of each server's sandbox (its cgroup where cgroups work)."""
    max_servers: Int = Field(default=6, ge=1)
    """Servers alive at once per codeward process (the least recently used idle one is stopped for a new one)."""
