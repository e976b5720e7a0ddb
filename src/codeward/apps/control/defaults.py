"""Where the control plane listens and how long it waits, unless told otherwise, and the
options a run asks for.

Apart from the server so that a command's flags (``--control-port``...) can name the defaults,
and build its :class:`ControlOptions`, without importing the Hook API's web stack (and the
observers, logs and model client behind it) at every start of ``codeward serve``.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8999
DEFAULT_APPROVAL_TIMEOUT = 300.0
"""Seconds a call waits for a console approval when no terminal can answer, before it is denied."""


@dataclass(frozen=True)
class ControlOptions:
    """What a run asked for: the API served (``serve``), logs written (``logs``), where, how long to wait.

    The command line builds one from its ``--control*``/``--logs`` flags."""

    serve: bool = False
    logs: bool = False
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    approval_timeout: float | None = DEFAULT_APPROVAL_TIMEOUT
