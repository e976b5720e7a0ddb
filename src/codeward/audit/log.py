"""The audit record: one JSON line per tool call, approval and denial — who, what, a hash of the
arguments (never the arguments themselves: they may hold secrets), the outcome — written to a file
per replica and, with shared state, to a Redis stream every replica's console can read.

Every record has an ``id`` of its own. The file gets it at once; the shared stream may not answer
(Redis down): the records it did not take wait here, in order, and are sent again once it answers
(:meth:`AuditLog.resend`, run every second by an HTTP server) — the sink takes each id at most once,
so a record whose first send timed out after Redis stored it is not stored twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)


class AuditSink(Protocol):
    """Somewhere audit records go besides the file (the shared state's stream)."""

    async def audit(self, record: Mapping[str, Any]) -> None:
        """Store one record; a record whose ``id`` it already stored is not stored again."""
        ...


MAX_UNSENT = 100_000
"""Records kept for the shared stream while it does not answer; past it the oldest are dropped from
the queue (the file has every one) with a warning."""


def arguments_hash(arguments: Mapping[str, Any] | None) -> str:
    """SHA-256 of the arguments as canonical JSON: equal calls have equal hashes, nothing is revealed."""
    text = json.dumps(dict(arguments or {}), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class AuditLog:
    """Appends audit records to a JSONL file (created 0600) and hands them to a shared sink.

    The file stays open for appending: each record is one ``write`` of one whole line (whole
    lines even when replicas on one host share the file). Before each record the path is
    checked against the open file, so a log rotated away (moved or deleted) is followed: the
    next record goes to a new file at the path, created 0600 again.
    """

    def __init__(self, path: Path | None, replica: str, sink: AuditSink | None = None) -> None:
        self.path = path
        self.replica = replica
        self.sink = sink
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._file_id: tuple[int, int] | None = None
        self._unsent: deque[dict[str, Any]] = deque()
        self._dropped = 0
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600, exist_ok=True)

    async def record(self, event: str, *, user: str | None, tool: str, arguments: Mapping[str, Any] | None,
                     outcome: str, **extra: Any) -> dict[str, Any]:
        entry = {"id": uuid.uuid4().hex, "time": round(time.time(), 3), "replica": self.replica, "event": event,
                 "user": user or "unknown", "tool": tool, "arguments_sha256": arguments_hash(arguments),
                 "outcome": outcome, **extra}
        if self.path is not None:
            self._append((json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8"))
        if self.sink is not None:
            if self._unsent:  # the stream is known to be down: queue behind the others, no wait per call
                self._queue(entry)
            else:
                try:
                    await self.sink.audit(entry)
                except Exception as error:  # the file has it; the stream gets it when it answers again
                    log.warning("audit record not shared yet (kept, sent when the shared state answers): %s", error)
                    self._queue(entry)
        return entry

    @property
    def unsent(self) -> int:
        """Records waiting for the shared stream."""
        return len(self._unsent)

    def _queue(self, entry: dict[str, Any]) -> None:
        self._unsent.append(entry)
        while len(self._unsent) > MAX_UNSENT:
            self._unsent.popleft()
            self._dropped += 1
            if self._dropped in (1, 1000) or not self._dropped % 100_000:
                log.warning("%d audit records dropped from the shared stream's queue (the audit file has them)",
                            self._dropped)

    async def resend(self) -> int:
        """Send the waiting records, oldest first, until the sink fails again; how many went."""
        sent = 0
        while self._unsent and self.sink is not None:
            try:
                await self.sink.audit(self._unsent[0])
            except Exception:
                return sent
            self._unsent.popleft()
            sent += 1
        if sent:
            log.warning("the shared state answers again: %d waiting audit records sent", sent)
        return sent

    async def resend_forever(self, every: float = 1.0) -> None:
        """What an HTTP server runs beside its app: waiting records sent as soon as the stream answers."""
        import anyio

        while True:
            await anyio.sleep(every)
            if self._unsent:
                await self.resend()

    def _append(self, line: bytes) -> None:
        with self._lock:
            fd = self._descriptor()
            while line:
                line = line[os.write(fd, line):]

    def _descriptor(self) -> int:
        """The open file, reopened when the path no longer names it (rotated, moved or deleted)."""
        assert self.path is not None
        try:
            info = os.stat(self.path)
            current = (info.st_dev, info.st_ino)
        except FileNotFoundError:
            current = None
        if self._fd is not None and current == self._file_id:
            return self._fd
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        opened = os.fstat(fd)
        self._fd, self._file_id = fd, (opened.st_dev, opened.st_ino)
        return fd

    def close(self) -> None:
        """Close the file (a later record opens it again)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = self._file_id = None
