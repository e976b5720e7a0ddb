"""What a sandboxed script may see and change: the workspace, overlaid, minus its secrets.

The roots (and explicitly allowed files) are shown writable at their own paths, but through
overlays (:mod:`codeward.coding.sandbox.overlay`): nothing the script writes reaches the
project until :mod:`codeward.shell.changes` has passed each change through the workspace's
write checks, so ``.git`` metadata, codeward's configuration and its shell log cannot be
changed, renamed away or planted from inside. Files the workspace blacklists (``.env``,
keys, credentials) are covered by empty stand-ins, so ``cat .env`` in a script reads nothing.
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
SKIPPED_DIRS = frozenset({"objects"})
"""Folders of a ``.git`` not scanned for secrets: object stores hold only hashed names."""


@dataclass
class Confinement:
    """What one sandboxed run is shown, and notes on what was covered."""

    directories: list[Path] = field(default_factory=list)
    """Roots shown writable through an overlay (a root inside another is shown by that one)."""
    files: list[Path] = field(default_factory=list)
    """Tracked files outside the roots, shown writable through a private copy."""
    hidden: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def confine(workspace: Workspace, hide_secrets: bool) -> Confinement:
    """The workspace as a script sees it: overlaid roots and files, secrets covered."""
    plan = Confinement()
    roots = sorted(workspace.roots, key=lambda p: len(p.parts))
    for root in roots:
        if not any(root != other and root.is_relative_to(other) for other in plan.directories):
            plan.directories.append(root)
    for tracked in sorted(workspace.allowed_files):
        if tracked.is_file() and not under_a_root(workspace, tracked) and not workspace.blacklist_reason(tracked):
            plan.files.append(tracked)
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
                elif entry.is_dir(follow_symlinks=False) and not (
                        entry.name in SKIPPED_DIRS and os.path.basename(directory) == ".git"):
                    pending.append(entry.path)
    return sorted(found), True


def _prefilter(globs: tuple[str, ...]) -> Callable[[str, str], bool]:
    """A test that is true for every blacklisted (name, relative path), and for few others."""
    spec = pathspec.PathSpec.from_lines("gitignore", globs)
    sources = [p.regex.pattern for p in spec.patterns if p.include and p.regex is not None]
    try:  # case-insensitive: the workspace also refuses 'server.KEY' where '*.key' is blacklisted
        combined = re.compile("|".join(f"(?:{s})" for s in sources), re.IGNORECASE) if sources else None
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
