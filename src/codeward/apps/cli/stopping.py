"""How a stopped command exits: 143 on SIGTERM, 130 on Ctrl-C, never with a traceback.

A signal becomes an exception in the main thread (:mod:`codeward.__main__`), which may surface
wrapped in exception groups by the task groups it crossed (anyio's, the HTTP server's); the code a
stop asks for is found wherever it is wrapped.
"""

from __future__ import annotations

import signal

INTERRUPTED = 128 + signal.SIGINT
TERMINATED = 128 + signal.SIGTERM


def stop_status(exc: BaseException) -> int | None:
    """The exit code of the stop in ``exc`` (``KeyboardInterrupt``, ``SystemExit``, either inside any
    depth of exception groups); None when ``exc`` holds none."""
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            code = stop_status(inner)
            if code is not None:
                return code
    return None
