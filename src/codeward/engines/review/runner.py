"""Finding analyzer executables and running them as bounded subprocesses.

Analyzers are separate programs (ruff, mypy, bandit, radon, vulture, lizard), run from the
interpreter's own environment first (the directory next to ``sys.executable``), then from
``PATH``. Each run has a wall-clock timeout and honours cancellation; either kills the whole
process group. Runs happen in a private, empty working directory so that no analyzer picks
up a configuration file by accident and no cache is written into the project; the project's
own configuration is passed explicitly, after :mod:`.project_config` has checked it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeward.config.review import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, ReviewSettings
from codeward.kernel.result import ErrorKind, Result

POLL_SECONDS = 0.1
STDERR_TAIL_CHARS = 600
__all__ = ["DEFAULT_TIMEOUT_SECONDS", "MAX_TIMEOUT_SECONDS", "Completed", "ReviewSettings",
           "locate", "run"]
DROPPED_ENV = ("PYTHONPATH", "MYPYPATH", "PYTHONSTARTUP", "PYTHONHOME", "RUFF_CACHE_DIR", "RUFF_OUTPUT_FILE",
               "MYPY_CACHE_DIR", "BIOME_CONFIG_PATH", "SHELLCHECK_OPTS")


@dataclass(frozen=True, slots=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str

    def stderr_tail(self) -> str:
        text = self.stderr.strip()
        return text if len(text) <= STDERR_TAIL_CHARS else "..." + text[-STDERR_TAIL_CHARS:]


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


def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    cancelled: threading.Event,
) -> Result[Completed]:
    """Run ``argv`` to completion, killing its process group on timeout or cancellation."""
    if cancelled.is_set():
        return Result.fail(ErrorKind.TIMEOUT, f"{Path(argv[0]).name} was cancelled", data=None)
    env = {key: value for key, value in os.environ.items() if key not in DROPPED_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    try:
        process = subprocess.Popen(  # argv is built by codeward; no shell
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, text=True, encoding="utf-8", errors="replace",
        )
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start {argv[0]}: {exc.strerror}",
                           "Check that the analyzer is installed and executable.", data=None)
    deadline = time.monotonic() + timeout
    while True:
        try:
            stdout, stderr = process.communicate(timeout=POLL_SECONDS)
            return Result.success(Completed(process.returncode, stdout, stderr))
        except subprocess.TimeoutExpired:
            if cancelled.is_set():
                _kill(process)
                return Result.fail(ErrorKind.TIMEOUT, f"{Path(argv[0]).name} was cancelled", data=None)
            if time.monotonic() >= deadline:
                _kill(process)
                return Result.fail(ErrorKind.TIMEOUT, f"{Path(argv[0]).name} took longer than {timeout:g} s "
                                   "and was stopped", "Raise the limit (codeward review --timeout SECONDS) "
                                   "or analyze fewer files (a subdirectory, or include/exclude patterns).",
                                   data=None)


def _kill(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
