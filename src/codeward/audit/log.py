"""The audit record: one JSON line per tool call, approval and denial — who, what, a hash of the
arguments (never the arguments themselves: they may hold secrets), the outcome — written to a file
per replica and, with shared state, to a Redis stream every replica's console can read."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)


class AuditSink(Protocol):
    """Somewhere audit records go besides the file (the shared state's stream)."""

    async def audit(self, record: Mapping[str, Any]) -> None: ...


def arguments_hash(arguments: Mapping[str, Any] | None) -> str:
    """SHA-256 of the arguments as canonical JSON: equal calls have equal hashes, nothing is revealed."""
    text = json.dumps(dict(arguments or {}), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class AuditLog:
    """Appends audit records to a JSONL file (created 0600) and hands them to a shared sink."""

    def __init__(self, path: Path | None, replica: str, sink: AuditSink | None = None) -> None:
        self.path = path
        self.replica = replica
        self.sink = sink
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600, exist_ok=True)

    async def record(self, event: str, *, user: str | None, tool: str, arguments: Mapping[str, Any] | None,
                     outcome: str, **extra: Any) -> dict[str, Any]:
        entry = {"time": round(time.time(), 3), "replica": self.replica, "event": event, "user": user or "unknown",
                 "tool": tool, "arguments_sha256": arguments_hash(arguments), "outcome": outcome, **extra}
        if self.path is not None:
            line = json.dumps(entry, ensure_ascii=False) + "\n"
            with self._lock, self.path.open("a", encoding="utf-8") as handle:
                handle.write(line)
        if self.sink is not None:
            try:
                await self.sink.audit(entry)
            except Exception as error:  # the file has it; the shared stream is best effort
                log.warning("audit record not shared: %s", error)
        return entry
