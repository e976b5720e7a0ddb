"""Work a call leaves for once its answer is out: preparing the next sandbox, removing a run's layers.

Such work used to start while the call was still finishing (recording the run, rendering the
result, the hand-back to the event loop, the answer's write), and competed with it for the
machine's cores and for the interpreter's lock: a background thread that holds the GIL makes the
call's thread wait up to the switch interval (5 ms) each time. So a call's context carries an
:class:`Afterwards` (``ctx.call.later(fn)``) that whoever answers the call starts once the
answer is written — the MCP server, right after the response; a call with no one to start it
(``ctx.call.afterwards`` unset: the command line, a test) runs ``fn`` at once, as before.

Only hand-overs belong here: each ``fn`` must return at once (notify a pool, start a thread), as
it may run on the event loop. Nothing a caller is told may depend on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger("codeward.kernel.afterwards")

Later = Callable[[], None]


class Afterwards:
    """The hand-overs one call leaves for after its answer; :meth:`start` runs them (once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[Later] = []
        self._started = False

    def add(self, later: Later) -> None:
        """Run ``later`` once the answer is out (at once if it already is)."""
        with self._lock:
            if not self._started:
                self._waiting.append(later)
                return
        _run(later)

    def start(self) -> None:
        """The answer is out: run what was left, in the order it was added. Idempotent."""
        with self._lock:
            self._started = True
            waiting, self._waiting = self._waiting, []
        for later in waiting:
            _run(later)


def _run(later: Later) -> None:
    try:
        later()
    except Exception:  # a hand-over that failed must not take the server's loop with it
        logger.exception("work left for after a call failed")
