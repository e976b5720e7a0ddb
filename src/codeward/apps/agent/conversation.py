"""The conversation: turns with roles, tool calls and their answers, rendered for a chat endpoint.

Assistant turns keep their streamed text and ``tool_calls``; tool turns carry the
``tool_call_id`` they answer. A tool turn that answers no pending call is a bug and fails an
assertion at once (strict chat templates would reject it much later, less clearly). With
``use_tool_role=False`` tool results are rendered as ``[tool: alias__name]`` user text instead,
for chat templates that reject the ``tool`` role: prefixed to the next user turn, or as a user
message of their own before the model's next turn, so roles still alternate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from codeward.engines.llm.calls import ToolCall


@dataclass(frozen=True)
class Turn:
    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    """For tool turns: the tool's name (used by the ``[tool: name]`` fallback)."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tool_calls"] = [asdict(c) for c in self.tool_calls]
        return {k: v for k, v in data.items() if v not in (None, [], ())}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        calls = tuple(ToolCall(**c) for c in data.get("tool_calls", []))
        return cls(role=data["role"], content=data.get("content", ""), tool_calls=calls,
                   tool_call_id=data.get("tool_call_id"), name=data.get("name"))


ROLES = ("system", "user", "assistant", "tool")
FILES_UPDATED = "[SYSTEM: FILES UPDATED]"
FILES_UPDATED_END = "[/SYSTEM: FILES UPDATED]"


@dataclass
class Conversation:
    """An ordered list of turns with the invariants chat endpoints rely on."""

    system: str = ""
    turns: list[Turn] = field(default_factory=list)
    use_tool_role: bool = True
    listeners: list[Callable[[Turn], None]] = field(default_factory=list, repr=False, compare=False)
    """Called with each appended turn (the session log records them this way)."""

    def append(self, turn: Turn) -> None:
        assert turn.role in ROLES, f"unknown role {turn.role!r}"
        if turn.role == "tool":
            assert turn.tool_call_id, "a tool turn needs the tool_call_id it answers"
            pending = self.pending_call_ids()
            assert turn.tool_call_id in pending, (
                f"tool turn {turn.tool_call_id!r} answers no pending assistant call (pending: {sorted(pending)})"
            )
        elif turn.role == "assistant":
            assert turn.content or turn.tool_calls, "an assistant turn needs text or tool calls"
        self.turns.append(turn)
        for listener in self.listeners:
            listener(turn)

    def extend(self, turns: Iterable[Turn]) -> None:
        for turn in turns:
            self.append(turn)

    def pending_call_ids(self) -> set[str]:
        """Ids of the last assistant turn's calls that no tool turn has answered yet."""
        pending: set[str] = set()
        for turn in self.turns:
            if turn.role == "assistant":
                pending = {call.id for call in turn.tool_calls}
            elif turn.role == "tool" and turn.tool_call_id:
                pending.discard(turn.tool_call_id)
            else:
                pending = set()
        return pending

    def to_messages(self) -> list[dict[str, Any]]:
        """The ``messages`` array of a chat completion request."""
        messages: list[dict[str, Any]] = []
        if self.system:
            messages.append({"role": "system", "content": self.system})
        carried: list[str] = []
        for turn in self.turns:
            if turn.role == "tool":
                if self.use_tool_role:
                    messages.append({"role": "tool", "tool_call_id": turn.tool_call_id, "content": turn.content})
                else:
                    carried.append(f"[tool: {turn.name or turn.tool_call_id}]\n{turn.content}")
                continue
            if turn.role != "user" and carried:  # results the model must see before its next turn
                messages.append({"role": "user", "content": "\n\n".join(carried)})
                carried = []
            if turn.role == "assistant":
                message: dict[str, Any] = {"role": "assistant", "content": turn.content}
                if turn.tool_calls and self.use_tool_role:
                    message["tool_calls"] = [call.to_openai() for call in turn.tool_calls]
                elif turn.tool_calls:
                    calls = "\n".join(f"[calling {c.name}({c.arguments})]" for c in turn.tool_calls)
                    message["content"] = f"{turn.content}\n{calls}".strip()
                messages.append(message)
                continue
            content = turn.content
            if turn.role == "user" and carried:
                content = "\n\n".join([*carried, content])
                carried = []
            messages.append({"role": turn.role, "content": content})
        if carried:
            messages.append({"role": "user", "content": "\n\n".join(carried)})
        return strip_stale_updates(messages)

    def to_jsonl_lines(self) -> list[str]:
        return [json.dumps(turn.to_dict(), ensure_ascii=False) for turn in self.turns]


def strip_stale_updates(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep only the newest ``[SYSTEM: FILES UPDATED]`` block, so stale diffs don't pile up.

    The history keeps every block; only what is sent to the model is pruned.
    """
    marked = [i for i, m in enumerate(messages) if FILES_UPDATED in (m.get("content") or "")]
    if len(marked) < 2:
        return messages
    out = list(messages)
    for i in marked[:-1]:
        text = out[i]["content"]
        start = text.index(FILES_UPDATED)
        end = text.find(FILES_UPDATED_END, start)
        tail = text[end + len(FILES_UPDATED_END):] if end != -1 else ""
        out[i] = {**out[i], "content": (text[:start].rstrip("\n") + tail).rstrip("\n")}
    return out
