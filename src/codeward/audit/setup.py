"""The audit of one HTTP server, from ``[audit]``: its users, its log file, its shared stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from codeward.approval.policy import ConfirmCallback
from codeward.audit.log import AuditLog, AuditSink
from codeward.audit.middleware import Audit, AuditedApprovals, audit_log_path
from codeward.audit.users import Directory
from codeward.config.root import Config


class SharedAudit(AuditSink, Protocol):
    """Where every replica's records meet (the serving runtime's shared state), and which replica this is."""

    @property
    def replica(self) -> str: ...


@dataclass(frozen=True)
class HttpAudit:
    """What an HTTP server adds to its stack for the audit (:func:`codeward.serving.runtime.serve_mcp`)."""

    log: AuditLog
    users: Directory
    """Who may call, and in which roles (``[audit] users_file``; the server's own token joins it)."""

    def middleware(self) -> Audit:
        return Audit(self.log)

    def approvals(self, confirm: ConfirmCallback) -> ConfirmCallback:
        return AuditedApprovals(confirm, self.log)


def http_audit(config: Config, state: SharedAudit, host: str, port: int) -> HttpAudit:
    """Users from ``[audit] users_file`` (a bad file is refused with its problem), records to the
    replica's JSONL file and to the shared state (every replica's ``GET /audit`` reads it)."""
    users = Directory(config.audit.users_file)
    log = AuditLog(audit_log_path(config.audit.log_dir, host, port), state.replica, sink=state)
    return HttpAudit(log, users)
