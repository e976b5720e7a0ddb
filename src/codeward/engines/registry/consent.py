"""A person's yes, for what only a person may decide: signing an item, a tool's first install.

A model may *ask* for these, never do them silently. The answer comes from whoever stands
behind the call: the person who typed it on the command line or approved it at a prompt
(``ctx.call.approved``), else the MCP client's user through an elicitation form. A
call with nobody to ask is refused, naming the command a person can run instead.
"""

from __future__ import annotations

from typing import Any

from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

CONSENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve?", "default": False}},
    "required": ["approve"],
}


def ask_person(ctx: ToolContext, question: str, *, what: str, command: str) -> Result[None]:
    """``ok`` when a person approved ``what`` (already, or now when asked ``question``)."""
    if ctx.call.approved:
        return Result.success(None)
    instead = f"Ask the user to run `{command}` in a terminal, where they see what they approve."
    if ctx.peer is None:
        return Result.fail(ErrorKind.PERMISSION, f"{what} needs a person's approval, and nobody can be asked on this "
                           "connection", instead, data=None)
    try:
        answer = ctx.peer.elicit(question, CONSENT_SCHEMA)
    except Exception as exc:  # no elicitation support, a closed session: nobody said yes
        return Result.fail(ErrorKind.PERMISSION, f"{what} needs a person's approval, and the client could not ask "
                           f"one ({type(exc).__name__}: {exc})", instead, data=None)
    content = answer.get("content") or {}
    if answer.get("action") == "accept" and content.get("approve") is True:
        return Result.success(None)
    said = "no" if answer.get("action") == "accept" else str(answer.get("action", "no"))
    return Result.fail(ErrorKind.PERMISSION, f"{what} was not approved (the user's answer: {said}), so nothing was "
                       "done", instead, data=None)
