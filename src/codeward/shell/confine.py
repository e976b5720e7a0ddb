"""What a sandboxed script may see and change: the workspace as bind mounts.

The roots (and explicitly allowed files) are bound read-write at their own paths. Inside
them, three things are kept as the workspace gate keeps them for every other tool:

- files the workspace blacklists (``.env``, keys, credentials) are covered by empty
  stand-ins, so ``cat .env`` in a script reads nothing;
- ``.git/hooks`` and ``.git/config`` stay read-only — they run code on the user's next git
  command *outside* the sandbox — while the rest of ``.git`` stays writable so ``git commit``
  works;
- the shell log directory stays read-only, so a script cannot rewrite its own record.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from codeward.workspace import HARD_BLACKLIST_NAMES, HARD_BLACKLIST_SUFFIX, Workspace

MAX_SCANNED_ENTRIES = 200_000
GIT_PROTECTED = (".git/hooks", ".git/config")
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass
class Confinement:
    """Bind lists for one sandboxed run, and notes on what was covered."""

    writable: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def confine(workspace: Workspace, hide_secrets: bool, extra_protected: list[Path]) -> Confinement:
    """The binds that give a script the workspace, minus its secrets and git's executable parts."""
    plan = Confinement()
    plan.writable = [str(root) for root in workspace.roots]
    for tracked in sorted(workspace.allowed_files):
        if tracked.is_file() and not under_a_root(workspace, tracked) and not workspace.blacklist_reason(tracked):
            plan.writable.append(str(tracked))
    for root in workspace.roots:
        for relative in GIT_PROTECTED:
            candidate = root / relative
            if candidate.exists() and not candidate.is_symlink():
                plan.protected.append(str(candidate))
    plan.protected += [str(p) for p in extra_protected if p.exists()]
    if hide_secrets:
        hidden, complete = blacklisted_entries(workspace)
        plan.hidden = [str(p) for p in hidden]
        if hidden:
            shown = ", ".join(workspace.display(p) for p in hidden[:5]) + (" ..." if len(hidden) > 5 else "")
            plan.notes.append(f"hidden from the script (blacklisted secrets, read as empty): {shown}")
        if not complete:
            plan.notes.append(f"WARNING: the secret scan stopped after {MAX_SCANNED_ENTRIES} entries; "
                              "blacklisted files beyond were not hidden")
    return plan


def under_a_root(workspace: Workspace, path: Path) -> bool:
    return any(path == root or path.is_relative_to(root) for root in workspace.roots)


def blacklisted_entries(workspace: Workspace) -> tuple[list[Path], bool]:
    """Files and directories under the roots that the workspace blacklists (not descending
    into a blacklisted directory), and whether the scan covered everything.

    A cheap pre-filter (the globs' include patterns as one regex, the protected names) picks
    candidates; :meth:`Workspace.blacklist_reason` has the final word on each.
    """
    candidate = _prefilter(workspace.blacklist_globs)
    found: list[Path] = []
    scanned = 0
    for root in workspace.roots:
        prefix = len(str(root).rstrip("/")) + 1
        pending = [str(root)]
        while pending:
            directory = pending.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                scanned += 1
                if scanned > MAX_SCANNED_ENTRIES:
                    return sorted(found), False
                if entry.is_symlink():
                    continue
                if candidate(entry.name, entry.path[prefix:]) and workspace.blacklist_reason(Path(entry.path)):
                    found.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False) and entry.name not in SKIPPED_DIRS:
                    pending.append(entry.path)
    return sorted(found), True


def _prefilter(globs: tuple[str, ...]) -> Callable[[str, str], bool]:
    """A test that is true for every blacklisted (name, relative path), and for few others."""
    spec = pathspec.PathSpec.from_lines("gitignore", globs)
    sources = [p.regex.pattern for p in spec.patterns if p.include and p.regex is not None]
    try:
        combined = re.compile("|".join(f"(?:{s})" for s in sources)) if sources else None
    except re.error:
        return lambda name, relative: True

    def test(name: str, relative: str) -> bool:
        if not name.isascii() or not relative.isascii():
            return True  # normalisation may change it: let the workspace decide
        folded = name.casefold()
        if folded in HARD_BLACKLIST_NAMES or folded.endswith(HARD_BLACKLIST_SUFFIX):
            return True
        return combined is not None and combined.search(relative) is not None

    return test
