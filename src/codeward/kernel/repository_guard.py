"""The repository test again, after the write: what the locks could not rule out is taken back.

Every writer checks, before it writes, that no folder becomes one git would open as a repository
(:meth:`codeward.kernel.workspace.Workspace.write_verdict`), under a lock every codeward process on the
root shares (:mod:`codeward.kernel.path_locks`). Where that lock does not reach — NFS without ``lockd``,
two processes whose roots nest differently, a writer that is not codeward — two writers can
each add half of a bare repository (``HEAD`` in one, ``objects/`` in the other) after both were
checked. :class:`RepositoryGuard` looks again once the write is done: a folder the write added a
repository name to that *is* a repository now loses the entries this write created there, and
the write is reported refused.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from codeward.kernel.workspace import Workspace, git_dir_names, looks_like_git_dir

COMPLETED = "together with another writer's files, this write made a folder git opens as a repository"


class RepositoryCompleted(Exception):
    """A write completed a repository with another writer's files; what it created there was taken back."""


class RepositoryGuard:
    """Made just before a write of ``paths`` (under the write locks); :meth:`check` just after it."""

    def __init__(self, workspace: Workspace, paths: list[Path]) -> None:
        self.workspace = workspace
        self.entries = workspace.repository_name_entries(paths)
        self.new = {entry for _folder, entry in self.entries if not os.path.lexists(entry)}
        """The repository-named entries this write may create (absent before it)."""
        self.checked = False

    def completed(self) -> Path | None:
        """A folder the write added a repository name to that is a repository now (None: none is)."""
        self.checked = True
        for folder in dict.fromkeys(folder for folder, _entry in self.entries):
            if looks_like_git_dir(git_dir_names(folder)):
                return folder
        return None

    def check(self) -> str:
        """"" when no repository was completed; else take back what this write created in it and
        say why (the refusal's message)."""
        folder = self.completed()
        if folder is None:
            return ""
        for _folder, entry in self.entries:
            if _folder == folder and entry in self.new:
                _remove(entry)
        return f"{COMPLETED} ({self.workspace.git_dir_text(folder)}); what it created there was removed"


def _remove(entry: Path) -> None:
    with contextlib.suppress(OSError):
        if os.path.isdir(entry) and not os.path.islink(entry):
            shutil.rmtree(entry)  # never follows a link out
        else:
            os.unlink(entry)
