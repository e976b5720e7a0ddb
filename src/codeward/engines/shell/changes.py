"""Bring a sandboxed run's writes back to the project through the workspace's write checks.

The run wrote into overlay upper layers (:mod:`codeward.engines.sandbox.overlay`); this module
reads each layer and applies it to the root it covers, one entry at a time, with the same
gate ``write_file`` passes: every path is resolved with :meth:`Workspace.resolve` for writing
and must land where it says (no symlink on the way), and paths the policy protects — ``.git``
at any depth (creating one included), codeward's configuration and ``.codeward/`` — are
refused and reported, never applied. What the layer holds:

- a regular file: written atomically (temporary file in the same folder, fsync, rename),
  keeping its mode without set-id bits, and its modification time; unchanged content is skipped;
- a directory: created; an *opaque* directory (``user.overlay.opaque``) replaced the folder
  below it, so what the folder held and the layer does not is deleted;
- a whiteout (a 0/0 character device, or a file marked ``user.overlay.whiteout``): a deletion;
- a symbolic link: created when it points inside the roots (and not at a protected path) or
  at the read-only system the sandbox shows (``/usr``…), refused when it points elsewhere —
  a link to ``~/.bashrc`` would send the user's next write there;
- anything else (FIFOs, sockets, devices): refused.

Deletions that would remove a protected path keep it (and the folders holding it).

Every path that passes the gate is noted in the call's checkpoint journal (when given) before
it changes, so a run's writes and deletions are recorded like any tool's and ``undo`` takes
them back.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.sandbox.overlay import Overlays
from codeward.kernel.context import ChangeJournal
from codeward.kernel.workspace import (
    GIT_DIRECTORY_REASON,
    Access,
    Workspace,
    git_dir_names,
    is_git_dir_name,
    looks_like_git_dir,
)

OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
WHITEOUT_XATTRS = ("user.overlay.whiteout", "trusted.overlay.whiteout")
SYSTEM_TARGETS = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/", "/dev/null")
"""Where a created symlink may point outside the roots: the read-only system programs live in
(a virtualenv's ``bin/python`` links to ``/usr/bin/python3``)."""
PROTECTED_NAMES = frozenset({".git", ".codeward"})
"""The protected folder names, to word a refusal (the decision is :meth:`Workspace.write_protection`)."""
GIT_DIRECTORY_REFUSAL = ("a git repository's metadata (git would run what its config names): "
                         "it is never written by tools")
COPY_CHUNK = 1 << 20
SHOWN_REFUSALS = 8


@dataclass
class Applied:
    """What came back from a run: counts of what was applied and every refusal with its reason."""

    written: int = 0
    deleted: int = 0
    created_dirs: int = 0
    links: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def notes(self) -> list[str]:
        """Lines for the result: refusals grouped by reason, failures, nothing when all went through."""
        lines: list[str] = []
        by_reason: dict[str, list[str]] = {}
        for path, reason in self.refused:
            by_reason.setdefault(reason, []).append(path)
        for reason, paths in by_reason.items():
            shown = ", ".join(paths[:SHOWN_REFUSALS]) + (f" and {len(paths) - SHOWN_REFUSALS} more"
                                                         if len(paths) > SHOWN_REFUSALS else "")
            lines.append(f"NOT applied to the workspace ({reason}): {shown}")
        for path, problem in self.failed[:SHOWN_REFUSALS]:
            lines.append(f"could not apply {path}: {problem}")
        if len(self.failed) > SHOWN_REFUSALS:
            lines.append(f"... and {len(self.failed) - SHOWN_REFUSALS} more changes could not be applied")
        return lines


def apply_overlays(workspace: Workspace, overlays: Overlays, journal: ChangeJournal | None = None) -> Applied:
    """Apply every layer of a finished run to the workspace (see the module docstring).

    New file contents are first written to temporary files beside their targets, then made
    durable with one ``syncfs`` per file system (not one ``fsync`` per file: a build writes
    thousands), and only then renamed over their targets, so a file is always whole.
    """
    applied = Applied()
    staged = _Staged(workspace)
    try:
        for layer in overlays.layers:
            _Applier(workspace, layer.lower, applied, staged, journal).apply_root(layer.upper, layer.lower)
        for original, copy in overlays.copies:
            _apply_copy(workspace, original, copy, applied, staged, journal)
        staged.commit(applied)
    finally:
        staged.discard()
    return applied


class _Staged:
    """Temporary files waiting to be renamed over their targets, by folder."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.by_folder: dict[Path, list[tuple[str, str, str]]] = {}
        """folder → (temporary name, target name, what to show)"""

    def add(self, folder: Path, temporary: str, name: str, shown: str) -> None:
        self.by_folder.setdefault(folder, []).append((temporary, name, shown))

    def commit(self, applied: Applied) -> None:
        synced: set[int] = set()
        for folder in self.by_folder:
            with contextlib.suppress(OSError):
                device = folder.stat().st_dev
                if device not in synced:
                    synced.add(device)
                    _syncfs(folder)
        for folder, entries in list(self.by_folder.items()):
            try:
                dir_fd = _open_checked_folder(folder, self.workspace)
            except OSError as exc:
                applied.failed += [(shown, exc.strerror or str(exc)) for _t, _n, shown in entries]
                continue
            try:
                for temporary, name, shown in entries:
                    try:
                        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                    except OSError as exc:
                        applied.failed.append((shown, exc.strerror or str(exc)))
                        continue
                    applied.written += 1
                with contextlib.suppress(OSError):
                    os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
            del self.by_folder[folder]

    def discard(self) -> None:
        """Remove temporary files that were never renamed (after an error)."""
        for folder, entries in self.by_folder.items():
            for temporary, _name, _shown in entries:
                with contextlib.suppress(OSError):
                    os.unlink(folder / temporary)
        self.by_folder.clear()


def protected_reason(workspace: Workspace, path: Path) -> str:
    """Why a sandboxed run may not write ``path`` ("" when it may): the one rule every writer
    applies (:meth:`Workspace.write_protection`: git metadata, codeward's configuration — the
    files the server was started with included — and ``.codeward/``), then the blacklist."""
    reason = workspace.write_protection(path)
    if reason:
        if reason.startswith(GIT_DIRECTORY_REASON):
            return GIT_DIRECTORY_REFUSAL
        display = workspace.display(path)
        parts = Path(display).parts if not os.path.isabs(display) else path.parts
        name = next((part for part in parts if part.casefold() in PROTECTED_NAMES), None)
        if name is not None:
            return f"{name}/ is protected: git metadata and codeward's state are never written by tools"
        return "codeward's configuration is protected: change it yourself"
    return workspace.blacklist_reason(path)


class _Applier:
    def __init__(self, workspace: Workspace, root: Path, applied: Applied, staged: _Staged,
                 journal: ChangeJournal | None = None) -> None:
        self.workspace = workspace
        self.journal = journal
        self.root = root
        self.applied = applied
        self.staged = staged
        self.checked_folders: set[Path] = set()
        """Folders found real and writable (their entries need not check them again)."""

    def display(self, path: Path) -> str:
        return self.workspace.display(path)

    def refuse(self, path: Path, reason: str) -> None:
        self.applied.refused.append((self.display(path), reason))

    def fail(self, path: Path, error: OSError | str) -> None:
        problem = error if isinstance(error, str) else (error.strerror or str(error))
        self.applied.failed.append((self.display(path), problem))

    # -- the gate ------------------------------------------------------------------------

    def gate(self, target: Path) -> str:
        """Why ``target`` may not be changed ("" when it may): its folder must resolve to itself
        inside the workspace for writing, and the name must not be protected."""
        reason = protected_reason(self.workspace, target)
        if reason:
            return reason
        if target.parent not in self.checked_folders:
            parent = self.workspace.resolve(str(target.parent), Access.WRITE)
            if not parent.ok:
                return parent.errors[0].message
            if parent.data != target.parent:
                return "a symlink on its path leads elsewhere"
            self.checked_folders.add(target.parent)
        if not target.is_symlink():
            checked = self.workspace.resolve(str(target), Access.WRITE)
            if not checked.ok:
                return checked.errors[0].message
        if self.journal is not None:
            self.journal.before(target)  # about to change: its checkpoint keeps what it was
        return ""

    # -- walking the layer ---------------------------------------------------------------

    def apply_root(self, upper: Path, root: Path) -> None:
        """Apply a whole layer onto its root. A root cannot be refused wholesale like a folder:
        when the layer would make the root itself a repository, the entries that would (``HEAD``,
        ``objects``, ``refs``, ``commondir``, ``gitdir``) are refused and the rest applied."""
        if not _git_dir_reason(upper, root):
            self.apply_dir(upper, root)
            return
        for entry in sorted(os.scandir(upper), key=lambda e: e.name):
            source, target = Path(entry.path), root / entry.name
            if is_git_dir_name(entry.name) and not _is_whiteout(source, source.lstat()):
                self.refuse_tree(source, target, GIT_DIRECTORY_REFUSAL)
            else:
                self.apply_entry(source, target)

    def apply_dir(self, upper: Path, target: Path) -> None:
        """Apply the layer folder ``upper`` onto the host folder ``target`` (which exists)."""
        try:
            entries = sorted(os.scandir(upper), key=lambda e: e.name)
        except OSError as exc:
            self.fail(target, exc)
            return
        for entry in entries:
            self.apply_entry(Path(entry.path), target / entry.name)

    def apply_entry(self, source: Path, target: Path) -> None:
        info = source.lstat()
        mode = info.st_mode
        if _is_whiteout(source, info):
            self.delete(target)
        elif stat.S_ISDIR(mode):
            self.apply_folder(source, target, info)
        elif stat.S_ISREG(mode):
            self.write_file(source, target, info)
        elif stat.S_ISLNK(mode):
            self.make_link(source, target)
        else:
            self.refuse(target, "special files (FIFOs, sockets, devices) are not brought back")

    def apply_folder(self, source: Path, target: Path, info: os.stat_result) -> None:
        reason = self.gate(target) or _git_dir_reason(source, target)
        if reason:
            self.refuse_tree(source, target, reason)
            return
        opaque = _has_xattr(source, OPAQUE_XATTRS)
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            self.delete(target)
            if target.is_symlink() or target.exists():
                return
        if not target.exists():
            try:
                target.mkdir(mode=stat.S_IMODE(info.st_mode) & 0o777)
                _give_to_folder_owner(target)
            except OSError as exc:
                self.fail(target, exc)
                return
            self.applied.created_dirs += 1
        elif opaque:
            keep = {entry.name for entry in os.scandir(source)}
            for child in sorted(target.iterdir()):
                if child.name not in keep:
                    self.delete(child)
        self.apply_dir(source, target)

    def refuse_tree(self, source: Path, target: Path, reason: str) -> None:
        """One refusal per file of a refused folder (folders themselves are not listed)."""
        files = [target / path.relative_to(source) for path in _files_under(source)]
        for path in files or [target]:
            self.refuse(path, reason)

    def write_file(self, source: Path, target: Path, info: os.stat_result) -> None:
        reason = self.gate(target)
        if reason:
            self.refuse(target, reason)
            return
        mode = stat.S_IMODE(info.st_mode) & 0o777
        if target.is_symlink() or target.is_dir():
            self.delete(target)
            if target.is_symlink() or target.exists():
                return
        elif _same_file(source, target, mode):
            return
        try:
            _stage_copy(source, target, mode, (info.st_atime_ns, info.st_mtime_ns), self.workspace, self.staged,
                        self.display(target))
        except OSError as exc:
            self.fail(target, exc)

    def make_link(self, source: Path, target: Path) -> None:
        reason = self.gate(target)
        if reason:
            self.refuse(target, reason)
            return
        pointed = os.readlink(source)
        reason = self.link_target_reason(target, pointed)
        if reason:
            self.refuse(target, reason)
            return
        if target.is_symlink() and os.readlink(target) == pointed:
            return
        if target.is_dir() and not target.is_symlink():
            self.delete(target)
            if target.exists():
                return
        temporary = target.parent / f".{target.name[:64]}.{secrets.token_hex(4)}.codeward-tmp"
        try:
            os.symlink(pointed, temporary)
            _give_to_folder_owner(temporary)
            os.replace(temporary, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            self.fail(target, exc)
            return
        self.applied.links += 1

    def link_target_reason(self, link: Path, pointed: str) -> str:
        """Why a link to ``pointed`` may not be created at ``link`` ("" when it may)."""
        lexical = Path(os.path.normpath(link.parent / pointed))
        if any(str(lexical).startswith(prefix) or str(lexical) == prefix.rstrip("/") for prefix in SYSTEM_TARGETS):
            return ""
        if not self.workspace.contains(lexical):
            return "a symlink pointing outside the workspace"
        if protected_reason(self.workspace, lexical):
            return "a symlink pointing at a protected path"
        return ""

    # -- deleting ------------------------------------------------------------------------

    def delete(self, target: Path) -> None:
        """Delete ``target`` (a tree, bottom up), keeping whatever the gate protects."""
        if not target.is_symlink() and not target.exists():
            return
        reason = self.gate(target)
        if reason:
            self.refuse(target, reason)
            return
        self.checked_folders.discard(target)
        if target.is_dir() and not target.is_symlink():
            for child in sorted(target.iterdir()):
                self.delete(child)
            try:
                target.rmdir()
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):  # a kept, protected child
                    self.fail(target, exc)
                return
        else:
            try:
                target.unlink()
            except OSError as exc:
                self.fail(target, exc)
                return
        self.applied.deleted += 1


def _apply_copy(workspace: Workspace, original: Path, copy: Path, applied: Applied, staged: _Staged,
                journal: ChangeJournal | None = None) -> None:
    """A tracked file outside the roots, shown through a private copy: write back if changed."""
    try:
        info = copy.lstat()
    except OSError as exc:
        applied.failed.append((str(original), exc.strerror or str(exc)))
        return
    mode = stat.S_IMODE(info.st_mode) & 0o777
    if not stat.S_ISREG(info.st_mode) or _same_file(copy, original, mode):
        return
    checked = workspace.resolve(str(original), Access.WRITE)
    reason = checked.errors[0].message if not checked.ok else protected_reason(workspace, original)
    if reason:
        applied.refused.append((str(original), reason))
        return
    if journal is not None:
        journal.before(original)
    try:
        _stage_copy(copy, original, mode, (info.st_atime_ns, info.st_mtime_ns), workspace, staged, str(original))
    except OSError as exc:
        applied.failed.append((str(original), exc.strerror or str(exc)))


def _git_dir_reason(folder: Path, target: Path) -> str:
    """Why a folder's changes may not be brought back because git would take it, as it will be
    (what the layer holds over what the project has), for a repository: the gate's own test
    (:func:`~codeward.kernel.workspace.looks_like_git_dir`) on the union of both. The gate alone would
    judge each entry against the project as it is, not as the rest of the layer will leave it."""
    names: set[str] = set(git_dir_names(target) or ())
    with contextlib.suppress(OSError):
        names.update(os.listdir(folder))
    return GIT_DIRECTORY_REFUSAL if looks_like_git_dir(names) else ""


def _is_whiteout(path: Path, info: os.stat_result) -> bool:
    if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
        return True
    return stat.S_ISREG(info.st_mode) and info.st_size == 0 and _has_xattr(path, WHITEOUT_XATTRS)


def _has_xattr(path: Path, names: tuple[str, ...]) -> bool:
    for name in names:
        with contextlib.suppress(OSError):
            if os.getxattr(path, name, follow_symlinks=False) in (b"y", b""):
                return True
    return False


def _files_under(folder: Path) -> Iterator[Path]:
    for current, _dirs, files in os.walk(folder):
        for name in sorted(files):
            yield Path(current) / name


def _same_file(source: Path, target: Path, mode: int) -> bool:
    """Whether ``target`` is already a regular file with ``source``'s bytes and mode."""
    try:
        have = target.lstat()
        want = source.lstat()
    except OSError:
        return False
    if not stat.S_ISREG(have.st_mode) or have.st_size != want.st_size or stat.S_IMODE(have.st_mode) != mode:
        return False
    with open(source, "rb") as left, open(target, "rb") as right:
        while True:
            a, b = left.read(COPY_CHUNK), right.read(COPY_CHUNK)
            if a != b:
                return False
            if not a:
                return True


def _give_to_folder_owner(path: Path) -> None:
    """As root, what codeward creates for a script belongs to whoever owns the folder (the
    project's owner), as if that user had made it."""
    if os.geteuid() == 0:
        folder = path.parent.lstat()
        os.lchown(path, folder.st_uid, folder.st_gid)


def _open_checked_folder(folder: Path, workspace: Workspace) -> int:
    """A descriptor of ``folder``, checked to really be it (not a link swapped in since)."""
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        opened = os.readlink(f"/proc/self/fd/{dir_fd}") if os.path.exists("/proc/self/fd") else str(folder)
        if opened != str(folder):
            checked = workspace.resolve(opened, Access.WRITE)
            if not checked.ok:
                raise PermissionError(errno.EACCES, checked.errors[0].message)
    except BaseException:
        os.close(dir_fd)
        raise
    return dir_fd


def _stage_copy(source: Path, target: Path, mode: int, times: tuple[int, int], workspace: Workspace,
                staged: _Staged, shown: str) -> None:
    """Copy ``source`` to a temporary file beside ``target`` (renamed over it by the commit)."""
    dir_fd = _open_checked_folder(target.parent, workspace)
    try:
        temporary = f".{target.name[:64]}.{secrets.token_hex(4)}.codeward-tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dir_fd)
        try:
            with open(source, "rb") as reader, os.fdopen(fd, "wb") as writer:
                shutil.copyfileobj(reader, writer, COPY_CHUNK)
                writer.flush()
                if os.geteuid() == 0:  # a replaced file keeps its owner; a new one gets its folder's
                    try:
                        have = os.stat(target.name, dir_fd=dir_fd, follow_symlinks=False)
                    except FileNotFoundError:
                        have = os.fstat(dir_fd)
                    os.fchown(writer.fileno(), have.st_uid, have.st_gid)
                os.fchmod(writer.fileno(), mode)
            os.utime(temporary, ns=times, dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=dir_fd)
            raise
        staged.add(target.parent, temporary, target.name, shown)
    finally:
        os.close(dir_fd)


def _syncfs(folder: Path) -> None:
    """Flush the file system holding ``folder`` (``syncfs``; ``sync`` where it is missing)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        if getattr(libc, "syncfs", None) is None or libc.syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)
