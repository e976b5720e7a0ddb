"""Tool calls: as the model streams them, accumulated, and recognised in plain text.

``tool_calls`` deltas arrive indexed: the first delta of a call carries its id and name, later
ones carry fragments of the JSON arguments, and ``finish_reason: "tool_calls"`` closes them.
Some llama.cpp builds omit ``index`` for single-call streams: such deltas go to slot 0 and the
accumulator says so once. Small local models often write a call as bare JSON text instead;
:func:`text_tool_call` recognises a reply that is exactly such a call to an offered tool.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """The raw JSON text the model produced (it may be invalid; the loop checks)."""

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class _Slot:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class ToolCallAccumulator:
    """Collects ``delta.tool_calls`` fragments by index until the stream says they are complete."""

    slots: dict[int, _Slot] = field(default_factory=dict)
    missing_index_seen: bool = False

    def add(self, deltas: list[Any]) -> str | None:
        """Fold one chunk's tool-call deltas in; returns a one-time notice when an index was absent."""
        notice = None
        for delta in deltas:
            index = _get(delta, "index")
            if index is None:
                if not self.missing_index_seen:
                    notice = "the model server sent a tool-call delta without an index; treating it as index 0"
                    self.missing_index_seen = True
                index = 0
            slot = self.slots.setdefault(int(index), _Slot())
            call_id = _get(delta, "id")
            if call_id:
                slot.id = call_id
            function = _get(delta, "function")
            if function is not None:
                name = _get(function, "name")
                if name:
                    slot.name = name
                fragment = _get(function, "arguments")
                if fragment:
                    slot.arguments.append(fragment)
        return notice

    def complete(self) -> list[ToolCall]:
        calls = []
        for index in sorted(self.slots):
            slot = self.slots[index]
            call_id = slot.id or f"call_{uuid.uuid4().hex[:12]}"
            calls.append(ToolCall(call_id, slot.name, "".join(slot.arguments) or "{}"))
        return calls

    def __bool__(self) -> bool:
        return bool(self.slots)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def text_tool_call(text: str, offered: set[str]) -> ToolCall | None:
    """A reply that is exactly one JSON tool call to an offered tool, as a :class:`ToolCall`.

    Accepts ``{"name": ..., "arguments": {...}}`` (also ``parameters``), optionally inside a
    ```json fence or ``<tool_call>`` tags. Anything else — prose around it, an unknown tool —
    is not a call.
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if body.startswith("<tool_call>") and body.endswith("</tool_call>"):
        body = body[len("<tool_call>") : -len("</tool_call>")].strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or set(data) - {"name", "arguments", "parameters"}:
        return None
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters", {}))
    if not isinstance(name, str) or name not in offered or not isinstance(arguments, dict):
        return None
    return ToolCall(f"call_{uuid.uuid4().hex[:12]}", name, json.dumps(arguments))
