"""The shell log: one JSON line per run in ``<primary root>/.codeward/logs/shell.jsonl``.

Lines are appended with a single ``write`` on an ``O_APPEND`` descriptor, so concurrent runs
never interleave; the directory is read-only inside the sandbox, so a script cannot edit
its own record. codeward writes it through :class:`~codeward.kernel.state_dir.StateDir` (tools may
not write in ``.codeward/``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.kernel import state_dir
from codeward.kernel.state_dir import StateDir
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    from codeward.engines.sandbox.egress_proxy import EgressEvent

LOG_DIR = f"{state_dir.NAME}/{state_dir.LOGS}"
LOG_NAME = state_dir.SHELL_LOG.rpartition("/")[2]
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
    """The log directory, created if needed; ``None`` when it cannot be (a planted link, a read-only root)."""
    try:
        return StateDir(workspace.primary).folder(state_dir.LOGS)
    except OSError:
        return None


def append_network_event(workspace: Workspace, client: str, event: EgressEvent) -> None:
    """Append one egress decision to ``.codeward/logs/network.jsonl`` (raises ``OSError``)."""
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(event.at)), "client": client,
              "allowed": event.allowed, "method": event.method, "host": event.host, "port": event.port,
              "address": event.address, "reason": event.reason, "run": event.run}
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    StateDir(workspace.primary).append(state_dir.NETWORK_LOG, line, 0o600)


def append_entry(workspace: Workspace, entry: ShellLogEntry) -> str | None:
    """Append one line; returns why it could not be written, or ``None``."""
    record = dict(vars(entry))  # its fields are plain values (asdict's deep copy costs more than the write)
    if len(entry.script) > MAX_LOGGED_SCRIPT_CHARS:
        record["script"] = entry.script[:MAX_LOGGED_SCRIPT_CHARS] + f"[... {len(entry.script)} characters in all]"
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record}
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        StateDir(workspace.primary).append(state_dir.SHELL_LOG, line, 0o600)
    except OSError as exc:
        return f"could not write {LOG_DIR}/{LOG_NAME}: {exc.strerror or exc}"
    return None
