"""What a sandboxed script may see and change: the workspace, overlaid, minus its secrets.

The roots (and explicitly allowed files) are shown writable at their own paths, but through
overlays (:mod:`codeward.engines.sandbox.overlay`): nothing the script writes reaches the
project until :mod:`codeward.engines.contained.write_back` has passed each change through the workspace's
write checks, so ``.git`` metadata, codeward's configuration and its shell log cannot be
changed, renamed away or planted from inside. Files the workspace blacklists (``.env``,
keys, credentials — the one list, :func:`codeward.kernel.workspace.secret_paths`) are covered by
empty stand-ins, so ``cat .env`` in a script reads nothing; the git directories the same walk
passes are listed, so that the runner can hide the object store of one whose history holds a
secret (:mod:`codeward.engines.git.history`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.contained.secret_index import SecretIndex, walk_secrets
from codeward.engines.git.history import HistoryVerdict, KnownVerdicts, check_history
from codeward.engines.git.repository import alternates
from codeward.kernel import state_dir
from codeward.kernel.workspace import SECRET_SCAN_LIMIT, Workspace

STORE_PARTS = ("objects", "rr-cache")
"""What of a git directory holds file contents: the object store, and rerere's recorded conflicts
(with the stores it borrows from, ``objects/info/alternates``, when they lie inside the roots)."""
ALLOW_HINT = ("The operator can allow it with `[shell] allow_secret_history = true` in codeward.toml, or remove "
              "the files from the history (e.g. `git filter-repo --invert-paths --path .env`, then "
              "`git reflog expire --expire=now --all && git gc --prune=now`).")


@dataclass
class Confinement:
    """What one sandboxed run is shown, and notes on what was covered."""

    directories: list[Path] = field(default_factory=list)
    """Roots shown writable through an overlay (a root inside another is shown by that one)."""
    files: list[Path] = field(default_factory=list)
    """Tracked files outside the roots, shown writable through a private copy."""
    hidden: list[str] = field(default_factory=list)
    secrets: list[Path] = field(default_factory=list)
    """The secrets covered (files and folders the workspace blacklists, keys found by content)."""
    git_dirs: list[Path] = field(default_factory=list)
    """Git directories under the roots (found while looking for secrets)."""
    watched: bool = False
    """The secrets came from a list kept by file events (local filesystems): see ``SecretScan.watched``."""
    notes: list[str] = field(default_factory=list)


def confine(workspace: Workspace, hide_secrets: bool, secrets: SecretIndex | None = None) -> Confinement:
    """The workspace as a script sees it: overlaid roots and files, secrets covered (the list kept
    by ``secrets``, a server's index of this workspace, when given; else a fresh walk)."""
    plan = Confinement()
    roots = sorted(workspace.roots, key=lambda p: len(p.parts))
    for root in roots:
        if not any(root != other and root.is_relative_to(other) for other in plan.directories):
            plan.directories.append(root)
    for tracked in sorted(workspace.allowed_files):
        if tracked.is_file() and not under_a_root(workspace, tracked) and not workspace.blacklist_reason(tracked):
            plan.files.append(tracked)
    private = [p for p in workspace.private_dirs if under_a_root(workspace, p) and p.exists()]
    plan.hidden = [str(p) for p in private]  # codeward's per-user data (signing keys): always, whatever is asked
    if hide_secrets:
        scan = secrets.scan() if secrets is not None else walk_secrets(workspace)
        hidden, complete = scan.secrets, scan.complete
        plan.git_dirs += scan.git_dirs
        plan.watched = scan.watched
        plan.secrets = hidden
        plan.hidden += [str(p) for p in hidden if not any(_inside(p, d) for d in private)]
        if hidden:
            shown = ", ".join(workspace.display(p) for p in hidden[:5]) + (" ..." if len(hidden) > 5 else "")
            plan.notes.append(f"hidden from the script (blacklisted secrets, read as empty): {shown}")
        if not complete:
            plan.notes.append(f"WARNING: the secret scan stopped after {SECRET_SCAN_LIMIT} entries; "
                              "blacklisted files beyond were not hidden")
    return plan


def under_a_root(workspace: Workspace, path: Path) -> bool:
    return any(_inside(path, root) for root in workspace.roots)


def _inside(path: Path, folder: Path) -> bool:
    """``path.is_relative_to(folder)`` for absolute, normal paths, compared as text (this runs before every
    shell run; pathlib's comparison costs about 20 us)."""
    text, base = str(path), str(folder)
    return text == base or text.startswith(base.rstrip("/") + "/")


def hide_secret_history(workspace: Workspace, plan: Confinement, known: KnownVerdicts | None = None
                        ) -> list[HistoryVerdict]:
    """Hide the object store of every repository whose history holds a secret (or could not be
    checked), with a note saying which and why; the verdict of every repository checked (``known``:
    the server's answers so far, see :class:`~codeward.engines.git.history.KnownVerdicts`)."""
    verdicts: list[HistoryVerdict] = []
    for git_dir in plan.git_dirs:
        if _common_dir(git_dir) in plan.git_dirs:
            continue  # a linked worktree's: its history and store are its common directory's, checked there
        root = next((r for r in workspace.roots if _inside(git_dir, r)), None)
        verdict = check_history(workspace, git_dir, plan.secrets, state_dir.of(root) if root else None, known,
                                events=plan.watched)
        verdicts.append(verdict)
        if not verdict.exposes:
            continue
        stores = [git_dir / part for part in STORE_PARTS] + alternates(git_dir)
        plan.hidden += [str(store) for store in stores if store.is_dir() and under_a_root(workspace, store)]
        where = workspace.display(git_dir)
        if verdict.problem:
            why = f"its history could not be checked for secrets ({verdict.problem})"
        else:
            more = f" and {verdict.count - len(verdict.secrets)} more" if verdict.count > len(verdict.secrets) else ""
            why = (f"its history holds files the workspace keeps secret ({', '.join(verdict.secrets)}{more}), "
                   "which `git show` or `git cat-file` would print")
        plan.notes.append(f"git history unavailable: the object store of {where} is hidden from the script because "
                          f"{why}; git commands that read commits fail here (the work tree's files are as usual). "
                          + ALLOW_HINT)
    return verdicts


def _common_dir(git_dir: Path) -> Path | None:
    """The git directory a linked worktree's ``commondir`` names (None without one)."""
    try:  # plain os calls: this runs for every git directory before every shell run, and is mostly missing
        fd = os.open(os.path.join(git_dir, "commondir"), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            text = os.read(fd, 65536).decode("utf-8", "replace").strip()
        finally:
            os.close(fd)
    except OSError:
        return None
    return (git_dir / text).resolve() if text else None
