"""Commits read as data: ``git log`` with an exact format, and the files each commit changed.

Each commit is one record between control characters git never puts in a hash, a name or a
date (``%x1e`` before, ``%x1f`` between fields, ``%x1d`` before the changed files), so a
message cannot shift the fields of the next. Changed files come from ``--name-status``; a
protected one is left out (:meth:`Repository.protected`) and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.git.repository import Repository
from codeward.kernel.result import ErrorKind, Result

MAX_BODY_CHARS = 4_000
FORMAT = "%x1e%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%P%x1f%s%x1f%b%x1d"
FILE_STATES = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed",
               "U": "unmerged"}


@dataclass(frozen=True)
class ChangedFile:
    status: str
    path: str
    from_path: str = ""


@dataclass
class Commit:
    hash: str
    short: str
    author: str
    email: str
    date: str
    parents: list[str]
    subject: str
    body: str
    files: list[ChangedFile] = field(default_factory=list)
    files_withheld: int = 0


def read_log(repository: Repository, path: Path, revision: str, *, limit: int, skip: int = 0, files: bool = False,
             author: str = "", grep: str = "") -> Result[tuple[list[Commit], bool]]:
    """Up to ``limit`` commits reachable from ``revision`` (a commit or a range) touching ``path``;
    and whether there are more."""
    args = ["log", f"--format={FORMAT}", f"--max-count={limit + 1}", f"--skip={skip}", "--no-color",
            "--no-ext-diff", "--no-textconv", "--no-mailmap"]
    if files:
        args += ["--name-status", "--find-renames", "--diff-merges=first-parent"]
    if author:
        args.append(f"--author={author}")
    if grep:
        args += ["--regexp-ignore-case", f"--grep={grep}"]
    # the whole history: no pathspec, or the excludes would drop commits that touched only a secret (their
    # messages are not secret; the secret's name is left out of their files below)
    args += ["--end-of-options", revision, *(["--"] if path == repository.top else repository.pathspec(path))]
    ran = repository.run(args)
    if not ran.ok:
        return ran.cast(([], False))
    if ran.data.returncode != 0:
        error = ran.data.first_error_line()
        if not has_commits(repository):
            return Result(data=([], False), notes=["[the repository has no commits yet]"])
        if "bad revision" in error or "unknown revision" in error or "ambiguous argument" in error:
            return Result.fail(ErrorKind.NOT_FOUND, f"git does not know revision {revision!r}",
                               "List revisions with git_log (revision='HEAD') or name a branch, tag or commit hash.",
                               data=([], False))
        if "does not have any commits" in error:
            return Result.success(([], False))
        return Result.fail(ErrorKind.INVALID_INPUT if ("regex" in error or "regular expression" in error)
                           else ErrorKind.INTERNAL, f"git log failed: {error}",
                           "Check author and grep (regular expressions)." if (author or grep) else "",
                           data=([], False))
    commits = parse_log(ran.data.stdout, repository.protected)
    return Result.success((commits[:limit], len(commits) > limit))


def read_commit(repository: Repository, revision: str) -> Result[Commit]:
    """One commit's metadata (the revision must name a commit)."""
    ran = repository.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"])
    if not ran.ok:
        return ran.cast(None)  # type: ignore[arg-type]
    if ran.data.returncode != 0:
        if not has_commits(repository):
            return Result.fail(ErrorKind.NOT_FOUND, "the repository has no commits yet",
                               "Commit something first (git_commit); git_status shows what there is.", data=None)
        return Result.fail(ErrorKind.NOT_FOUND, f"git does not know revision {revision!r} as a commit",
                           "Name a commit: HEAD, HEAD~2, a branch, a tag or a hash (git_log lists them).", data=None)
    commit = ran.data.stdout.strip()
    shown = repository.run(["log", "-1", f"--format={FORMAT}", "--no-color", "--no-mailmap", "--end-of-options",
                            commit])
    if not shown.ok:
        return shown.cast(None)  # type: ignore[arg-type]
    parsed = parse_log(shown.data.stdout, repository.protected)
    if shown.data.returncode != 0 or not parsed:
        return Result.fail(ErrorKind.INTERNAL, f"git log failed: {shown.data.first_error_line()}", data=None)
    return Result.success(parsed[0])


def has_commits(repository: Repository) -> bool:
    """Whether HEAD names a commit (not in a repository before its first commit)."""
    ran = repository.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    return ran.ok and ran.data.returncode == 0


def parse_log(output: str, protected: Callable[[str], bool]) -> list[Commit]:
    """The records :data:`FORMAT` (with optional ``--name-status`` lines) produced."""
    commits: list[Commit] = []
    for record in output.split("\x1e")[1:]:
        head, _, changed = record.partition("\x1d")
        parts = head.split("\x1f")
        if len(parts) < 8:
            continue
        full, short, author, email, date, parents, subject = parts[:7]
        body = "\x1f".join(parts[7:]).strip()
        if len(body) > MAX_BODY_CHARS:
            body = body[:MAX_BODY_CHARS] + f"\n[... {len(body) - MAX_BODY_CHARS:,} more characters]"
        commit = Commit(full, short, author, email, date, parents.split(), subject, body)
        for line in changed.strip("\n").splitlines():
            fields = line.split("\t")
            if len(fields) < 2 or not fields[0]:
                continue
            state = FILE_STATES.get(fields[0][0], fields[0])
            target, origin = (fields[2], fields[1]) if len(fields) >= 3 else (fields[1], "")
            if protected(target) or (origin and protected(origin)) or target.startswith('"'):
                commit.files_withheld += 1
                continue
            commit.files.append(ChangedFile(state, target, origin))
        commits.append(commit)
    return commits
