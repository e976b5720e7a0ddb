"""Walking a directory tree the way every listing tool must: gated, pruned, and ignore-aware.

Symlinked entries are resolved and hidden when they land outside the workspace (the
:meth:`Workspace.visible` rule); symlinked directories are never descended into, so a link
cannot smuggle an outside tree in; ``.git`` is skipped; ``.gitignore`` files are honoured
when asked, each relative to its own directory, as git does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.engines.files.textfile import read_text
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    import pathspec

ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass(frozen=True, slots=True)
class Entry:
    path: Path
    rel: str
    is_dir: bool
    depth: int


@dataclass(frozen=True)
class _Ignore:
    base: Path
    spec: pathspec.PathSpec  # type: ignore[type-arg]

    def ignores(self, path: Path, is_dir: bool) -> bool:
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return False
        return self.spec.match_file(rel + "/" if is_dir else rel)


def _load_ignore(workspace: Workspace, directory: Path) -> _Ignore | None:
    """The directory's ``.gitignore`` when it is a visible regular text file.

    A repository can make it a symlink to a file outside (its patterns would reveal that file
    through what gets hidden), to ``/dev/zero``, or a FIFO; those are ignored.
    """
    gitignore = directory / ".gitignore"
    if not os.path.lexists(gitignore) or not workspace.visible(gitignore):
        return None
    loaded = read_text(gitignore, ".gitignore")
    if not loaded.ok:
        return None
    import pathspec  # with the first .gitignore read: a server's start reads none

    return _Ignore(directory, pathspec.PathSpec.from_lines("gitignore", loaded.data.text.splitlines()))


def walk(
    workspace: Workspace,
    top: Path,
    *,
    max_depth: int | None = None,
    gitignore: bool = True,
    include_dirs: bool = True,
) -> Iterator[Entry]:
    """Yield visible entries under ``top`` (a resolved, allowed directory), sorted per level."""
    ignores: list[_Ignore] = []
    if gitignore:
        # .gitignore files of the directories between the root and top apply too.
        for parent in reversed([top, *top.parents]):
            if workspace.contains(parent):
                loaded = _load_ignore(workspace, parent)
                if loaded:
                    ignores.append(loaded)
    yield from _walk_dir(workspace, top, top, 1, max_depth, gitignore, include_dirs, ignores)


def _walk_dir(
    workspace: Workspace,
    top: Path,
    directory: Path,
    depth: int,
    max_depth: int | None,
    gitignore: bool,
    include_dirs: bool,
    ignores: list[_Ignore],
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
        if gitignore and any(ignore.ignores(path, is_dir) for ignore in ignores):
            continue
        rel = path.relative_to(top).as_posix()
        if is_dir:
            if include_dirs:
                yield Entry(path, rel, True, depth)
            if not is_link and (max_depth is None or depth < max_depth):
                child_ignores = ignores
                if gitignore:
                    loaded = _load_ignore(workspace, path)
                    if loaded:
                        child_ignores = [*ignores, loaded]
                yield from _walk_dir(workspace, top, path, depth + 1, max_depth, gitignore, include_dirs,
                                     child_ignores)
        else:
            yield Entry(path, rel, False, depth)
