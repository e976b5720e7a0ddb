"""Finding analyzer executables; they run in the review's project sandbox.

Analyzers are separate programs (ruff, mypy, bandit, radon, vulture, lizard, shellcheck,
cppcheck, Biome), found in the interpreter's own environment first (the directory next to
``sys.executable``), then on ``PATH``. Each runs through a
:class:`~codeward.engines.contained.project_sandbox.Launcher`; the one codeward uses is
:class:`~codeward.engines.contained.project_sandbox.BoxLauncher` over the review's
:class:`~codeward.engines.contained.project_sandbox.ProjectSandbox`: the project read-only with its secrets covered,
nothing of the host's but ``/usr`` and the analyzer's own installation visible, no network, the
run bounded. An analyzer reads its configuration (``extend = "/etc/shadow"``, ``extend =
".env"``...) in there, where such files do not exist or are empty. Runs start in a private,
empty working directory (so no analyzer picks up a configuration file by accident); the files
codeward writes for an analyzer (mypy's rewritten configuration) are read from there too.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from codeward.config.review import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, ReviewSettings
from codeward.engines.contained.project_sandbox import BoxLauncher, Completed, Launcher, ProjectSandbox
from codeward.kernel.result import ErrorKind, Result

ANALYZER_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1"}
TIMEOUT_HINT = ("Raise the limit (codeward review --timeout SECONDS) or analyze fewer files (a subdirectory, or "
                "include/exclude patterns).")
__all__ = ["ANALYZER_ENV", "DEFAULT_TIMEOUT_SECONDS", "MAX_TIMEOUT_SECONDS", "TIMEOUT_HINT", "BoxLauncher",
           "Completed", "Launcher", "ReviewSettings", "analyzer_launcher", "locate"]


def analyzer_launcher(box: ProjectSandbox, private: Path, memory_mb: int) -> BoxLauncher:
    """How the review runs its analyzers: in ``box`` (the review's sandbox), the private directory
    visible read-only."""
    return BoxLauncher(box, ro_binds=(str(private),), memory_mb=memory_mb, env=ANALYZER_ENV,
                       timeout_hint=TIMEOUT_HINT)


def locate(name: str, config: ReviewSettings) -> Result[str]:
    """The executable for analyzer ``name``: configured, beside the interpreter, or on PATH."""
    configured = config.executables.get(name)
    if configured is not None:
        if "/" not in configured:  # a program name: look it up on PATH
            configured = shutil.which(configured) or configured
        if os.access(configured, os.X_OK) and Path(configured).is_file():
            return Result.success(configured)
        return Result.fail(ErrorKind.UNAVAILABLE, f"{name} is configured as {configured!r}, which is not an "
                           "executable file", f"Install {name} there or remove the setting to use the one "
                           "installed with codeward.", data="")
    beside = Path(sys.executable).parent / name
    if os.access(beside, os.X_OK) and beside.is_file():
        return Result.success(str(beside))
    found = shutil.which(name)
    if found:
        return Result.success(found)
    return Result.fail(ErrorKind.UNAVAILABLE, f"{name} is not installed (looked next to {sys.executable} "
                       "and on PATH)", f"Install it with `pip install {name}` in codeward's environment "
                       "(it is a codeward dependency), or drop this analysis type.", data="")
