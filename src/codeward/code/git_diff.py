"""``git diff`` for a path, run so that the repository cannot run code or take options.

Revisions are checked before git sees them: nothing that starts with ``-`` (it would be
read as an option such as ``--output=FILE``), only the characters revisions use, and
``--end-of-options`` goes before them anyway. Git itself is told not to run anything a
repository's configuration could name during a diff — external diff drivers, textconv
filters, clean/smudge filters, an fsmonitor hook — and not to take optional locks, so a
read stays a read. The process gets a timeout and is killed with its whole group.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codeward.result import ErrorKind, Result

REVISION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./@{}~^+-]{0,199}$")
TIMEOUT_SECONDS = 30.0
SAFE_CONFIG = (
    "-c", "core.fsmonitor=false",
    "-c", "core.quotepath=off",
    "-c", "diff.external=",
    "-c", "color.ui=false",
    "-c", "core.pager=cat",
)


@dataclass(frozen=True, slots=True)
class GitOutput:
    returncode: int
    stdout: str
    stderr: str


def check_revision(value: str, param: str) -> Result[str]:
    """A revision argument, or an error saying why it is refused."""
    text = value.strip()
    if text.startswith("-"):
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {value!r} starts with '-', so git would read it as an "
                           "option", "Give a revision such as HEAD, HEAD~2, main, v1.0 or a commit hash.", data="")
    if not REVISION.match(text) or text.count("..") > 1:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} {value!r} contains characters a revision cannot have",
                           "Use letters, digits and . _ / - ~ ^ @ { } only, e.g. HEAD~1, main, origin/main, "
                           "a1b2c3d.", data="")
    return Result.success(text)


def run_git(args: list[str], cwd: Path, timeout: float = TIMEOUT_SECONDS) -> Result[GitOutput]:
    """Run git with the safe configuration; the whole process group dies on timeout."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"})
    try:
        process = subprocess.Popen(["git", *SAFE_CONFIG, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        return Result.fail(ErrorKind.UNAVAILABLE, "git is not installed", "Install git (e.g. apt-get install git).")
    except OSError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot start git: {exc.strerror}")
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        process.communicate()
        return Result.fail(ErrorKind.TIMEOUT, f"git {args[0]} did not finish within {timeout:.0f}s",
                           "Narrow the path or the revision range.")
    return Result.success(GitOutput(process.returncode, out.decode("utf-8", "replace"),
                                    err.decode("utf-8", "replace")))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def repository_top(directory: Path) -> Result[Path]:
    """The work tree containing ``directory``, or a clear error when there is none."""
    shown = run_git(["rev-parse", "--show-toplevel"], directory)
    if not shown.ok:
        return shown.cast(directory)
    output = shown.data
    if output.returncode != 0:
        message = output.stderr.strip()
        if "dubious ownership" in message:
            return Result.fail(ErrorKind.PERMISSION, f"git refuses the repository at {directory}: it belongs to "
                               "another user", "Mark it safe with `git config --global --add safe.directory "
                               f"{directory}` if you trust it.", data=directory)
        return Result.fail(ErrorKind.INVALID_INPUT, f"{directory} is not inside a git repository",
                           "Run get_git_diff on a path inside a git work tree (git init creates one).",
                           data=directory)
    return Result.success(Path(output.stdout.strip()))


def filter_overrides(top: Path) -> list[str]:
    """``-c`` options that disable every clean/smudge/process filter the repository configures."""
    listed = run_git(["config", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"], top)
    if not listed.ok or listed.data.returncode not in (0, 1):
        return []
    options: list[str] = []
    for key in listed.data.stdout.split():
        options.extend(["-c", f"{key}="])
    return options


def diff(path: Path, base: str, head: str, context: int = 3) -> Result[str]:
    """The unified diff of ``path`` between two revisions (``head`` empty: the work tree)."""
    directory = path if path.is_dir() else path.parent
    top = repository_top(directory)
    if not top.ok:
        return top.cast("")
    args = [*filter_overrides(top.data), "diff", "--no-ext-diff", "--no-textconv", "--no-color",
            f"--unified={context}", "--end-of-options"]
    args.extend(rev for rev in (base, head) if rev)
    args.extend(["--", str(path)])
    ran = run_git(args, directory)
    if not ran.ok:
        return ran.cast("")
    output = ran.data
    if output.returncode != 0:
        message = output.stderr.strip().splitlines()[0] if output.stderr.strip() else f"exit {output.returncode}"
        if "unknown revision" in message or "bad revision" in message or "bad object" in message:
            return Result.fail(ErrorKind.NOT_FOUND, f"git does not know the revision: {message}",
                               "List revisions with `git log --oneline` or `git branch -a`; HEAD is the last commit.",
                               data="")
        if "outside repository" in message:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{path} is outside the git work tree {top.data}",
                               "Pass a path inside the repository.", data="")
        return Result.fail(ErrorKind.INTERNAL, f"git diff failed: {message}", data="")
    return Result.success(output.stdout)
