"""Tool approvals through the ask mechanism: the terminal and the console race, first answer wins.

:class:`ApprovalDesk` is a confirm callback (what the gateway and the agent's native-tool
policy call when a call needs a yes). It opens an ask in the control state — the console shows
it with Approve / Deny buttons, a script sees ``ask_received`` — and, when there is a terminal,
asks there too. Whichever answers first decides; the other is told: the terminal prompt is
cancelled with a note ("approved in the console"), the console's ask is withdrawn with
``by: "terminal"``. Without a terminal (``codeward ask``), an unanswered approval is denied
after the timeout.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from codeward.approval.askers import Abstain
from codeward.approval.asks import AskBook, AskTimeout
from codeward.approval.policy import ApprovalRequest, ConfirmCallback

CANCEL_GRACE_S = 1.0
APPROVING_WORDS = frozenset({"approve", "approved", "allow", "allowed", "yes", "y", "ok", "true", "accept"})


def is_approval(response: Any) -> bool:
    """Whether an answer means yes: ``true``, ``"approve"``/``"yes"``..., or ``{"approved": true}``."""
    if isinstance(response, bool):
        return response
    if isinstance(response, str):
        return response.strip().lower() in APPROVING_WORDS
    if isinstance(response, Mapping):
        if "approved" in response:
            return response["approved"] is True
        for key in ("decision", "response", "answer"):
            if key in response:
                return is_approval(response[key])
    return False


def ask_data(request: ApprovalRequest) -> dict[str, Any]:
    """What the console shows for an approval: the call, its arguments, its server, its hints."""
    context = request.context
    call = getattr(context, "call", None)
    return {
        "type": "tool_approval",
        "tool": request.name,
        "server": request.alias,
        "arguments": json.loads(json.dumps(dict(request.arguments), default=str)),
        "description": (request.description.splitlines() or [""])[0][:300],
        "annotations": dict(request.annotations),
        "preview": request.preview.to_dict() if request.preview is not None else None,
        "call_id": getattr(call, "call_id", None),
        "user": getattr(call, "user", None),
    }


class DeskState(Protocol):
    """Where the desk opens its asks and marks the call waiting (the control plane's state)."""

    @property
    def asks(self) -> AskBook: ...

    def call_waiting(self, call_id: str, ask_id: str) -> None: ...

    def call_resumed(self, call_id: str, approved: bool, by: str) -> None: ...


class ApprovalDesk:
    """A confirm callback answering from the terminal or the control API, whichever is first."""

    def __init__(self, state: DeskState, *, terminal: ConfirmCallback | None = None,
                 notify: Callable[[str], None] | None = None, timeout: float | None = None) -> None:
        self.state = state
        self.terminal = terminal
        self.notify = notify or (lambda message: None)
        self.timeout = timeout

    async def __call__(self, request: ApprovalRequest) -> bool:
        data = ask_data(request)
        call_id = data["call_id"]
        pending = self.state.asks.open(data)
        if call_id:
            self.state.call_waiting(call_id, pending.request_id)
        console = asyncio.ensure_future(self.state.asks.wait(pending, self.timeout))
        prompt = asyncio.ensure_future(self.terminal(request)) if self.terminal is not None else None
        try:
            done, _ = await asyncio.wait({console} if prompt is None else {console, prompt},
                                         return_when=asyncio.FIRST_COMPLETED)
            if prompt in done and isinstance(prompt.exception(), Abstain):
                prompt = None  # that asker could not ask: the console decides alone
                done, _ = await asyncio.wait({console})
        except asyncio.CancelledError:
            await _cancel(console, prompt)
            raise
        if console in done:
            await _cancel(prompt)
            try:
                approved = is_approval(console.result())
                by = pending.answered_by if pending.answered_by not in (None, "api") else "console"
            except AskTimeout:
                approved, by = False, "timeout"
                self.notify(f"[codeward] {request.name}: nobody answered within {self.timeout:g} s — denied")
            else:
                self.notify(f"[codeward] {request.name}: {'approved' if approved else 'denied'} in the console")
        else:
            assert prompt is not None
            try:
                approved = bool(prompt.result())
            except Exception:  # a broken prompt denies, never approves
                approved = False
            by = "terminal"
            self.state.asks.withdraw(pending.request_id, response={"approved": approved}, by="terminal")
            await _cancel(console)
        if call_id:
            self.state.call_resumed(call_id, approved, by)
        request.decided_by.append(by)
        return approved


async def _cancel(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel the losing asker and give it a moment to tidy up (a terminal prompt redraws).

    An asker that cannot be interrupted (an MCP elicitation waiting in a worker thread) is
    left to finish on its own; its late answer is ignored.
    """
    pending = [t for t in tasks if t is not None and not t.done()]
    for task in pending:
        task.cancel()
        task.add_done_callback(_consume)
    if pending:
        await asyncio.wait(pending, timeout=CANCEL_GRACE_S)


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
