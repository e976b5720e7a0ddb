"""One hardened ``git`` process: nothing a repository (or the machine's git configuration) names runs.

Every git codeward starts goes through :func:`run_git`, which

* drops every ``GIT_*`` variable of its own environment (``GIT_DIR``, ``GIT_CONFIG_PARAMETERS``,
  ``GIT_ALTERNATE_OBJECT_DIRECTORIES``...) and sets only what it means: no system or global
  configuration (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), no prompts, no
  optional locks (a read stays a read), the C locale;
* pins the repository when the caller verified one (``GIT_DIR``, ``GIT_WORK_TREE``: a
  ``core.worktree`` in the repository's config cannot move the work tree elsewhere);
* overrides on the command line (which beats every configuration file) each setting that
  makes git run a program: ``core.fsmonitor``, ``core.hooksPath`` (no hooks), ``diff.external``,
  pagers and editors, signature programs, ``core.sshCommand``, transports; the per-driver
  commands (filters, textconv, external diff, merge drivers) are listed from the repository's
  configuration by :class:`~codeward.engines.git.repository.Repository` and emptied the same way;
* runs with a timeout, in its own process group, killed whole when it overruns.

Revisions a caller passes on are checked by :func:`check_revision` first: nothing that git
could read as an option.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeward.kernel.result import ErrorKind, Result

TIMEOUT_SECONDS = 30.0
REVISION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./@{}~^+-]{0,199}$")
HARDENING: tuple[str, ...] = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.untrackedCache=false",
    "-c", "core.quotepath=off",
    "-c", "core.pager=cat",
    "-c", "core.editor=false",
    "-c", "core.askPass=",
    "-c", "core.sshCommand=false",
    "-c", "core.gitProxy=",
    "-c", "core.alternateRefsCommand=",
    "-c", "credential.helper=",
    "-c", "diff.external=",
    "-c", "diff.submodule=short",
    "-c", "color.ui=false",
    "-c", "gpg.program=false",
    "-c", "gpg.ssh.program=false",
    "-c", "gpg.x509.program=false",
    "-c", "log.showSignature=false",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
    "-c", "sequence.editor=false",
    "-c", "protocol.allow=never",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "safe.directory=*",
)
"""Settings that would run a program, overridden for every git codeward runs.

``safe.directory=*``: git refuses repositories owned by another user because their
configuration could run commands as the reader; with every such setting emptied here that
danger is gone, and codeward verifies the repository's location itself (inside the roots).
"""
DRIVER_COMMANDS = re.compile(
    r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(textconv|command)|merge\..+\.driver)$", re.IGNORECASE)
"""Per-driver settings naming a program: each one the repository configures is emptied."""


@dataclass(frozen=True, slots=True)
class GitOutput:
    returncode: int
    stdout: str
    stderr: str

    def first_error_line(self) -> str:
        lines = self.stderr.strip().splitlines()
        return lines[0] if lines else f"exit {self.returncode}"


def check_revision(value: str, param: str) -> Result[str]:
    """A revision argument, or an error saying why it is refused (git never sees it as an option)."""
    text = value.strip()
    if text.startswith("-"):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {value!r} starts with '-', so git would read it as an "
                           "option", "Give a revision such as HEAD, HEAD~2, main, v1.0 or a commit hash.", data="")
    if not REVISION.match(text) or text.count("..") > 1:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {value!r} contains characters a revision cannot have",
                           "Use letters, digits and . _ / - ~ ^ @ { } only, e.g. HEAD~1, main, origin/main, "
                           "a1b2c3d.", data="")
    return Result.success(text)


def git_environment(git_dir: Path | None = None, work_tree: Path | None = None) -> dict[str, str]:
    """The environment of a hardened git: this process's, minus every ``GIT_*``, plus the safe settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
                "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "GIT_EDITOR": "false", "GIT_ATTR_NOSYSTEM": "1",
                "GIT_NO_REPLACE_OBJECTS": "1", "LC_ALL": "C"})
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    return env


def run_git(args: Sequence[str], cwd: Path, *, config: Sequence[str] = (), git_dir: Path | None = None,
            work_tree: Path | None = None, timeout: float = TIMEOUT_SECONDS, stdin: bytes | None = None
            ) -> Result[GitOutput]:
    """Run ``git <HARDENING> <config> <args>`` (``stdin`` fed to it, else nothing); the whole
    process group dies on timeout."""
    argv = ["git", *HARDENING, *config, *args]
    try:
        process = subprocess.Popen(argv, cwd=cwd, env=git_environment(git_dir, work_tree),
                                   stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        return Result.fail(ErrorKind.UNAVAILABLE, "git is not installed", "Install git (e.g. apt-get install git).")
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start git: {exc.strerror}")
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        process.communicate()
        command = next((a for a in args if not a.startswith("-")), "git")
        return Result.fail(ErrorKind.TIMEOUT, f"git {command} did not finish within {timeout:.0f}s",
                           "Narrow the path or the revision range.")
    return Result.success(GitOutput(process.returncode, out.decode("utf-8", "surrogateescape"),
                                    err.decode("utf-8", "replace")))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
