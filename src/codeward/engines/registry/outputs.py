"""Saved results: ``.ai/outputs/tools/<name>/output_<UTC timestamp>.json``, the newest N kept.

Every run is saved whole, so a result too large to return is still there to read (with
``read_file`` and offset/limit); the answer carries a bounded preview and the file's path.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeward.engines.files.textfile import atomic_write
from codeward.engines.registry.settings import PROJECT_DIR_NAME
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.state_dir import ignore_outputs
from codeward.kernel.workspace import Access, Workspace

OUTPUTS_ROOT = f"{PROJECT_DIR_NAME}/outputs"
OUTPUTS_DIR = f"{OUTPUTS_ROOT}/tools"


def save_output(workspace: Workspace, name: str, payload: dict[str, Any], keep: int) -> Result[Path]:
    """Write ``payload`` as the newest output of ``name`` and delete all but the newest ``keep``."""
    stamp = datetime.now(UTC).strftime("%Y%m%d_%H%M%S_%f")
    resolved = workspace.resolve(f"{OUTPUTS_DIR}/{name}/output_{stamp}.json", Access.WRITE, param="output")
    if not resolved.ok:
        return resolved
    target = resolved.data
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        ignore_outputs(workspace.primary / OUTPUTS_ROOT)
        atomic_write(target, json.dumps(payload, indent=2, default=str).encode("utf-8"))
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot save the output of {name}: {exc.strerror}",
                           "Make .ai/outputs writable; the result itself is still returned.", data=target)
    for old in sorted(target.parent.glob("output_*.json"))[:-keep]:
        old.unlink(missing_ok=True)
    return Result.success(target)


def outputs_of(workspace: Workspace, name: str) -> list[Path]:
    """The saved outputs of a tool, oldest first."""
    return sorted((workspace.primary / OUTPUTS_DIR / name).glob("output_*.json"))


def preview(value: Any, limit: int) -> tuple[str, bool]:
    """``value`` as JSON text, cut to ``limit`` characters; whether it was cut."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, default=str)
    if len(text) <= limit:
        return text, False
    return text[:limit], True
