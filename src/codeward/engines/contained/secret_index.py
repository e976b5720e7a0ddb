"""The workspace's secret list kept current by file events, so a run's set-up does not walk the tree.

Every sandboxed run hides what :func:`codeward.kernel.workspace.secret_paths` finds. Walking a large
project for it costs more than the run (an 18,000-file tree: half a second). A server keeps one
:class:`SecretIndex` per workspace instead: the first answer is a walk that puts an inotify watch
on each folder *before* listing it (so nothing created after the listing goes unseen), keeping
what each folder held (:func:`~codeward.kernel.workspace.folder_secrets`). Each later answer first
drains the events and lists again only the folders they name — a file created, deleted, renamed,
written or changed in mode there — and walks any new subfolder the same way. An event is queued
by the kernel before the write that caused it returns, so a secret created by a person or a run
before the call starts is in the answer, exactly as with a fresh walk.

Whatever the index cannot follow exactly makes it walk again from scratch: a folder renamed or
moved (its subtree's paths change), a root moved or deleted, the kernel's event queue overflowing.
Where events cannot be trusted at all it is not used, and every answer is a fresh walk: a root on
a network or FUSE filesystem (changes made on another machine raise no event here), a watch
refused (the per-user limit, ``fs.inotify.max_user_watches``), a tree larger than the scan limit.
Writes through a shared memory mapping raise no event either; the secrets a person makes are
written by editors and tools with ``write``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.kernel.workspace import SECRET_SCAN_LIMIT, FolderSecrets, Workspace, folder_secrets, secret_paths

if TYPE_CHECKING:
    from inotify_simple import INotify  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

KEPT_WORKSPACES = 4
"""Indexes a server keeps (one per workspace it serves; a client's roots change makes a new one)."""
LOCAL_FILESYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs", "overlay", "reiserfs", "jfs", "bcachefs",
    "vfat", "exfat", "ramfs", "hfsplus", "apfs", "nilfs2",
})
"""Filesystems whose every change is made by this kernel, so inotify sees it."""


@dataclass(frozen=True)
class SecretScan:
    """One answer: the secrets, whether the scan covered everything, the git directories passed."""

    secrets: list[Path]
    complete: bool
    git_dirs: list[Path]
    watched: bool = False
    """Kept by file events (the roots are on local filesystems and every folder is watched): what is
    derived from the same files may be kept by events too (the git-history keys)."""


@dataclass
class _Folder:
    in_git: bool
    held: FolderSecrets


