"""Ways to ask a person to approve one call (the ``confirm`` callback of the chain's approval).

* :func:`confirm_with_client` — ask the person behind the MCP client, through MCP
  elicitation (a yes/no form); a client without elicitation support means "no";
* :func:`ask_mcp_client` — the same form, abstaining (:class:`Abstain`) instead of saying "no"
  when it cannot ask: for a race with other askers (the console, another replica), where "could
  not ask" must leave the decision to them.
* :func:`terminal_confirm` — ask on the terminal (``codeward call``); no terminal means "no".
* :func:`yes_confirm` — ``codeward call --yes``: approved in advance, each call shown on stderr.

Whatever goes wrong while asking, the answer is "no": a call never runs because a prompt broke.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio
import anyio.to_thread

from codeward.approval.policy import ApprovalRequest

logger = logging.getLogger("codeward.gateway")

APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run this tool call?", "default": False},
    },
    "required": ["approve"],
}


class Abstain(Exception):
    """Raised by an asker that cannot ask (no client, no elicitation support): the other askers decide."""


async def ask_mcp_client(request: ApprovalRequest) -> bool:
    """Ask the MCP client's user (elicitation): accepted with ``approve`` ticked → True, declined or
    cancelled → False; :class:`Abstain` when the client cannot be asked."""
    peer = getattr(request.context, "peer", None)
    if peer is None:
        raise Abstain("no MCP client to ask")
    message = (f"codeward gateway: allow {request.summary()} on server {request.alias!r}?"
               + (f"\n\n{request.description.splitlines()[0]}" if request.description else "") + request.details())
    try:
        answer = await anyio.to_thread.run_sync(peer.elicit, message, APPROVE_SCHEMA)
    except Exception as exc:  # no elicitation support, a closed session
        raise Abstain(f"the MCP client cannot be asked: {type(exc).__name__}: {exc}") from exc
    content = answer.get("content") or {}
    return answer.get("action") == "accept" and content.get("approve") is True


async def confirm_with_client(request: ApprovalRequest) -> bool:
    """Ask the MCP client's user (elicitation). Declined, cancelled or unsupported → False."""
    try:
        return await ask_mcp_client(request)
    except Abstain as cannot:  # the answer is no
        logger.info("gateway: could not ask the client to approve %s (%s); denying", request.name, cannot)
        return False


async def terminal_confirm(request: ApprovalRequest) -> bool:
    """Ask ``call 'alias__tool({...})'? [y/N]`` on the terminal; no terminal → False."""
    if not sys.stdin.isatty():
        return False

    def ask() -> bool:
        print(f"{request.details()}codeward: call {request.summary()}? [y/N] ", end="", file=sys.stderr,
              flush=True)
        try:
            return sys.stdin.readline().strip().lower().startswith("y")
        except (OSError, ValueError):
            return False

    return await anyio.to_thread.run_sync(ask)


async def yes_confirm(request: ApprovalRequest) -> bool:
    """``codeward call --yes``: the person answered yes before the question; each call it approves
    is still shown on stderr. A tool whose definition changed since it was pinned is refused: a
    yes given in advance cannot have judged the new definition."""
    if request.changed:
        print(f"codeward: --yes does not approve {request.name}: its definition changed since it was pinned",
              file=sys.stderr, flush=True)
        return False
    print(f"{request.details()}codeward: approved by --yes: {request.summary()}", file=sys.stderr, flush=True)
    return True
