"""Finding analyzer executables and running them in the project's sandbox.

Analyzers are separate programs (ruff, mypy, bandit, radon, vulture, lizard, shellcheck,
cppcheck, Biome), found in the interpreter's own environment first (the directory next to
``sys.executable``), then on ``PATH``. Each runs through a :class:`Launcher`; the one codeward
uses is :class:`BoxLauncher`: the review's :class:`~codeward.contained.ProjectSandbox`, where the
project is read-only with its secrets covered, nothing of the host's but ``/usr`` and the
analyzer's own installation is visible, there is no network and the run is bounded. An
analyzer reads its configuration (``extend = "/etc/shadow"``, ``extend = ".env"``...) in there,
where such files do not exist or are empty. Runs start in a private, empty working directory
(so no analyzer picks up a configuration file by accident); the files codeward writes for an
analyzer (mypy's rewritten configuration) are read from there too.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from codeward.coding.sandbox import Status
from codeward.config.review import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, ReviewSettings
from codeward.result import ErrorKind, Result

if TYPE_CHECKING:
    from codeward.contained import ProjectSandbox

STDERR_TAIL_CHARS = 600
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
"""An analyzer's report on a large project is long (mypy's JSON, ruff's): kept whole up to this."""
SYSTEM_PREFIXES = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/")
"""Visible in every sandbox already (read-only)."""
ANALYZER_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1"}
__all__ = ["DEFAULT_TIMEOUT_SECONDS", "MAX_TIMEOUT_SECONDS", "BoxLauncher", "Completed", "Launcher",
           "ReviewSettings", "installation_of", "locate"]


@dataclass(frozen=True, slots=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str

    def stderr_tail(self) -> str:
        text = self.stderr.strip()
        return text if len(text) <= STDERR_TAIL_CHARS else "..." + text[-STDERR_TAIL_CHARS:]


class Launcher(Protocol):
    """Runs one analyzer command to completion, bounded; an error result when it could not."""

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float, cancelled: threading.Event) -> Result[Completed]:
        ...


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


@dataclass(frozen=True)
class BoxLauncher:
    """Runs analyzers in the review's project sandbox (read-only, secrets covered, no network),
    with the private directory and each analyzer's installation visible read-only."""

    box: ProjectSandbox
    private: Path
    memory_mb: int

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float, cancelled: threading.Event) -> Result[Completed]:
        from codeward.contained import Program

        name = Path(argv[0]).name
        if cancelled.is_set():
            return Result.fail(ErrorKind.TIMEOUT, f"{name} was cancelled", data=None)
        program = Program(argv=list(argv), timeout_s=timeout, memory_mb=self.memory_mb, max_processes=256,
                          env=ANALYZER_ENV, workdir=str(cwd),
                          ro_binds=[str(self.private), *installation_of(argv[0], self.box.ctx.workspace.roots)],
                          file_size_mb=64, open_files=1024, max_output_bytes=MAX_OUTPUT_BYTES,
                          report_progress=False)
        ran = self.box.run(program, cancelled)
        if not ran.ok or ran.data is None:
            refused = ran.errors[0]
            return Result.fail(refused.kind, refused.message, refused.hint, data=None)
        result = ran.data.result
        if ran.data.cancelled:
            return Result.fail(ErrorKind.TIMEOUT, f"{name} was cancelled", data=None)
        if result.status is Status.TIMEOUT:
            return Result.fail(ErrorKind.TIMEOUT, f"{name} took longer than {timeout:g} s and was stopped",
                               "Raise the limit (codeward review --timeout SECONDS) or analyze fewer files (a "
                               "subdirectory, or include/exclude patterns).", data=None)
        if result.status is Status.SETUP_ERROR:
            return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start {name} in the sandbox: {result.error_message}",
                               "Check that the analyzer is installed and executable; `codeward doctor` checks "
                               "the sandbox.", data=None)
        if result.stdout_truncated or result.limit_hit is not None:
            problem = result.error_message or f"its output passed {MAX_OUTPUT_BYTES:,} bytes"
            return Result.fail(ErrorKind.TOO_LARGE, f"{name} was stopped: {problem}",
                               "Analyze fewer files at once (a subdirectory, or include/exclude patterns).",
                               data=None)
        code = result.exit_code if result.exit_code is not None else -1
        return Result.success(Completed(code, result.stdout, result.stderr))


def installation_of(executable: str, roots: Iterable[Path] = ()) -> list[str]:
    """The folders an analyzer needs to be visible to run: its installation (a virtualenv, a
    ``node_modules``) and its interpreter's, found from the executable, its link target and its
    ``#!`` line. Nothing under ``/usr`` (always visible), never a folder as wide as ``/``, a
    top-level folder, a home folder or one holding a workspace root (then only the executable's
    own folder)."""
    found: list[str] = []
    held = tuple(roots)
    for path in _program_paths(executable):
        folder = _installation_folder(path, held)
        if folder is not None and str(folder) not in found:
            found.append(str(folder))
    return found


def _program_paths(executable: str) -> list[Path]:
    """The executable, where its link leads, and the interpreter its ``#!`` line names (likewise)."""
    paths: list[Path] = []
    pending = [Path(executable)]
    while pending and len(paths) < 8:
        path = pending.pop()
        real = Path(os.path.realpath(path))
        for candidate in (path, real):
            if candidate not in paths:
                paths.append(candidate)
        interpreter = _shebang(real)
        if interpreter is not None and Path(interpreter) not in paths:
            pending.append(Path(interpreter))
    return paths


def _shebang(path: Path) -> str | None:
    """The program a script's ``#!`` line runs (``/usr/bin/env node`` → ``node`` on PATH), if any."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[-1])
    return words[0]


def _installation_folder(path: Path, roots: tuple[Path, ...]) -> Path | None:
    text = str(path)
    if text.startswith(SYSTEM_PREFIXES) or not path.is_absolute():
        return None
    parts = path.parts
    if "node_modules" in parts:
        folder = Path(*parts[:parts.index("node_modules") + 1])
    elif path.parent.name == "bin":
        folder = path.parent.parent
    else:
        folder = path.parent
    return path.parent if _too_wide(folder, roots) else folder


def _too_wide(folder: Path, roots: tuple[Path, ...]) -> bool:
    """A folder that holds far more than one installation: ``/``, a top-level folder, a home, an
    ancestor of a workspace root (it would show the project's neighbours)."""
    if len(folder.parts) <= 2 or any(root != folder and root.is_relative_to(folder) for root in roots):
        return True
    homes = {Path.home()}
    with contextlib.suppress(OSError):
        homes.update(Path(entry.pw_dir) for entry in pwd.getpwall())
    return folder in homes
