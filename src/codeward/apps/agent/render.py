"""The terminal view of the agent: streamed Markdown, and a dim indented frame per tool call.

Code talk is full of underscores (``__init__``, ``__version__.py``, ``my_var``) that Markdown
would take for emphasis; outside code spans and fences they are escaped, so identifiers show
as written (emphasis with ``*`` still works).
"""

from __future__ import annotations

import json
import re
import sys
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from codeward.engines.llm.calls import ToolCall

PREVIEW_LINES = 6


class RichView:
    """Renders a loop's events with rich; Markdown re-renders live as deltas arrive."""

    def __init__(self, console: Console | None = None, *, live: bool = True) -> None:
        self.console = console or Console(highlight=False)
        self.live_enabled = live and self.console.is_terminal
        self._buffer: list[str] = []
        self._live: Live | None = None

    def text(self, delta: str) -> None:
        self._buffer.append(delta)
        if self.live_enabled:
            if self._live is None:
                self._live = Live(Markdown(""), console=self.console, refresh_per_second=12, transient=False)
                self._live.start()
            self._live.update(Markdown(literal_identifiers("".join(self._buffer))))
        else:
            self.console.file.write(delta)
            self.console.file.flush()

    def flush(self) -> None:
        """End the current block of streamed text (before a frame, a prompt or the next turn)."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        elif self._buffer and not self.live_enabled:
            self.console.file.write("\n")
        self._buffer = []

    def notice(self, message: str) -> None:
        self.flush()
        self.console.print(Text(f"[codeward] {message}", style="yellow"))

    def error(self, message: str) -> None:
        self.flush()
        self.console.print(Text(f"[codeward] error: {message}", style="bold red"))

    def tool_begin(self, call: ToolCall) -> None:
        self.flush()
        self.console.print(Text(f"  ┌ {call.name}({_short_args(call.arguments)})", style="dim"))

    def tool_end(self, call: ToolCall, content: str, is_error: bool) -> None:
        lines = content.splitlines() or [""]
        shown = lines[:PREVIEW_LINES]
        for line in shown:
            self.console.print(Text(f"  │ {line[:160]}", style="dim"))
        if len(lines) > PREVIEW_LINES:
            self.console.print(Text(f"  │ … {len(lines) - PREVIEW_LINES} more lines", style="dim"))
        status = Text("  └ error", style="red") if is_error else Text("  └ ok", style="dim green")
        self.console.print(status)

    def response_end(self) -> None:
        self.flush()


class PlainView:
    """Answer text on one stream, tool frames and notices on another (for ``codeward ask``)."""

    def __init__(self, out: TextIO | None = None, frames: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.frames = frames or sys.stderr
        self.answer: list[str] = []

    def text(self, delta: str) -> None:
        self.answer.append(delta)

    def notice(self, message: str) -> None:
        print(f"[codeward] {message}", file=self.frames, flush=True)

    def error(self, message: str) -> None:
        print(f"[codeward] error: {message}", file=self.frames, flush=True)

    def tool_begin(self, call: ToolCall) -> None:
        self.answer = []  # text before a call is preamble, not the answer
        print(f"  ┌ {call.name}({_short_args(call.arguments)})", file=self.frames, flush=True)

    def tool_end(self, call: ToolCall, content: str, is_error: bool) -> None:
        first = (content.splitlines() or [""])[0][:160]
        print(f"  │ {first}\n  └ {'error' if is_error else 'ok'}", file=self.frames, flush=True)

    def response_end(self) -> None:
        return None


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)


def literal_identifiers(markdown: str) -> str:
    """``markdown`` with every ``_`` outside code escaped, so no identifier turns into emphasis."""
    out: list[str] = []
    fence: str | None = None
    prose: list[str] = []

    def flush() -> None:
        if prose:
            out.append(_escape_prose("".join(prose)))
            prose.clear()

    for line in markdown.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if fence is None and opening:
            flush()
            fence = opening.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence) \
                    and not line.strip()[len(closing.group(1)):]:
                fence = None
        else:
            prose.append(line)
    flush()
    return "".join(out)


def _escape_prose(text: str) -> str:
    pieces: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(_escape_underscores(text[last:span.start()]))
        pieces.append(span.group(0))
        last = span.end()
    pieces.append(_escape_underscores(text[last:]))
    return "".join(pieces)


def _escape_underscores(text: str) -> str:
    return re.sub(r"(?<!\\)_", r"\\_", text)


def _short_args(arguments: str, width: int = 100) -> str:
    try:
        text = json.dumps(json.loads(arguments), ensure_ascii=False)
    except json.JSONDecodeError:
        text = arguments
    return text if len(text) <= width else text[: width - 1] + "…"
