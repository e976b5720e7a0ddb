"""``codeward ask -q``: the answer and errors only, no tool frames or notices on stderr."""

from __future__ import annotations

from codeward.apps.agent.render import PlainView
from codeward.engines.llm.calls import ToolCall


class QuietView(PlainView):
    """A :class:`PlainView` that keeps errors but drops the frames a script does not read."""

    def notice(self, message: str) -> None:
        return None

    def tool_begin(self, call: ToolCall) -> None:
        self.answer = []  # text before a call is preamble, not the answer

    def tool_end(self, call: ToolCall, content: str, is_error: bool) -> None:
        return None
