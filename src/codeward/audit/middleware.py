"""The chain's audit layer: every call, as it ends, with its user and outcome."""

from __future__ import annotations

import uuid
from pathlib import Path

from codeward.approval.policy import ApprovalRequest, ConfirmCallback
from codeward.audit.log import AuditLog
from codeward.audit.log_lines import in_call
from codeward.kernel.chain import Middleware, ToolCall
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.surface import GET_PROMPT, READ_RESOURCE, ToolSurface
from codeward.kernel.user_dirs import data_home

EVENTS = {READ_RESOURCE: "read", GET_PROMPT: "prompt"}
"""The record's event for a resource read and a prompt get (the URI or the prompt's name hashed with
the arguments); every tool call is a ``call``."""


class Audit(Middleware):
    """Outermost: a ``started`` record before each call, resource read and prompt get runs, and one
    when it ends (event ``call``, ``read`` or ``prompt``) with ``ok``, ``error`` or ``denied`` (a person
    or the policy said no). Both carry the same ``call_id``, the MCP ``request_id`` and ``session``, the
    replica and the user: a ``started`` record without its end is a call that was running when its
    replica died (kill -9, a lost host) — it may have taken effect."""

    def __init__(self, log: AuditLog) -> None:
        self.log = log

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        info = call.ctx.call
        user = getattr(info, "user", None)
        event = EVENTS.get(call.name, "call")
        link = {"call_id": uuid.uuid4().hex, "request_id": getattr(info, "request_id", None),
                "session": getattr(info, "session", None)}
        await self.log.record("started", user=user, tool=call.name, arguments=call.arguments, outcome="running",
                              of=event, **link)
        with in_call(tool=call.name, user=user, **link):
            outcome = await inner.call(call.name, call.arguments, call.ctx)
        denied = any(e.kind is ErrorKind.PERMISSION and "not approved" in e.message for e in outcome.errors)
        verdict = "denied" if denied else "error" if outcome.is_error else "ok"
        await self.log.record(event, user=user, tool=call.name, arguments=call.arguments, outcome=verdict,
                              seconds=round(outcome.seconds, 3), **link)
        return outcome


class AuditedApprovals:
    """A confirm callback recording each decision (``approved`` / ``denied``) in the audit log."""

    def __init__(self, confirm: ConfirmCallback, log: AuditLog) -> None:
        self.confirm = confirm
        self.log = log

    async def __call__(self, request: ApprovalRequest) -> bool:
        approved = await self.confirm(request)
        call = getattr(request.context, "call", None)
        await self.log.record("approval", user=getattr(call, "user", None), tool=request.name,
                              arguments=request.arguments, outcome="approved" if approved else "denied",
                              by=request.decided_by[-1] if request.decided_by else None)
        return approved


def audit_log_path(directory: Path | None, host: str, port: int) -> Path:
    """One file per replica: ``audit-<host>-<port>.jsonl`` in ``[audit] log_dir`` (or the data folder)."""
    return (directory or data_home() / "audit") / f"audit-{host}-{port}.jsonl"
