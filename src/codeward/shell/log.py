"""The shell log: one JSON line per run in ``<primary root>/.codeward/logs/shell.jsonl``.

Lines are appended with a single ``write`` on an ``O_APPEND`` descriptor, so concurrent runs
never interleave; the directory is read-only inside the sandbox, so a script cannot edit
its own record.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from codeward.state_dir import ignore_caches
from codeward.workspace import Access, Workspace

LOG_DIR = ".codeward/logs"
LOG_NAME = "shell.jsonl"
MAX_LOGGED_SCRIPT_CHARS = 20_000


@dataclass(frozen=True)
class ShellLogEntry:
    script: str
    shell: str
    cwd: str
    exit_code: int | None
    status: str
    duration_s: float
    sandbox: str
    """The backend (``bwrap``), or ``unsandboxed`` followed by how it ran."""
    timeout_s: float


def log_dir(workspace: Workspace) -> Path | None:
    """The log directory, created if needed; ``None`` when the workspace refuses it."""
    resolved = workspace.resolve(LOG_DIR, Access.WRITE)
    if not resolved.ok:
        return None
    try:
        resolved.data.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    ignore_caches(resolved.data.parent)
    return resolved.data


def append_entry(workspace: Workspace, entry: ShellLogEntry) -> str | None:
    """Append one line; returns why it could not be written, or ``None``."""
    resolved = workspace.resolve(f"{LOG_DIR}/{LOG_NAME}", Access.WRITE)
    if not resolved.ok:
        return resolved.errors[0].message
    record = asdict(entry)
    if len(entry.script) > MAX_LOGGED_SCRIPT_CHARS:
        record["script"] = entry.script[:MAX_LOGGED_SCRIPT_CHARS] + f"[... {len(entry.script)} characters in all]"
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record}
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        resolved.data.parent.mkdir(parents=True, exist_ok=True)
        ignore_caches(resolved.data.parent.parent)
        fd = os.open(resolved.data, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"could not write {LOG_DIR}/{LOG_NAME}: {exc.strerror or exc}"
    return None
