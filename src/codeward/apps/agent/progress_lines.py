"""What ``codeward ask`` and ``codeward chat`` say on stderr while the model works, so a slow answer is
never silence.

A line as each request goes out (which round, which model), then one every
:data:`~codeward.apps.agent.loop.PROGRESS_EVERY` seconds with the time waited and the text streamed
so far, and one when the answer is in: a small model on two cores can think for minutes. In a chat the
answer streams on the screen as it comes, so the lines stop once its text does (they would cut it up).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from codeward.apps.agent.loop import Progress


class ProgressLines:
    """Prints each :class:`Progress` report of one question (``ask``'s, or one chat message's) as a line on
    ``stream``; with ``until_text``, none once the answer's text has begun to stream."""

    def __init__(self, model: str, stream: TextIO | None = None, *, until_text: bool = False) -> None:
        self.model = model
        self.stream = stream or sys.stderr
        self.until_text = until_text
        self.started = time.monotonic()
        self._requests: set[tuple[int, bool]] = set()

    def __call__(self, progress: Progress) -> None:
        request = (progress.round, progress.plain)
        if request not in self._requests:
            self._requests.add(request)
            how = " again, as a plain request" if progress.plain else ""
            self._say(f"round {progress.round}: asked {self.model}{how}; waiting for its answer")
            return
        if self.until_text and progress.pieces:
            return
        streamed = (f"{progress.pieces} pieces of text streamed so far" if progress.pieces
                    else "no text yet (the model is reading or thinking)")
        self._say(f"round {progress.round}: {progress.elapsed_s:.0f} s, {streamed}")

    def finished(self, rounds: int, tool_calls: int) -> None:
        """The closing line: how long the whole question took."""
        calls = f", {tool_calls} tool call{'s' if tool_calls != 1 else ''}" if tool_calls else ""
        self._say(f"answered in {time.monotonic() - self.started:.1f} s ({rounds} "
                  f"round{'s' if rounds != 1 else ''}{calls})")

    def _say(self, text: str) -> None:
        print(f"[codeward] {text}", file=self.stream, flush=True)
