"""Approvals across replicas: a call waiting on one replica can be answered on any.

:class:`SharedApprovals` wraps the replica's own askers (the MCP client's elicitation, the
console, a terminal): the pending approval is published in the shared state, and whichever comes
first decides — a local answer, or one given on any replica (``POST /approvals/<id>`` on its HTTP
port, delivered by Redis pub/sub). If the shared state is unreachable the local askers decide alone.

What is published is what an approver may see: the arguments with their secrets redacted
(:class:`~codeward.kernel.redaction.Redactor`) and their SHA-256 (the audit's, taken from the raw
arguments); the raw arguments stay in the memory of the replica that runs the call. Nobody answers
a call of their own (:func:`answer_pending`). A replica that stops (drains) withdraws the approvals it
holds, so none stays listed, or answerable, for a call that will never run; one that dies (kill -9, a
lost host) stops renewing its heartbeat, and the first replica to list the approvals after a lease
(``[state] lease``) reaps its approvals. Answering a withdrawn or reaped approval says it is gone
(``410``) and nothing ran.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import TYPE_CHECKING

from codeward.approval.askers import Abstain, ask_mcp_client, confirm_with_client
from codeward.approval.policy import ApprovalRequest, ConfirmCallback
from codeward.audit.log import arguments_hash
from codeward.kernel.redaction import Redactor
from codeward.kernel.state_unavailable import StateUnavailable
from codeward.serving.shared_state.backend import StateBackend

if TYPE_CHECKING:
    from codeward.audit.log import AuditLog
    from codeward.serving.drain import Drain

log = logging.getLogger(__name__)


APPROVAL_TIMEOUT_S = 600.0
"""Without a local asker (no console, a client without elicitation), an approval nobody answers on
any replica within this long is denied."""


WITHDRAWN = ("the server holding this call stopped (drained) before anyone answered; nothing ran. "
             "Send the call again: another replica asks for it")


REAPED = ("this server lost its hold on the approval (it did not renew its heartbeat in the shared state "
          "for longer than [state] lease) and it was withdrawn; nothing ran. Send the call again")


class Gone(LookupError):
    """An answer to an approval whose replica stopped or died before anyone answered: its call never ran."""

    def __init__(self, approval_id: str, tombstone: dict[str, object]) -> None:
        how = ("stopped (drained) and handed it back" if tombstone.get("gone") == "stopped"
               else "died (no heartbeat in the shared state for longer than [state] lease)")
        super().__init__(f"approval {approval_id!r} is gone: replica {tombstone.get('replica', '?')} holding "
                         f"the call to {tombstone.get('tool', '?')!r} {how}; the call did not run and this answer "
                         "changed nothing. The client sends the call again and it is asked for anew")


class OwnCall(PermissionError):
    """An answer to an approval its own call waits on: an agent does not approve itself."""

    def __init__(self, user: str, approval_id: str) -> None:
        super().__init__(f"approval {approval_id!r} waits on a call {user!r} made; nobody answers their own "
                         "call — another user with the approver role answers it")


async def answer_pending(state: StateBackend, approval_id: str, approved: bool, by: str,
                         audit: AuditLog | None = None) -> bool | None:
    """Answer one pending approval of any replica as ``by`` (a person: a user's token on ``POST
    /approvals/<id>``, or a console): True if this answer decided it, False if it was already
    answered, None if no approval has that id; :class:`OwnCall` if ``by`` made the call, :class:`Gone` if
    its replica stopped or died first. A deciding answer is audited with who gave it."""
    pending = next((a for a in await state.pending_approvals() if a.get("id") == approval_id), None)
    if pending is not None and pending.get("user") is not None and pending.get("user") == by:
        raise OwnCall(by, approval_id)
    decided = await state.answer_approval(approval_id, approved, by)
    if decided is None and (tombstone := await state.approval_gone(approval_id)) is not None:
        raise Gone(approval_id, tombstone)
    if decided and audit is not None:
        await audit.record("answer", user=by, tool=str((pending or {}).get("tool", "?")),
                           arguments=(pending or {}).get("arguments"), outcome="approved" if approved else "denied",
                           approval=approval_id, held_by=(pending or {}).get("replica"),
                           caller=(pending or {}).get("user"),
                           **({"arguments_sha256": pending["arguments_sha256"]}
                              if pending and "arguments_sha256" in pending else {}))
    return decided


class SharedApprovals:
    """A confirm callback: local askers race an answer given on any replica."""

    def __init__(self, state: StateBackend, local: ConfirmCallback, timeout: float = APPROVAL_TIMEOUT_S,
                 drain: Drain | None = None) -> None:
        self.state = state
        # The client's prompt says "no" when it cannot ask; here it must abstain, leaving the other replicas.
        self.local = ask_mcp_client if local is confirm_with_client else local
        self.timeout = timeout
        self.redactor = Redactor()
        self._held: dict[str, asyncio.Task[bool]] = {}
        self._stopping = False
        if drain is not None:
            drain.on_drain(self.hand_back)

    async def hand_back(self) -> None:
        """The server is stopping: withdraw every approval held here (answering one is then ``404``) and
        answer each waiting call "not run, send it again"; ask nothing more."""
        self._stopping = True
        for approval_id, waiting in list(self._held.items()):
            try:
                await self.state.withdraw_approval(approval_id)
            except StateUnavailable as error:
                log.warning("%s", error)
            waiting.cancel()

    async def __call__(self, request: ApprovalRequest) -> bool:
        if self._stopping:
            request.withdrawn.append(WITHDRAWN)
            return False
        approval_id = uuid.uuid4().hex
        waiting = asyncio.ensure_future(self._decide(approval_id, request))
        self._held[approval_id] = waiting
        try:
            return await asyncio.shield(waiting)
        except asyncio.CancelledError:
            if not waiting.cancelled():  # the call itself was cancelled
                waiting.cancel()
                raise
            request.withdrawn.append(WITHDRAWN)
            return False
        finally:
            self._held.pop(approval_id, None)

    async def _decide(self, approval_id: str, request: ApprovalRequest) -> bool:
        call = getattr(request.context, "call", None)
        arguments = json.loads(json.dumps(dict(request.arguments), default=str))
        data = {
            "id": approval_id, "tool": request.name, "server": request.alias,
            "arguments": self.redactor.value(arguments), "arguments_sha256": arguments_hash(request.arguments),
            "description": (request.description.splitlines() or [""])[0][:300],
            "replica": self.state.replica, "user": getattr(call, "user", None), "opened": time.time(),
        }
        try:
            await self.state.open_approval(approval_id, data)
        except StateUnavailable as error:
            log.warning("%s; only this replica's askers can answer", error)
            return await self.local(request)
        local = asyncio.ensure_future(self.local(request))
        remote = asyncio.ensure_future(self.state.wait_approval(approval_id))
        try:
            done, _ = await asyncio.wait({local, remote}, return_when=asyncio.FIRST_COMPLETED)
            if remote in done and remote.exception() is None:
                local.cancel()
                if remote.result().get("gone"):
                    request.withdrawn.append(REAPED)
                    return False
                request.decided_by.append(str(remote.result().get("by", "another replica")))
                return bool(remote.result()["approved"])
            if remote in done:
                log.warning("%s; only this replica's askers can answer", remote.exception())
                approved = bool(await local)
            elif local.exception() is not None and isinstance(local.exception(), Abstain):
                done, _ = await asyncio.wait({remote}, timeout=self.timeout)
                if remote in done and remote.exception() is None:
                    if remote.result().get("gone"):
                        request.withdrawn.append(REAPED)
                        return False
                    request.decided_by.append(str(remote.result().get("by", "another replica")))
                    return bool(remote.result()["approved"])
                approved = False  # nobody answered anywhere: denied
            else:
                approved = bool(local.result())
        except asyncio.CancelledError:
            local.cancel()
            raise
        finally:
            remote.cancel()
        try:
            await self.state.answer_approval(approval_id, approved, f"replica {self.state.replica}")
        except StateUnavailable as error:
            log.warning("%s", error)
        return approved
