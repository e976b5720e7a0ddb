"""A server's log lines on stderr, as ``[server] log_format`` asks: ``text`` or ``json``.

``json`` writes one JSON object per line for a log collector (journald, Docker's and Kubernetes' log
drivers, Loki, Elasticsearch): ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``,
``message``, ``replica``; a line written while a tool call runs adds its ``request_id`` (the MCP
request's JSON-RPC id), ``session``, ``user``, ``tool`` and ``call_id`` — the fields of the call's
audit records, so a log line and an audit record are matched by them; an access line
(:mod:`codeward.serving.transport.http_access_log`) adds its own fields. ``text`` over HTTP is one
line with a timestamp and the same call fields after the message.

The call's fields travel in a context variable set by the audit layer around each call
(:func:`in_call`): whatever the call awaits logs with them, nothing else does.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

LogFormat = Literal["text", "json"]

_CALL: ContextVar[Mapping[str, Any] | None] = ContextVar("codeward_call_fields", default=None)
CALL_FIELDS = ("request_id", "session", "user", "tool", "call_id")


@contextmanager
def in_call(**fields: Any) -> Iterator[None]:
    """Log lines written inside carry these fields of the running call (None values left out)."""
    token = _CALL.set({k: v for k, v in fields.items() if v is not None})
    try:
        yield
    finally:
        _CALL.reset(token)


def _stamp(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"


class JsonLines(logging.Formatter):
    """One JSON object per record."""

    def __init__(self, replica: str) -> None:
        super().__init__()
        self.replica = replica

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": _stamp(record.created), "level": record.levelname.lower(),
                                 "logger": record.name, "message": record.getMessage(), "replica": self.replica}
        entry.update(_CALL.get() or {})
        fields = getattr(record, "fields", None)
        if isinstance(fields, Mapping):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextLines(logging.Formatter):
    """``<time> <LEVEL> <logger>: <message> [request_id=… user=…]``."""

    def format(self, record: logging.LogRecord) -> str:
        call = _CALL.get() or {}
        context = " ".join(f"{k}={call[k]}" for k in CALL_FIELDS if k in call)
        line = f"{_stamp(record.created)} {record.levelname} {record.name}: {record.getMessage()}"
        line = f"{line} [{context}]" if context else line
        return f"{line}\n{self.formatException(record.exc_info)}" if record.exc_info else line


def configure_server_logs(log_format: LogFormat, replica: str, *, access_log: bool = False) -> None:
    """Write every log line of this server process in ``log_format`` on stderr (the handlers ``-v`` set up
    get the format too); with ``access_log``, the access lines at INFO whatever the verbosity."""
    formatter: logging.Formatter = JsonLines(replica) if log_format == "json" else TextLines()
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
    for handler in root.handlers:
        handler.setFormatter(formatter)
    if access_log:
        logging.getLogger("codeward.access").setLevel(logging.INFO)
