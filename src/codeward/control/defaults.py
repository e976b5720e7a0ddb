"""Where the control plane listens and how long it waits, unless told otherwise.

Apart from the server so that a command's flags (``--control-port``...) can name the defaults
without importing the Hook API's web stack at every start of ``codeward serve``.
"""

from __future__ import annotations

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8999
DEFAULT_APPROVAL_TIMEOUT = 300.0
"""Seconds a call waits for a console approval when no terminal can answer, before it is denied."""
