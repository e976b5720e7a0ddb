"""Delegation to the Beads CLI: ``bd <command> ... --json`` run in the project root.

``bd`` owns its database (and the JSONL it exports); codeward only passes arguments and reads
the JSON back. bd runs the executable scripts of ``.beads/hooks/`` on its events — files the
agent can write — so it runs in the project's sandbox like any program on project content
(:class:`~codeward.engines.contained.project_sandbox.BoxLauncher`): what it writes (its database, the JSONL) comes back
through the write checks; a timeout kills it and everything it started.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:
    from codeward.engines.contained.project_sandbox import Launcher

STDERR_SHOWN_CHARS = 2000


@dataclass(frozen=True)
class BdCli:
    executable: str
    root: Path
    timeout: float
    launcher: Launcher
    """Where bd runs: the project's sandbox (bd runs ``.beads/hooks/`` scripts, which the agent can write)."""

    def run(self, *args: str) -> Result[Any]:
        """Run ``bd args... --json``; the parsed JSON, or an error quoting bd's own message."""
        shown = "bd " + " ".join(args)
        ran = self.launcher.run([self.executable, *args, "--json"], cwd=self.root, timeout=self.timeout)
        if not ran.ok or ran.data is None:
            error = ran.errors[0]
            if error.kind is ErrorKind.TIMEOUT:
                return Result.fail(ErrorKind.TIMEOUT, f"`{shown}` did not finish within {self.timeout:g} s",
                                   "bd may be waiting on a lock or its database server; check `bd doctor`.")
            return Result.fail(error.kind, f"cannot run {self.executable}: {error.message}",
                               error.hint or "Check that the Beads CLI (bd) is installed and executable, or use the "
                               "built-in store (beads settings: backend='builtin').")
        done = ran.data
        message = done.stderr.strip()[:STDERR_SHOWN_CHARS]
        if done.returncode != 0:
            return Result.fail(ErrorKind.INVALID_INPUT if message else ErrorKind.UNAVAILABLE,
                               f"`{shown}` failed (exit {done.returncode}): {message or 'no message'}",
                               "Fix what bd reports above; `bd help` lists its commands.")
        text = done.stdout.strip()
        if not text:
            return Result.success(None)
        try:
            return Result.success(json.loads(text))
        except json.JSONDecodeError as exc:
            return Result.fail(ErrorKind.UNAVAILABLE, f"`{shown}` printed something that is not JSON ({exc.msg}): "
                               f"{text[:200]!r}", "This bd version may not support --json for this command; "
                               "update bd, or use the built-in store (beads settings: backend='builtin').")


