"""The toolsets one session of a lean server enabled (:mod:`codeward.kernel.lean_listing`).

Its own module so a call's :class:`codeward.kernel.context.CallInfo` can carry it without the context
depending on the listing, which depends on the surfaces and the chain.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class SessionToolsets:
    """The toolsets one session enabled; a tool's thread enables them while the event loop lists."""

    def __init__(self, *, can_change: bool = True) -> None:
        self.can_change = can_change
        """False for a connection that names no session (2026-07-28 over HTTP): nothing is kept between
        its requests, so only ``call_tool`` reaches the toolsets it would enable."""
        self._enabled: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self.version = 0
        """Counts the changes: the server compares it before and after a call to tell the client."""

    @property
    def enabled(self) -> frozenset[str]:
        return self._enabled

    def enable(self, names: Iterable[str]) -> list[str]:
        """Enable toolsets; the ones that were not enabled before."""
        return self._change(names, add=True)

    def disable(self, names: Iterable[str]) -> list[str]:
        """Disable toolsets; the ones that were enabled."""
        return self._change(names, add=False)

    def _change(self, names: Iterable[str], *, add: bool) -> list[str]:
        with self._lock:
            wanted = list(dict.fromkeys(names))
            changed = [n for n in wanted if (n in self._enabled) != add]
            if changed and self.can_change:
                self._enabled = self._enabled | set(changed) if add else self._enabled - set(changed)
                self.version += 1
            return changed if self.can_change else []
