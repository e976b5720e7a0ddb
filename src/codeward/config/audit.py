"""``[audit]``: who may call an HTTP server (per-user tokens) and where its audit record goes."""

from __future__ import annotations

from codeward.config.base import ConfigPath, Field, Table


class AuditSettings(Table):
    """Users and the audit log of ``serve --http`` and ``gateway --http``."""

    users_file: ConfigPath | None = None
    """A TOML file of ``[users.<name>] token_sha256 = "…"`` entries: each user's own bearer token (only its
    SHA-256 is stored), accepted beside the server's token; calls are audited under the user's name. An
    entry's ``roles`` (``"agent"``, ``"approver"``, ``"auditor"``; default ``["agent"]``) say what the
    token may do. Read again on SIGHUP."""
    log_dir: ConfigPath | None = Field(default=None)
    """Folder of the JSONL audit logs, one file per replica (``audit-<host>-<port>.jsonl``); unset:
    ``$XDG_DATA_HOME/codeward/audit``."""
