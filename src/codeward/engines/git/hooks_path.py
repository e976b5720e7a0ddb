"""Where the human's git looks for hooks: each ``core.hooksPath`` a repository is configured with.

A repository whose ``core.hooksPath`` names a folder in the work tree (``.githooks``, husky's
``.husky/_``, ``tools/hooks``) runs the scripts there on the next commit. codeward's workspace
treats that folder as a host-run path (:mod:`codeward.kernel.host_run`); this module tells it which
folder that is, reading the configuration as the human's git would — the repository's own
(``local`` and ``worktree`` scopes, includes followed) and the person's (``~/.gitconfig``, the
XDG file, the system file) — with codeward's hardened git (:func:`~codeward.engines.git.runner.run_git`:
reading configuration runs nothing it names). Every value counts, not only the one git would
pick last: a folder any of them names is asked about.

Answers are remembered per work tree while the files read keep their size and times (looked at
once every :data:`RECHECK_SECONDS` at most: a write-back asks for thousands of paths), and for
:data:`REREAD_SECONDS` at most (an included file may change on its own).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.git.runner import run_git

KEY = "core.hooksPath"
REREAD_SECONDS = 10.0
RECHECK_SECONDS = 1.0
READ_TIMEOUT = 10.0
_Signature = tuple[tuple[int, int, int], ...]


@dataclass
class _Known:
    signature: _Signature
    read: float
    checked: float
    folders: tuple[tuple[str, Path], ...]


class HooksPaths:
    """A :class:`codeward.kernel.host_run.HooksPathReader`: ``reader(top)`` → ``((value, folder), ...)``.

    Safe to share between threads (a race only reads twice) and to pickle (without its memo).
    """

    def __init__(self, home: Path | None = None) -> None:
        self.home = home
        """Whose git configuration counts (default: ``$HOME`` when asked)."""
        self._memo: dict[Path, _Known] = {}

    def __call__(self, top: Path) -> tuple[tuple[str, Path], ...]:
        now = time.monotonic()
        found = self._memo.get(top)
        if found is not None and now - found.checked < RECHECK_SECONDS:
            return found.folders
        signature = _signature(self._files(top))
        if found is not None and found.signature == signature and now - found.read < REREAD_SECONDS:
            found.checked = now
            return found.folders
        folders = tuple(self._read(top))
        if len(self._memo) > 1000:
            self._memo.clear()
        self._memo[top] = _Known(signature, now, now, folders)
        return folders

    def __getstate__(self) -> dict[str, object]:
        return {"home": self.home, "_memo": {}}

    def _home(self) -> Path:
        return self.home or Path(os.environ.get("HOME") or os.path.expanduser("~"))

    def _person_files(self) -> list[Path]:
        """The person's and the machine's git configuration files, as git finds them."""
        home = self._home()
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        return [home / ".gitconfig", xdg / "git" / "config", Path("/etc/gitconfig")]

    def _files(self, top: Path) -> list[Path]:
        """Every file whose change could change the answer (the repository's configuration included)."""
        dot_git = top / ".git"
        files = [dot_git, dot_git / "config", dot_git / "config.worktree"]
        git_dir = _gitfile_target(dot_git)
        if git_dir is not None:
            files += [git_dir / "config.worktree", git_dir / "commondir", _common_dir(git_dir) / "config"]
        return files + self._person_files()

    def _read(self, top: Path) -> list[tuple[str, Path]]:
        values: list[str] = []
        asked = run_git(["config", "--show-scope", "--includes", "--get-all", KEY], top, timeout=READ_TIMEOUT)
        if asked.ok and asked.data.returncode == 0:
            for line in asked.data.stdout.splitlines():
                scope, _, value = line.partition("\t")
                if scope != "command" and value:  # "command": codeward's own -c core.hooksPath=/dev/null
                    values.append(value)
        for file in self._person_files():
            if not file.is_file():
                continue
            read = run_git(["config", "--file", str(file), "--includes", "--get-all", KEY], top,
                           timeout=READ_TIMEOUT)
            if read.ok and read.data.returncode == 0:
                values += [line for line in read.data.stdout.splitlines() if line]
        found: list[tuple[str, Path]] = []
        for value in dict.fromkeys(values):
            for folder in _folders(value, top, self._home()):
                if (value, folder) not in found:
                    found.append((value, folder))
        return found


def _folders(value: str, top: Path, home: Path) -> list[Path]:
    """The folder a ``core.hooksPath`` value names (relative to the work tree, ``~`` the home), as
    written and as it resolves (a link to another folder makes both host-run)."""
    text = value.strip()
    if text == "~" or text.startswith("~/"):
        text = str(home) + text[1:]
    lexical = Path(os.path.normpath(text if os.path.isabs(text) else top / text))
    real = Path(os.path.realpath(lexical))
    return [lexical] if real == lexical else [lexical, real]


def _gitfile_target(dot_git: Path) -> Path | None:
    """The git directory a ``.git`` file (``gitdir: ...``) points at; None for a folder or no file."""
    try:
        if dot_git.is_dir() or not dot_git.is_file():
            return None
        text = dot_git.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    line = text.splitlines()[0] if text else ""
    if not line.startswith("gitdir:"):
        return None
    target = line[len("gitdir:"):].strip()
    return Path(os.path.normpath(target if os.path.isabs(target) else dot_git.parent / target))


def _common_dir(git_dir: Path) -> Path:
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return git_dir
    return Path(os.path.normpath(text if os.path.isabs(text) else git_dir / text)) if text else git_dir


def _signature(files: list[Path]) -> _Signature:
    stamps: list[tuple[int, int, int]] = []
    for file in files:
        try:
            info = os.stat(file)
        except OSError:
            stamps.append((0, 0, 0))
            continue
        stamps.append((info.st_mtime_ns, info.st_size, info.st_ino))
    return tuple(stamps)
