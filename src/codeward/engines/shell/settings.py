"""How ``run_shell`` may run scripts: the ``[shell]`` table (:class:`codeward.config.ShellSettings`).

The settings travel in the context's services (``ctx.services.get(ShellSettings)``); when
absent, the safe defaults apply: sandboxed, no network, secrets hidden, no model asked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from codeward.config.shell import HARD_MAX_TIMEOUT_S, ShellSettings

__all__ = ["HARD_MAX_TIMEOUT_S", "ShellSettings", "host_variables", "readable_dirs"]


def host_variables(names: tuple[str, ...], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``pass_env`` variables that are set on the host."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in names if name in env}


def readable_dirs(paths: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """``ro_paths`` that exist (to bind), and a note for each that does not."""
    found: list[Path] = []
    notes: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.exists():
            found.append(path.resolve())
        else:
            notes.append(f"[shell] ro_paths entry {raw} does not exist; it was not made visible in the sandbox")
    return found, notes
