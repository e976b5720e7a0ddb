"""Session logs: what a session said to the model, which tools it ran, who called its Hook API,
and which subprocesses it started — one folder per session, one JSON object per line.

``<folder>/comms.log``      every model request and response (direction, kind, payload)
``<folder>/toolcalls.log``  every tool call: arguments, status, duration, a result preview
``<folder>/apihooks.log``   every Hook API request: method, path, status, body
``<folder>/clicalls.log``   subprocesses: command, stdin, stdout, stderr, exit code, latency

Files are opened once, flushed after every line (a crash loses nothing already written),
rotated by size (``comms.log.1``, ``.2``...) and closed with the session. Every line goes
through a :class:`Redactor` first: API keys, bearer tokens, ``Authorization`` headers and the
values of environment variables named like ``*KEY*``/``*TOKEN*``/``*SECRET*`` never reach disk.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codeward.engines.contained.warm_box import BOX_RUN_EVENT
from codeward.kernel.redaction import Redactor

LOG_FILES = ("comms.log", "toolcalls.log", "apihooks.log", "clicalls.log")
DEFAULT_MAX_BYTES = 5 * 1024 * 1024
DEFAULT_BACKUPS = 3
PREVIEW_CHARS = 2000


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The start of a long text, with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters]"


class SessionLogs:
    """The four log files of one session; thread-safe; use as a context manager or call close()."""

    def __init__(self, directory: Path, redactor: Redactor | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 backups: int = DEFAULT_BACKUPS) -> None:
        if max_bytes < 1024:
            raise ValueError(f"max_bytes must be at least 1024, got {max_bytes}")
        self.directory = directory
        self.redactor = redactor or Redactor()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._handlers: dict[str, logging.handlers.RotatingFileHandler] = {}
        self._closed = False
        self._watch: SubprocessWatch | None = None
        formatter = logging.Formatter("%(message)s")
        for name in LOG_FILES:
            path = directory / name
            os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))
            handler = logging.handlers.RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups,
                                                           encoding="utf-8")
            handler.setFormatter(formatter)
            self._handlers[name] = handler

    @classmethod
    def for_session(cls, logs_root: Path, session_id: str, redactor: Redactor | None = None) -> SessionLogs:
        """The logs of ``session_id`` under ``logs_root/<session_id>/``."""
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", session_id) or session_id in (".", ".."):
            raise ValueError(f"session id {session_id!r} cannot name a folder; use letters, digits, '.', '_', '-'")
        return cls(logs_root / session_id, redactor)

    @property
    def closed(self) -> bool:
        return self._closed

    # -- the four streams ------------------------------------------------------------------

    def comms(self, direction: str, kind: str, payload: Mapping[str, Any]) -> None:
        """A model interaction: ``direction`` is ``out`` (request) or ``in`` (response)."""
        self._write("comms.log", {"direction": direction, "kind": kind, "payload": dict(payload)})

    def tool_call(self, record: Mapping[str, Any]) -> None:
        """A finished (or refused) tool call: name, arguments, status, duration, result preview."""
        self._write("toolcalls.log", dict(record))

    def api_hook(self, method: str, path: str, status: int, body: Any = None, client: str | None = None) -> None:
        self._write("apihooks.log", {"method": method, "path": path, "status": status, "client": client,
                                     "body": body})

    def cli_call(self, command: Sequence[str] | str, *, stdin: str = "", stdout: str = "", stderr: str = "",
                 latency_s: float | None = None, exit_code: int | None = None, cwd: str | None = None,
                 kind: str = "run", **extra: Any) -> None:
        """A subprocess: what ran, what it was given and printed, how it ended and how long it took.

        ``kind`` is ``run`` (a command the session ran itself, with its input and output),
        ``spawn`` or ``exit`` (any subprocess, seen by :class:`SubprocessWatch`).
        """
        record: dict[str, Any] = {"kind": kind, **extra,
                                  "command": command if isinstance(command, str) else list(command)}
        if cwd is not None:
            record["cwd"] = cwd
        if kind == "run":
            record.update(stdin=stdin, stdout=stdout, stderr=stderr)
        if kind != "spawn":
            record.update(exit_code=exit_code, latency_s=None if latency_s is None else round(latency_s, 6))
        self._write("clicalls.log", record)

    def watch_subprocesses(self) -> None:
        """Record every subprocess this Python process starts from now on: command and cwd at
        the start, exit code and latency at the end (see :class:`SubprocessWatch`)."""
        if self._watch is None:
            self._watch = SubprocessWatch(self)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        if self._watch is not None:
            self._watch.stop()
        self._closed = True
        for handler in self._handlers.values():
            handler.close()

    def __enter__(self) -> SessionLogs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, name: str, record: dict[str, Any]) -> None:
        if self._closed:
            return
        line = {"time": _timestamp(), **self.redactor.value(record)}
        text = self.redactor.text(json.dumps(line, ensure_ascii=False, default=str))
        self._handlers[name].handle(logging.makeLogRecord({"msg": text, "args": None}))


class SubprocessWatch:
    """Sees every subprocess the process starts, including those of tools and libraries.

    A runtime audit hook (``subprocess.Popen``, ``os.system``) logs each start. For a
    ``Popen`` the hook also finds the object being started, and a watcher thread logs its exit
    code and latency once its owner has reaped it (the watcher only reads ``returncode``; it
    never waits on or polls a process itself, so it cannot steal an exit status). Latency is
    accurate to the watcher's tick. Audit hooks cannot be removed: after :meth:`stop` the hook
    does nothing, and it holds the logs only weakly. Output stays with the owner: the tool
    results in ``toolcalls.log`` carry it, and commands the session runs itself are logged
    with their stdin and output through :meth:`SessionLogs.cli_call`.
    """

    TICK_S = 0.05

    def __init__(self, logs: SessionLogs) -> None:
        self._logs = weakref.ref(logs)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._tracked: list[tuple[Any, float, int, list[str]]] = []
        self._count = 0
        self._stopped = False
        self._thread = threading.Thread(target=self._watch, name="codeward-subprocess-watch", daemon=True)
        self._thread.start()
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in ("subprocess.Popen", "os.system", BOX_RUN_EVENT) or self._stopped:
            return
        logs = self._logs()
        if logs is None or logs.closed:
            return
        try:
            if event == "os.system":
                logs.cli_call(os.fsdecode(args[0]), cwd=os.getcwd(), kind="spawn")
                return
            if event == BOX_RUN_EVENT:  # a program started in a box spawned ahead (its waiter was the spawn)
                logs.cli_call([str(a) for a in args[0]], cwd=str(args[1] or os.getcwd()), kind="spawn")
                return
            raw = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
            command = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in raw]
            cwd = os.fsdecode(args[2]) if args[2] is not None else os.getcwd()
            with self._lock:
                self._count += 1
                number = self._count
            logs.cli_call(command, cwd=cwd, kind="spawn", spawn=number)
            process = _starting_popen(sys._getframe(1))
            if process is not None:
                with self._lock:
                    self._tracked.append((process, time.perf_counter(), number, command))
                self._wake.set()
        except Exception:  # an audit hook must never break the process that triggered it
            return

    def _watch(self) -> None:
        while not self._stopped:
            with self._lock:
                busy = bool(self._tracked)
            if not busy:
                self._wake.wait()
                self._wake.clear()
                continue
            time.sleep(self.TICK_S)
            self._sweep(final=False)

    def _sweep(self, final: bool) -> None:
        logs = self._logs()
        now = time.perf_counter()
        with self._lock:
            done = [t for t in self._tracked if final or getattr(t[0], "returncode", None) is not None]
            self._tracked = [t for t in self._tracked if t not in done]
        if logs is None:
            return
        for process, started, number, command in done:
            code = getattr(process, "returncode", None)
            logs.cli_call(command, kind="exit" if code is not None else "running_at_close", spawn=number,
                          pid=getattr(process, "pid", None), exit_code=code, latency_s=now - started)

    def stop(self) -> None:
        """Log what is still tracked and stop watching (the session is closing)."""
        self._sweep(final=True)
        self._stopped = True
        self._wake.set()


def _starting_popen(frame: Any) -> Any:
    """The ``subprocess.Popen`` whose start raised the audit event, found on the caller's frames."""
    import subprocess

    for _ in range(4):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, subprocess.Popen):
            return candidate
        frame = frame.f_back
    return None


def _timestamp() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
