"""Commit named paths through the hardened git: no hook, no signing program, no filter runs.

``git add -A`` then ``git commit --only`` of exactly the paths asked for — whatever else is
staged stays staged and out of the commit — with the workspace's protected files excluded by
pathspec, so a folder named whole never sweeps a secret in. If the commit fails, the index is
put back as it was, so a refused commit leaves nothing staged that was not before.

The author is the repository's configured identity, else the user's own git identity (only
``user.name`` and ``user.email`` are read from their configuration file; nothing else of it).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.files.textfile import MAX_TEXT_FILE_BYTES, decode
from codeward.engines.git.diff_sections import withhold
from codeward.engines.git.log import ChangedFile
from codeward.engines.git.repository import EMPTY_TREE, Repository
from codeward.engines.git.status import StatusEntry, read_status
from codeward.kernel.result import ErrorKind, Result

MAX_PREVIEW_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Committed:
    commit: str
    branch: str
    files: list[ChangedFile]
    withheld: int


def pathspec(repository: Repository, paths: list[Path]) -> list[str]:
    """``--``, each path literally, and the protected-file excludes."""
    chosen = [":(top)" if p == repository.top else f":(top,literal){repository.relative(p)}" for p in paths]
    return ["--", *chosen, *repository.protected_pathspec()]


def pending(repository: Repository, paths: list[Path]) -> Result[list[StatusEntry]]:
    """What a commit of ``paths`` would take: their changed, staged and untracked entries."""
    entries: dict[str, StatusEntry] = {}
    for path in paths:
        read = read_status(repository, path)
        if not read.ok:
            return read.cast([])
        for entry in read.data.entries:
            if entry.kind != "ignored":
                entries.setdefault(entry.path, entry)
    return Result.success(list(entries.values()))


def preview_diff(repository: Repository, paths: list[Path], entries: list[StatusEntry]) -> str:
    """The unified diff the commit would record (tracked changes, then new files), protected files withheld."""
    head = repository.run(["rev-parse", "--verify", "--quiet", "HEAD^{tree}"])
    base = head.data.stdout.strip() if head.ok and head.data.returncode == 0 else EMPTY_TREE
    ran = repository.run(["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--src-prefix=a/",
                          "--dst-prefix=b/", base, *pathspec(repository, paths)])
    text = ran.data.stdout if ran.ok and ran.data.returncode == 0 else ""
    for entry in entries:
        if entry.kind != "untracked":
            continue
        text += _new_file_diff(repository.top / entry.path, entry.path)
    kept, _ = withhold(text, repository.protected)
    return kept


def _new_file_diff(path: Path, rel: str) -> str:
    try:
        if os.path.islink(path) or path.stat().st_size > MAX_PREVIEW_FILE_BYTES:
            return f"diff --git a/{rel} b/{rel}\nnew file (not shown: a link or over 256 KiB)\n"
        decoded = decode(path.read_bytes()[:MAX_TEXT_FILE_BYTES])
    except OSError:
        return ""
    if decoded is None:
        return f"diff --git a/{rel} b/{rel}\nnew file mode 100644\nBinary file b/{rel} added\n"
    body = "".join(difflib.unified_diff([], decoded.text.splitlines(keepends=True), "/dev/null", f"b/{rel}"))
    return f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n{body}" + ("" if body.endswith("\n") else "\n")


def identity(repository: Repository) -> Result[list[str]]:
    """``-c user.name=... -c user.email=...`` when the repository does not set them itself; [] when it does."""
    configured = {key: _config(repository, ["config", "--get", key]) for key in ("user.name", "user.email")}
    if all(configured.values()):
        return Result.success([])
    home = Path(os.environ.get("HOME", "~")).expanduser()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    for file in (home / ".gitconfig", xdg / "git" / "config"):
        for key in configured:
            if not configured[key] and file.is_file():
                configured[key] = _config(repository, ["config", "--file", str(file), "--get", key])
    if not all(configured.values()):
        return Result.fail(ErrorKind.INVALID_INPUT, "git has no author identity for this repository (user.name and "
                           "user.email)", "Set it once: git config user.name 'Your Name' && git config user.email "
                           "you@example.com (in the repository, or --global).", data=[])
    return Result.success([arg for key, value in configured.items() for arg in ("-c", f"{key}={value}")])


def _config(repository: Repository, args: list[str]) -> str:
    ran = repository.run(args, drivers=False)
    return ran.data.stdout.strip() if ran.ok and ran.data.returncode == 0 else ""


def commit(repository: Repository, paths: list[Path], message: str, author: list[str]) -> Result[Committed]:
    """Stage ``paths`` (deletions included) and commit exactly them; the index is restored on failure."""
    index = repository.git_dir / "index"
    try:
        saved: bytes | None = index.read_bytes()
    except FileNotFoundError:
        saved = None
    except OSError as exc:
        return Result.fail(ErrorKind.PERMISSION, f"cannot read the git index: {exc.strerror}", data=None)
    spec = pathspec(repository, paths)
    added = repository.run([*author, "add", "-A", *spec])
    if added.ok and added.data.returncode == 0:
        done = repository.run([*author, "commit", "--only", "--no-verify", "--no-gpg-sign", "--quiet",
                               "--cleanup=strip", f"--message={message}", *spec])
        if done.ok and done.data.returncode == 0:
            return _committed(repository)
        failed = done
    else:
        failed = added
    _restore(index, saved)
    if not failed.ok:
        return failed.cast(None)  # type: ignore[arg-type]
    error = (failed.data.stderr.strip() or failed.data.stdout.strip()).splitlines()
    reason = error[0] if error else f"exit {failed.data.returncode}"
    return Result.fail(ErrorKind.CONFLICT, f"git refused the commit: {reason}",
                       "Nothing was committed and the index is as it was. Resolve what git names (a merge in "
                       "progress, a conflict), then try again.", data=None)


def _committed(repository: Repository) -> Result[Committed]:
    head = repository.run(["rev-parse", "HEAD"])
    branch = repository.run(["rev-parse", "--abbrev-ref", "HEAD"])
    commit_hash = head.data.stdout.strip() if head.ok else ""
    listed = repository.run(["diff-tree", "--no-commit-id", "--root", "-r", "-M", "--name-status", "-z",
                             commit_hash])
    files: list[ChangedFile] = []
    withheld = 0
    fields = listed.data.stdout.split("\0") if listed.ok else []
    index = 0
    while index < len(fields) - 1:
        state = fields[index]
        if not state:
            index += 1
            continue
        if state[0] in "RC" and index + 2 < len(fields):
            origin, target = fields[index + 1], fields[index + 2]
            index += 3
        else:
            origin, target = "", fields[index + 1]
            index += 2
        if repository.protected(target) or (origin and repository.protected(origin)):
            withheld += 1
            continue
        files.append(ChangedFile({"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied",
                                  "T": "type changed"}.get(state[0], state), target, origin))
    return Result.success(Committed(commit_hash, branch.data.stdout.strip() if branch.ok else "", files, withheld))


def _restore(index: Path, saved: bytes | None) -> None:
    """Put the index back as it was before the failed commit."""
    try:
        if saved is None:
            index.unlink(missing_ok=True)
            return
        temporary = index.with_name("index.codeward-restore")
        temporary.write_bytes(saved)
        os.replace(temporary, index)
    except OSError:
        pass
