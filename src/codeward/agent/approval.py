"""Approval for codeward's own tools in the agent, by the same rules the gateway applies upstream.

Upstream tools are approved inside the gateway; this wrapper gives native tools the same
treatment: names or globs in ``auto_approve`` run at once, read-only tools run at once unless
the user turned that off, everything else goes through the confirm callback (the terminal
prompt, or — with the control plane — an HTTP approval), with a preview of what it would do:
the unified diff of an edit (the call run on copies of its files), the command of a call
that executes something. A denied call returns a clear tool error and does not run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio.to_thread

from codeward.catalog import ToolOutcome
from codeward.context import ToolContext
from codeward.gateway.policy import ApprovalRequest, ConfirmCallback, matches
from codeward.previews import preview_call
from codeward.result import ErrorInfo, ErrorKind
from codeward.surface import ToolInfo, ToolSurface


class ApprovingSurface:
    """A surface whose calls need approval unless the policy allows them outright."""

    def __init__(self, inner: ToolSurface, confirm: ConfirmCallback, auto_approve: Sequence[str] = (),
                 read_only_auto_approve: bool = True,
                 delegated: Callable[[str, Mapping[str, Any] | None], bool] | None = None) -> None:
        self.inner = inner
        self.confirm = confirm
        self.auto_approve = tuple(auto_approve)
        self.read_only_auto_approve = read_only_auto_approve
        self.delegated = delegated
        """Calls that ``inner`` approves itself (a meta-tool forwarding to an approving surface)."""

    def tool_infos(self) -> Sequence[ToolInfo]:
        return self.inner.tool_infos()

    def has(self, name: str) -> bool:
        return self.inner.has(name)

    def auto_approves(self, info: ToolInfo | None, name: str) -> bool:
        if info is not None and info.ask_always:
            return False
        if matches(name, self.auto_approve):
            return True
        return self.read_only_auto_approve and info is not None and info.read_only

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        info = next((i for i in self.inner.tool_infos() if i.name == name), None)
        waited = 0.0
        delegated = self.delegated is not None and self.delegated(name, arguments)
        if info is not None and not delegated and not self.auto_approves(info, name):
            preview = await anyio.to_thread.run_sync(preview_call, getattr(self.inner, "catalog", None), name,
                                                     dict(arguments or {}), ctx)
            request = ApprovalRequest(name, "codeward", name, dict(arguments or {}), info.description,
                                      dict(info.annotations or {}), context=ctx, preview=preview)
            asked = time.perf_counter()
            try:
                approved = bool(await self.confirm(request))
            except Exception:  # a broken prompt denies, never approves
                approved = False
            waited = time.perf_counter() - asked
            if not approved:
                error = ErrorInfo(ErrorKind.PERMISSION, f"the call to {name} was not approved, so it did not run",
                                  "Ask the user to approve it when prompted" + (
                                      " (it always asks)." if info.ask_always else
                                      f", or to add {name!r} to [mcp] auto_approve in codeward.toml."),
                                  source="agent-policy")
                return ToolOutcome(name, error.render(), True, [error], seconds=0.0, waited=waited)
            ctx = ctx.child(approved=True)
        started = time.perf_counter()
        outcome = await self.inner.call(name, arguments, ctx)
        outcome.seconds = outcome.seconds or time.perf_counter() - started
        outcome.waited += waited
        return outcome
