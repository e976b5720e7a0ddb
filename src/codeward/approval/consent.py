"""A person's yes, for what only a person may decide: signing an item, a tool's first install, a commit.

A model may *ask* for these, never do them silently. The answer comes from whoever stands
behind the call: the person who typed it on the command line or approved it at a prompt
(``ctx.call.approved``), else the MCP client's user through an elicitation form. A
call with nobody to ask is refused, naming the command a person can run instead.
"""

from __future__ import annotations

from typing import Any

from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result


def person_refuses(ctx: ToolContext, question: str, *, field: str = "approve", title: str = "Approve?") -> str | None:
    """Ask the client's user ``question`` (an elicitation form with one yes/no ``field``): None when they said
    yes, else why not — they said no, cancelled, or nobody could be asked. Asks even when the call was
    approved already: the caller decides whether that suffices."""
    if ctx.peer is None:
        return "nobody can be asked on this connection"
    schema: dict[str, Any] = {"type": "object", "properties": {field: {"type": "boolean", "title": title,
                                                                        "default": False}},
                              "required": [field]}
    try:
        answer = ctx.peer.elicit(question, schema)
    except Exception as exc:  # no elicitation support, a closed session: nobody said yes
        return f"the client could not ask one ({type(exc).__name__}: {exc})"
    content = answer.get("content") or {}
    if answer.get("action") == "accept" and content.get(field) is True:
        return None
    said = "no" if answer.get("action") == "accept" else str(answer.get("action", "no"))
    return f"the user's answer: {said}"


def ask_person(ctx: ToolContext, question: str, *, what: str, command: str) -> Result[None]:
    """``ok`` when a person approved ``what`` (already, or now when asked ``question``)."""
    if ctx.call.approved:
        return Result.success(None)
    instead = f"Ask the user to run `{command}` in a terminal, where they see what they approve."
    refused = person_refuses(ctx, question)
    if refused is None:
        return Result.success(None)
    if refused.startswith("the user's answer"):
        return Result.fail(ErrorKind.PERMISSION, f"{what} was not approved ({refused}), so nothing was done",
                           instead, data=None)
    return Result.fail(ErrorKind.PERMISSION, f"{what} needs a person's approval, and {refused}", instead, data=None)
