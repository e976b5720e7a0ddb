"""A person's yes for every write of a file the host runs later, whatever the policy auto-approves.

The workspace refuses a write to a host-run path (:mod:`codeward.kernel.host_run`) with a verdict of its
own (``source = "needs-person"``) until the call carries a person's consent. This middleware,
innermost in every stack's chain (plain ``serve`` included), is where that consent comes from:

* a call refused that way — before it wrote anything: every writer checks all its paths first —
  is shown to a person with its diff (:func:`codeward.approval.previews.preview_call`, run on copies) and
  the host-run paths it writes, and run again with their consent on their yes; ``auto_approve``
  does not answer this question, and nobody to ask is a no;
* a call that learns what it writes only while it runs (a shell run's write-back) gets
  ``ctx.call.ask_person`` to ask the same person mid-way, with the diff of what it holds back.

Who is asked is the stack's asker: the client by elicitation on ``serve``, the terminal or the
console in the agent and on ``codeward call``, the console raced with the client under
``--approvals console``. A call a person approved at the outer approval layer after seeing its
whole diff, or typed on the command line, already carries their consent
(:func:`codeward.approval.policy.by_person`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import Middleware, ToolCall, tool_info
from codeward.kernel.context import HostRunQuestion, ToolContext
from codeward.kernel.host_run import EVERY_WRITE, NEEDS_PERSON
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorInfo, ErrorKind
from codeward.kernel.surface import ToolInfo, ToolSurface

if TYPE_CHECKING:
    from codeward.approval.policy import ApprovalRequest, ConfirmCallback

logger = logging.getLogger("codeward.approval")

ASKED = ("writes files the host runs later (git hooks, editor and client configuration...), which only a "
         "person can approve")
REFUSED_HINT = ("A person must approve writing files the host runs later, seeing the diff, whatever auto_approve "
                "says: ask the user to approve it when prompted (an MCP client that supports elicitation, codeward "
                "chat, the control console) or to make the change themselves.")


class HostRunApproval(Middleware):
    """Asks ``confirm`` about native calls that would write host-run paths (see the module docstring)."""

    def __init__(self, confirm: ConfirmCallback | None, catalog: Catalog | None = None) -> None:
        self.confirm = confirm
        """Who is asked; None: the MCP client's user, by elicitation (nobody, for a client that cannot)."""
        self.catalog = catalog
        """The native tools, for the diff a question shows."""

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        ctx = call.ctx.child(call=_with_asker(call, self, inner))
        outcome = await inner.call(call.name, call.arguments, ctx)
        if not outcome.is_error or ctx.workspace.host_run_consent.everything:
            return outcome
        needs = [error for error in outcome.errors if error.source == NEEDS_PERSON]
        info = tool_info(inner, call.name) if needs else None
        if info is None or info.origin is None or not info.origin.native:
            return outcome
        request = await self._request(info, call.arguments, ctx, needs)
        asked = time.perf_counter()
        approved = await self.ask(request)
        waited = time.perf_counter() - asked
        if not approved:
            denied = _denied(call.name, needs)
            denied.waited = waited
            return denied
        consented = ctx.child(workspace=ctx.workspace.with_host_run_consent(EVERY_WRITE))
        outcome = await inner.call(call.name, call.arguments, consented)
        outcome.waited += waited
        return outcome

    async def ask(self, request: ApprovalRequest) -> bool:
        confirm = self.confirm
        if confirm is None:  # the approval prompts' code comes with the first question
            from codeward.approval.askers import confirm_with_client

            confirm = confirm_with_client
        try:
            return bool(await confirm(request))
        except Exception as exc:  # a broken prompt denies, never approves
            logger.warning("host-run approval prompt for %s failed (%s); denying", request.name, exc)
            return False

    async def _request(self, info: ToolInfo, arguments: Mapping[str, Any] | None, ctx: ToolContext,
                       needs: list[ErrorInfo]) -> ApprovalRequest:
        import anyio.to_thread

        from codeward.approval.policy import ApprovalRequest
        from codeward.approval.previews import Preview, preview_call

        assert info.origin is not None
        found = await anyio.to_thread.run_sync(preview_call, self.catalog, info.origin.tool, dict(arguments or {}),
                                               ctx)
        listed = "\n".join(f"- {error.message}" for error in needs)
        diff = found.text if found is not None and found.kind == "diff" else "(no diff could be made: the call's " \
            "arguments are all there is)"
        return ApprovalRequest(info.name, info.origin.server, info.origin.tool, dict(arguments or {}),
                               f"{info.origin.tool} {ASKED}:\n{listed}", dict(info.annotations or {}), context=ctx,
                               preview=Preview("diff", f"{listed}\n\n{diff}"))


def _with_asker(call: ToolCall, middleware: HostRunApproval, inner: ToolSurface) -> Any:
    """The call's facts with ``ask_person`` set: a question from the tool's thread, answered on the loop."""
    from dataclasses import replace

    ctx = call.ctx

    def ask_person(question: HostRunQuestion) -> bool:
        import anyio.from_thread

        from codeward.approval.policy import ApprovalRequest
        from codeward.approval.previews import Preview

        info = tool_info(inner, call.name)
        origin = info.origin if info is not None else None
        if info is None or origin is None or not origin.native:
            return False
        peer = ctx.peer if getattr(ctx.peer, "asks_during_call", True) else None  # a retry would run it twice
        request = ApprovalRequest(info.name, origin.server, origin.tool, dict(call.arguments or {}),
                                  f"{origin.tool} {ASKED}:\n{question.summary}", dict(info.annotations or {}),
                                  context=ctx.child(peer=peer), preview=Preview("diff", question.diff))
        try:
            return bool(anyio.from_thread.run(middleware.ask, request))
        except RuntimeError:  # not on a worker thread of the server's loop: nobody to ask from here
            return False

    return replace(ctx.call, ask_person=ask_person)


def _denied(name: str, needs: list[ErrorInfo]) -> ToolOutcome:
    paths = "; ".join(error.message for error in needs)
    error = ErrorInfo(ErrorKind.PERMISSION, f"the call to {name} was not approved, so nothing was written: {paths}. "
                      "Nobody could be asked, or the person said no", REFUSED_HINT, source="approval-policy")
    return ToolOutcome(name, error.render(), True, [error], seconds=0.0)
