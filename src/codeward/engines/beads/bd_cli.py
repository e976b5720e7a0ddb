"""Delegation to the Beads CLI: ``bd <command> ... --json`` run in the project root.

``bd`` owns its database (and the JSONL it exports); codeward only passes arguments and reads
the JSON back. The process gets a timeout and, on expiry, is killed with its whole process group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.kernel.result import ErrorKind, Result

STDERR_SHOWN_CHARS = 2000


@dataclass(frozen=True)
class BdCli:
    executable: str
    root: Path
    timeout: float = 30.0

    def run(self, *args: str) -> Result[Any]:
        """Run ``bd args... --json``; the parsed JSON, or an error quoting bd's own message."""
        command = [self.executable, *args, "--json"]
        shown = "bd " + " ".join(args)
        try:
            process = subprocess.Popen(
                command, cwd=self.root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return Result.fail(ErrorKind.UNAVAILABLE, f"cannot run {self.executable}: {exc.strerror}",
                               "Check that the Beads CLI (bd) is installed and executable, or use the built-in "
                               "store (beads settings: backend='builtin').")
        try:
            stdout, stderr = process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            return Result.fail(ErrorKind.TIMEOUT, f"`{shown}` did not finish within {self.timeout:g} s",
                               "bd may be waiting on a lock or its database server; check `bd doctor`.")
        message = stderr.decode("utf-8", "replace").strip()[:STDERR_SHOWN_CHARS]
        if process.returncode != 0:
            return Result.fail(ErrorKind.INVALID_INPUT if message else ErrorKind.UNAVAILABLE,
                               f"`{shown}` failed (exit {process.returncode}): {message or 'no message'}",
                               "Fix what bd reports above; `bd help` lists its commands.")
        text = stdout.decode("utf-8", "replace").strip()
        if not text:
            return Result.success(None)
        try:
            return Result.success(json.loads(text))
        except json.JSONDecodeError as exc:
            return Result.fail(ErrorKind.UNAVAILABLE, f"`{shown}` printed something that is not JSON ({exc.msg}): "
                               f"{text[:200]!r}", "This bd version may not support --json for this command; "
                               "update bd, or use the built-in store (beads settings: backend='builtin').")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
