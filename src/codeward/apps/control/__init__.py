"""The control plane: a local Hook API and web console to watch a session and approve its calls.

- :class:`~codeward.apps.control.state.ControlState` — what the API shows, behind one lock
- :class:`~codeward.apps.control.server.ControlServer` — the Starlette app served by uvicorn
- :class:`~codeward.apps.control.client.ApiHookClient` — a synchronous client for scripts
- approvals raced between the terminal and the console: :mod:`codeward.approval.desk` (the approval floor)
- :func:`~codeward.apps.control.plane.control_plane` — the glue the ``chat``/``ask``/``gateway`` commands use

See ``docs/control.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeward.apps.control.client import ApiHookClient, HookError
    from codeward.apps.control.state import ControlState

__all__ = ["ApiHookClient", "ControlState", "HookError"]
_HOMES = {"ApiHookClient": "codeward.apps.control.client", "HookError": "codeward.apps.control.client",
          "ControlState": "codeward.apps.control.state"}


def __getattr__(name: str) -> Any:
    """Import on first use: ``codeward.apps.control.defaults`` is read at every start of a command."""
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
