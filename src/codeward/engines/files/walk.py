"""Walking a directory tree the way every listing tool must: gated, pruned, and ignore-aware.

Symlinked entries are resolved and hidden when they land outside the workspace (the
:meth:`Workspace.visible` rule); symlinked directories are never descended into, so a link
cannot smuggle an outside tree in; ``.git`` is skipped. Ignore files are honoured as git
honours them (:mod:`codeward.engines.files.ignore`, the one engine every walker and search shares): an
ignored entry is hidden, or marked when the caller asks, and an ignored folder is not entered.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.files.ignore import Ignores
from codeward.kernel.workspace import Workspace

ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass(frozen=True, slots=True)
class Entry:
    path: Path
    rel: str
    is_dir: bool
    """A folder, or a link to one."""
    depth: int
    is_link: bool = False
    ignored: bool = False
    """An ignore file excludes it (only yielded so with ``mark_ignored``)."""


def walk(
    workspace: Workspace,
    top: Path,
    *,
    max_depth: int | None = None,
    gitignore: bool = True,
    include_dirs: bool = True,
    mark_ignored: bool = False,
) -> Iterator[Entry]:
    """Yield visible entries under ``top`` (a resolved, allowed directory), sorted per level.

    With ``gitignore`` the ignore files decide: ignored entries are left out, or, with
    ``mark_ignored``, yielded with ``ignored=True`` (an ignored folder is still not entered).
    """
    ignores = Ignores.above(workspace, top) if gitignore else None
    yield from _walk_dir(workspace, top, top, 1, max_depth, ignores, include_dirs, mark_ignored)


def _walk_dir(
    workspace: Workspace,
    top: Path,
    directory: Path,
    depth: int,
    max_depth: int | None,
    ignores: Ignores | None,
    include_dirs: bool,
    mark_ignored: bool,
) -> Iterator[Entry]:
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
    except OSError:
        return
    # A plain (non-symlink) entry of a directory that is inside the workspace is inside too:
    # only symlinks need resolving, which is what makes visible() cost (tens of µs an entry).
    inside = workspace.contains(directory)
    for entry in entries:
        path = Path(entry.path)
        is_link = entry.is_symlink()
        try:
            is_dir = entry.is_dir(follow_symlinks=True)
        except OSError:
            is_dir = False
        if is_dir and entry.name in ALWAYS_SKIPPED_DIRS:
            continue
        if is_link or not inside:
            if not workspace.visible(path):
                continue
        elif workspace.blacklist_reason(path):
            continue
        ignored = ignores is not None and ignores.ignored(entry.path, is_dir and not is_link)
        if ignored and not mark_ignored:
            continue
        rel = path.relative_to(top).as_posix()
        if is_dir:
            if include_dirs:
                yield Entry(path, rel, True, depth, is_link, ignored)
            if not is_link and not ignored and (max_depth is None or depth < max_depth):
                inner = ignores.entering(workspace, path) if ignores is not None else None
                yield from _walk_dir(workspace, top, path, depth + 1, max_depth, inner, include_dirs, mark_ignored)
        else:
            yield Entry(path, rel, False, depth, is_link, ignored)
