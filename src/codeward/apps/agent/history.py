"""Sessions on disk: one JSONL file per conversation, so ``codeward chat --resume`` can rebuild it.

The first line is a header (id, model, system prompt, creation time); every later line is one
turn exactly as the conversation holds it — user, assistant (text and tool calls), tool
(``tool_call_id`` and content) — plus ``meta`` lines other features use (tracked files). Lines
are written and flushed as turns happen, so a crash loses nothing already said.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from codeward.apps.agent.conversation import Conversation, Turn
from codeward.kernel.user_dirs import data_home


def sessions_dir(environ: dict[str, str] | None = None) -> Path:
    return data_home(environ) / "sessions"


class SessionNotFound(LookupError):
    """No session with that id (or none at all); the message lists what exists."""


@dataclass
class SessionLog:
    """An open session file; :meth:`record` appends a turn and flushes it."""

    path: Path
    session_id: str
    header: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    _handle: IO[str] | None = None

    @classmethod
    def create(cls, directory: Path, *, model: str, system: str) -> SessionLog:
        directory.mkdir(parents=True, exist_ok=True)
        session_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        header = {"session": session_id, "model": model, "system": system, "created": time.time()}
        log = cls(directory / f"{session_id}.jsonl", session_id, header)
        log._write(header)
        return log

    def record(self, turn: Turn) -> None:
        self._write({"turn": turn.to_dict()})

    def record_meta(self, key: str, value: Any) -> None:
        self.meta[key] = value
        self._write({"meta": {key: value}})

    def _write(self, entry: dict[str, Any]) -> None:
        if self._handle is None:
            self._handle = self.path.open("a", encoding="utf-8")
        self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def list_sessions(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if directory.is_dir() else []


def find_session(directory: Path, session_id: str | None) -> Path:
    sessions = list_sessions(directory)
    if not sessions:
        raise SessionNotFound(f"no saved sessions in {directory}; start one with `codeward chat`")
    if session_id is None:
        return sessions[-1]
    matching = [p for p in sessions if p.stem == session_id or p.stem.startswith(session_id)]
    if len(matching) != 1:
        recent = ", ".join(p.stem for p in sessions[-5:])
        what = "no session" if not matching else f"{len(matching)} sessions"
        raise SessionNotFound(f"{what} matching {session_id!r}; recent sessions: {recent}")
    return matching[0]


def load_session(path: Path, use_tool_role: bool = True) -> tuple[SessionLog, Conversation]:
    """Rebuild a conversation from its file and reopen the file for appending."""
    header: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    conversation = Conversation(use_tool_role=use_tool_role)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SessionNotFound(f"{path.name} line {number} is not JSON ({exc}); the file is damaged") from exc
            if "session" in entry:
                header = entry
            elif "turn" in entry:
                conversation.append(Turn.from_dict(entry["turn"]))
            elif "meta" in entry:
                meta.update(entry["meta"])
    conversation.system = header.get("system", "")
    log = SessionLog(path, header.get("session", path.stem), header, meta)
    return log, conversation
