"""``git status`` read as data: the branch, its upstream, and each changed path — protected ones left out.

The porcelain v2 format (``-z``) is git's stable, machine-readable status: headers for the
branch, then one record per path with its staged (index) and unstaged (work tree) state. The
pathspec excludes keep blacklisted files out; every path git prints is checked again
(:meth:`Repository.protected`), so a secret's name never reaches the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.git.repository import Repository
from codeward.kernel.result import ErrorKind, Result

STATES = {".": "", "M": "modified", "T": "type changed", "A": "added", "D": "deleted", "R": "renamed",
          "C": "copied", "U": "unmerged"}


@dataclass(frozen=True)
class StatusEntry:
    path: str
    """Relative to the repository's top."""
    kind: str
    """changed, renamed, unmerged, untracked or ignored."""
    staged: str = ""
    unstaged: str = ""
    from_path: str = ""


@dataclass
class Status:
    branch: str = ""
    """The branch's name, "(detached)" on a detached HEAD."""
    commit: str = ""
    """The commit HEAD names, "" before the first commit."""
    upstream: str = ""
    ahead: int = 0
    behind: int = 0
    entries: list[StatusEntry] = field(default_factory=list)
    withheld: int = 0


def read_status(repository: Repository, path: Path, untracked: bool = True) -> Result[Status]:
    """The status of ``path`` (a resolved path in the repository's work tree)."""
    args = ["status", "--porcelain=v2", "--branch", "-z", "--find-renames",
            f"--untracked-files={'all' if untracked else 'no'}", "--ignore-submodules=dirty",
            *repository.pathspec(path)]
    ran = repository.run(args)
    if not ran.ok:
        return ran.cast(Status())
    if ran.data.returncode != 0:
        return Result.fail(ErrorKind.INTERNAL, f"git status failed: {ran.data.first_error_line()}", data=Status())
    return Result.success(parse_status(ran.data.stdout, repository.protected))


def parse_status(output: str, protected: Callable[[str], bool]) -> Status:
    """Porcelain v2 ``-z`` output as a :class:`Status`; ``protected(rel)`` says which paths to leave out."""
    status = Status()
    fields = output.split("\0")
    index = 0
    while index < len(fields):
        record = fields[index]
        index += 1
        if not record:
            continue
        if record.startswith("# "):
            _header(status, record[2:])
            continue
        kind = record[:2]
        entry: StatusEntry | None = None
        if kind == "1 ":
            parts = record.split(" ", 8)
            if len(parts) == 9:
                entry = StatusEntry(parts[8], "changed", STATES.get(parts[1][0], parts[1][0]),
                                    STATES.get(parts[1][1], parts[1][1]))
        elif kind == "2 ":
            parts = record.split(" ", 9)
            origin = fields[index] if index < len(fields) else ""
            index += 1
            if len(parts) == 10:
                entry = StatusEntry(parts[9], "renamed", STATES.get(parts[1][0], parts[1][0]),
                                    STATES.get(parts[1][1], parts[1][1]), origin)
        elif kind == "u ":
            parts = record.split(" ", 10)
            if len(parts) == 11:
                entry = StatusEntry(parts[10], "unmerged", "unmerged", "unmerged")
        elif kind in ("? ", "! "):
            entry = StatusEntry(record[2:], "untracked" if kind == "? " else "ignored")
        if entry is None:
            status.withheld += 1  # a record this reader does not know: fail closed
            continue
        if protected(entry.path) or (entry.from_path and protected(entry.from_path)):
            status.withheld += 1
            continue
        status.entries.append(entry)
    return status


def _header(status: Status, header: str) -> None:
    key, _, value = header.partition(" ")
    if key == "branch.oid":
        status.commit = "" if value == "(initial)" else value
    elif key == "branch.head":
        status.branch = value
    elif key == "branch.upstream":
        status.upstream = value
    elif key == "branch.ab":
        ahead, _, behind = value.partition(" ")
        status.ahead, status.behind = _count(ahead), _count(behind)


def _count(text: str) -> int:
    try:
        return abs(int(text))
    except ValueError:
        return 0