@dataclass
class SecretIndex:
    """The secret list of one workspace, kept current by inotify (see the module docstring)."""

    workspace: Workspace
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _inotify: INotify | None = None
    _folders: dict[str, _Folder] = field(default_factory=dict)
    _watches: dict[int, str] = field(default_factory=dict)
    _linked: set[str] = field(default_factory=set)
    """Folders holding a file with other hard links: listed again every time (see FolderSecrets.linked)."""
    _entry_count: int = 0
    _answered: SecretScan | None = None
    """The last answer, until a folder's listing changes."""
    _usable: bool | None = None
    """``None``: not decided yet; ``False``: events cannot be trusted here, walk every time."""

    def scan(self) -> SecretScan:
        """The workspace's secrets now (as :func:`~codeward.kernel.workspace.secret_paths` would answer)."""
        with self._lock:
            if self._usable is None:
                self._usable = _events_trustworthy(self.workspace.roots)
            if not self._usable:
                return walk_secrets(self.workspace)
            if (self._inotify is None or not self._catch_up()) and not self._rebuild():
                self._usable = False
                self._close()
                return walk_secrets(self.workspace)
            return self._answer()

    def close(self) -> None:
        with self._lock:
            self._close()

    # -- the parts ---------------------------------------------------------------------

    def _rebuild(self) -> bool:
        """Watch and list every folder from scratch; ``False`` when a watch is refused or the tree is too big."""
        from inotify_simple import INotify  # type: ignore[import-untyped]

        self._close()
        try:
            self._inotify = INotify()
            for root in self.workspace.roots:
                if not self._add_tree(str(root), False):
                    return False
        except OSError as exc:
            log.info("secret index: walking every run (%s)", exc)
            return False
        return True

    def _add_tree(self, top: str, in_git: bool) -> bool:
        """Watch and list ``top`` and every folder under it; ``False`` past the scan limit."""
        pending = [(top, in_git)]
        while pending:
            directory, inside = pending.pop()
            if not self._watch(directory):
                continue  # gone already (its parent's event brings it back if it returns)
            held = folder_secrets(self.workspace, directory, inside)
            self._keep(directory, _Folder(inside, held))
            if len(self._folders) % 256 == 0 and self._entries() > SECRET_SCAN_LIMIT:
                return False
            pending += [sub for sub in held.folders if sub[0] not in self._folders]
        return self._entries() <= SECRET_SCAN_LIMIT

    def _watch(self, directory: str) -> bool:
        from inotify_simple import flags  # type: ignore[import-untyped]

        assert self._inotify is not None
        mask = (flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.MODIFY | flags.CLOSE_WRITE
                | flags.ATTRIB | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW)
        try:
            wd = self._inotify.add_watch(directory, mask)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ELOOP):
                return False
            raise  # ENOSPC (the watch limit), ENOMEM: events cannot cover the tree
        self._watches[wd] = directory
        return True

    def _catch_up(self) -> bool:
        """Apply the events queued since the last answer; ``False`` when only a new walk will do."""
        from inotify_simple import flags  # type: ignore[import-untyped]

        assert self._inotify is not None
        dirty = set(self._linked)
        gone: set[str] = set()
        while events := self._inotify.read(timeout=0):
            for event in events:
                if event.mask & flags.Q_OVERFLOW:
                    return False
                if event.mask & flags.ISDIR and event.mask & (flags.MOVED_FROM | flags.MOVED_TO):
                    return False  # a subtree's paths changed
                directory = self._watches.get(event.wd)
                if directory is None:
                    continue
                if event.mask & (flags.MOVE_SELF | flags.DELETE_SELF | flags.IGNORED):
                    if directory in self._roots():
                        return False
                    if event.mask & flags.IGNORED:
                        del self._watches[event.wd]
                    gone.add(directory)  # deleted (perhaps made again): its parent lists it afresh
                    dirty.add(os.path.dirname(directory))
                elif directory in self._folders:
                    dirty.add(directory)
        try:
            for directory in gone:
                self._drop_tree(directory)
            for directory in sorted(dirty, key=len):
                self._relist(directory)
        except OSError as exc:
            log.info("secret index: walking again (%s)", exc)
            return False
        return self._entries() <= SECRET_SCAN_LIMIT

    def _relist(self, directory: str) -> None:
        folder = self._folders.get(directory)
        if folder is None:
            return  # dropped with a parent relisted before it
        held = folder_secrets(self.workspace, directory, folder.in_git)
        self._keep(directory, _Folder(folder.in_git, held))
        before = {path for path, _ in folder.held.folders}
        now = {path for path, _ in held.folders}
        for path in before - now:
            self._drop_tree(path)
        for path, inside in held.folders:
            if path not in self._folders:
                self._add_tree(path, inside)

    def _drop_tree(self, top: str) -> None:
        prefix = top + os.sep
        for path in [path for path in self._folders if path == top or path.startswith(prefix)]:
            self._keep(path, None)

    def _keep(self, directory: str, folder: _Folder | None) -> None:
        """Record (or, with ``None``, forget) one folder's listing, keeping the totals."""
        old = self._folders.pop(directory, None)
        if old is not None:
            self._entry_count -= old.held.entries
        self._linked.discard(directory)
        if folder is not None:
            self._folders[directory] = folder
            self._entry_count += folder.held.entries
            if folder.held.linked:
                self._linked.add(directory)
        if folder is None or old is None or old.held.secrets != folder.held.secrets or (
                old.held.git_dir != folder.held.git_dir):
            self._answered = None

    def _answer(self) -> SecretScan:
        if self._answered is None:
            secrets = sorted(path for folder in self._folders.values() for path in folder.held.secrets)
            git_dirs = sorted(Path(path) for path, folder in self._folders.items() if folder.held.git_dir)
            self._answered = SecretScan(secrets, True, git_dirs, watched=True)
        return SecretScan(list(self._answered.secrets), True, list(self._answered.git_dirs), watched=True)

    def _entries(self) -> int:
        return self._entry_count

    def _roots(self) -> set[str]:
        return {str(root) for root in self.workspace.roots}

    def _close(self) -> None:
        if self._inotify is not None:
            with contextlib.suppress(OSError):
                self._inotify.close()
        self._inotify = None
        self._folders.clear()
        self._watches.clear()
        self._linked.clear()
        self._entry_count = 0
        self._answered = None


class SecretIndexes:
    """A server's indexes, one per workspace object (a workspace is immutable: new roots, new one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: list[SecretIndex] = []

    def of(self, workspace: Workspace) -> SecretIndex:
        with self._lock:
            for index in self._kept:
                if index.workspace is workspace:
                    return index
            made = SecretIndex(workspace)
            self._kept.append(made)
            dropped = self._kept[:-KEPT_WORKSPACES]
            del self._kept[:-KEPT_WORKSPACES]
        for old in dropped:
            old.close()
        return made

    def close(self) -> None:
        with self._lock:
            kept, self._kept = self._kept, []
        for index in kept:
            index.close()


def walk_secrets(workspace: Workspace) -> SecretScan:
    """A fresh walk's answer (what an index answers when events cannot be trusted)."""
    git_dirs: list[Path] = []
    secrets, complete = secret_paths(workspace, git_dirs=git_dirs)
    return SecretScan(secrets, complete, git_dirs)


def _events_trustworthy(roots: tuple[Path, ...] | list[Path]) -> bool:
    """Whether every filesystem a root lies on or holds is local (see :data:`LOCAL_FILESYSTEMS`)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            table = [_mount_of(line) for line in mounts]
    except OSError:
        return False
    mounted = [entry for entry in table if entry is not None]
    for root in roots:
        text = str(root)
        holding = [entry for entry in mounted if text == entry[0] or text.startswith(entry[0].rstrip("/") + "/")]
        containing = max(holding, key=lambda entry: len(entry[0]), default=None)
        inside = [entry for entry in mounted if entry[0].startswith(text.rstrip("/") + "/")]
        for _, kind in ([containing] if containing else []) + inside:
            if kind not in LOCAL_FILESYSTEMS:
                return False
        if containing is None:
            return False
    return True


def _mount_of(line: str) -> tuple[str, str] | None:
    """(mount point, filesystem type) of one ``/proc/self/mountinfo`` line."""
    before, _, after = line.partition(" - ")
    fields, kinds = before.split(), after.split()
    if len(fields) < 5 or not kinds:
        return None
    point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
    return point, kinds[0]
