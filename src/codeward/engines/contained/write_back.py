"""Bring a sandboxed run's writes back to the project through the workspace's write checks.

The run wrote into overlay upper layers (:mod:`codeward.engines.sandbox.overlay`); this module
reads each layer and applies it to the root it covers, one entry at a time, with the same
gate ``write_file`` passes: every path is resolved with :meth:`Workspace.resolve` for writing
and must land where it says (no symlink on the way), and paths the policy protects — ``.git``
at any depth (creating one included), codeward's configuration and ``.codeward/`` — are
refused and reported, never applied. Files the human's tools run later (hook folders,
``.vscode/``, ``.mcp.json``...: :mod:`codeward.kernel.host_run`) are *held*: everything else is applied,
then a person is asked about them with their diff (``ask``, when someone can be asked during the
call) and they are applied on a yes; otherwise the result lists them, not applied, with the
reason. What the layer holds:

- a regular file: written atomically (temporary file in the same folder, fsync, rename),
  keeping its mode without set-id bits, and its modification time; unchanged content is skipped;
- a directory: created; an *opaque* directory (``user.overlay.opaque``) replaced the folder
  below it, so what the folder held and the layer does not is deleted;
- a whiteout (a 0/0 character device, or a file marked ``user.overlay.whiteout``): a deletion;
- a symbolic link: created when its target, resolved as the kernel resolves it — through every
  link on the way, in the run's layer and on the host (:mod:`codeward.engines.files.links`) — lands inside
  the roots (and not on a protected path) or in the read-only system the sandbox shows
  (``/usr``…), and never climbs with ``..`` out of a folder a link led to; refused otherwise — a
  link to ``~/.bashrc`` would send the user's next write there. Once the write-back is done each
  link it made is resolved again on the host, and removed if it leads out after all;
- anything else (FIFOs, sockets, devices): refused.

Deletions that would remove a protected path keep it (and the folders holding it).

A folder the write-back added a repository-making name to (``HEAD``, ``objects``...) is looked
at again once it is applied: a repository completed with another writer's files (where the
cross-process lock does not reach) loses what the write-back created there, reported refused.

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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.files.links import host_readlink, link_refusal
from codeward.engines.files.tree_diff import tree_diff
from codeward.engines.sandbox.overlay import Layer, Overlays
from codeward.kernel.context import AskPerson, ChangeJournal, HostRunQuestion
from codeward.kernel.host_run import Consent
from codeward.kernel.repository_guard import COMPLETED
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
PROTECTED_NAMES = frozenset({".git", ".codeward"})
"""The protected folder names, to word a refusal (the decision is :meth:`Workspace.write_verdict`)."""
GIT_DIRECTORY_REFUSAL = ("a git repository's metadata (git would run what its config names): "
                         "it is never written by tools")
COPY_CHUNK = 1 << 20
SHOWN_REFUSALS = 8
HELD_HINT = ("Only a person can approve it: ask the user to approve it when asked (a client that supports "
             "elicitation, codeward chat, the control console), write it with write_file or apply_patch (the "
             "person is asked with the diff), or have them make the change themselves.")


@dataclass
class Held:
    """A change to a host-run path, kept back for a person: the layer's entry (None or a whiteout:
    a deletion) and the path it would change."""

    source: Path | None
    target: Path
    reason: str
    root: Path
    """The root of the layer it came from (where it is applied)."""
    display: str
    """The path as results show it."""


@dataclass
class Applied:
    """What came back from a run: counts of what was applied and every refusal with its reason."""

    written: int = 0
    deleted: int = 0
    created_dirs: int = 0
    links: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    """Changes to host-run paths kept back until a person approves them (:func:`apply_held`)."""
    approved: list[str] = field(default_factory=list)
    """Host-run paths applied after a person's yes during the run."""
    consented: list[str] = field(default_factory=list)
    """Host-run paths applied because the whole call carries a person's approval (they typed it)."""
    made_links: list[tuple[Path, str]] = field(default_factory=list)
    """Links this write-back made (and their targets), resolved again on the host once it is done."""
    repository_entries: list[tuple[Path, Path]] = field(default_factory=list)
    """(folder, entry) for each repository-making name this write-back created: looked at again once done."""

    def notes(self) -> list[str]:
        """Lines for the result: refusals grouped by reason, held and approved host-run paths,
        failures; nothing when all went through."""
        lines: list[str] = []
        by_reason: dict[str, list[str]] = {}
        for path, reason in self.refused:
            by_reason.setdefault(reason, []).append(path)
        for reason, paths in by_reason.items():
            lines.append(f"NOT applied to the workspace ({reason}): {_listed(paths)}")
        held_by_reason: dict[str, list[str]] = {}
        for held in self.held:
            held_by_reason.setdefault(held.reason, []).append(_shown_held(held))
        for reason, shown in held_by_reason.items():
            lines.append(f"NOT applied, held for a person ({reason}): {_listed(shown)}. {HELD_HINT}")
        if self.approved:
            lines.append(f"applied with a person's approval (files the host runs later): {_listed(self.approved)}")
        if self.consented:
            lines.append("applied as part of a call a person typed or approved (files the host runs later): "
                         f"{_listed(list(dict.fromkeys(self.consented)))}")
        for path, problem in self.failed[:SHOWN_REFUSALS]:
            lines.append(f"could not apply {path}: {problem}")
        if len(self.failed) > SHOWN_REFUSALS:
            lines.append(f"... and {len(self.failed) - SHOWN_REFUSALS} more changes could not be applied")
        return lines


def _listed(paths: list[str]) -> str:
    return ", ".join(paths[:SHOWN_REFUSALS]) + (f" and {len(paths) - SHOWN_REFUSALS} more"
                                                if len(paths) > SHOWN_REFUSALS else "")


def _shown_held(held: Held) -> str:
    """A held change as the result names it: the path, and what the run did to it."""
    what = "delete" if held.source is None or _is_whiteout(held.source, held.source.lstat()) else (
        "link" if held.source.is_symlink() else "folder" if held.source.is_dir() else
        "executable file" if os.stat(held.source).st_mode & 0o111 else "file")
    return f"{held.display} ({what})"


def bring_back(workspace: Workspace, overlays: Overlays, *, journal: ChangeJournal | None = None,
               hold: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
               ask: AskPerson | None = None, marks: Marks | None = None) -> Applied:
    """A finished run's writes applied to the workspace: :func:`apply_overlays` under ``hold`` (the
    write locks), then — outside them, a person may take a while — ``ask`` about what was held, and
    on a yes :func:`apply_held` under ``hold`` again. A run that wrote nothing takes no lock.
    ``marks``: see :func:`apply_overlays`."""
    if not any(_holds_anything(layer.upper) for layer in overlays.layers) and not overlays.copies:
        return Applied()
    with hold():
        applied = apply_overlays(workspace, overlays, journal, marks)
    if not applied.held or ask is None:
        return applied
    question = held_question(workspace, applied.held)
    if question is None:  # the held entries change nothing after all
        applied.held.clear()
        return applied
    if ask(question):
        with hold():
            apply_held(workspace, applied, journal)
    return applied


def _holds_anything(upper: Path) -> bool:
    try:
        with os.scandir(upper) as entries:
            return any(True for _entry in entries)
    except OSError:
        return True


def held_question(workspace: Workspace, held: list[Held]) -> HostRunQuestion | None:
    """What a person is asked about held changes: each path and why, and the diff (None when the
    diff is empty: nothing would change)."""
    diff = "".join(_held_diff(item.source, item.target, workspace.display(item.target)) for item in held)
    if not diff.strip():
        return None
    summary = "\n".join(f"- {_shown_held(item)}: {item.reason}" for item in held)
    return HostRunQuestion(summary, diff)


def apply_held(workspace: Workspace, applied: Applied, journal: ChangeJournal | None = None) -> None:
    """Apply the held changes of ``applied`` a person approved (each gated again, with their consent)."""
    held, applied.held = applied.held, []
    consenting = workspace.with_host_run_consent(Consent(paths=frozenset(item.target for item in held)))
    staged = _Staged(consenting)
    try:
        for item in held:
            applier = _Applier(consenting, item.root, applied, staged, journal)
            if item.source is None:
                applier.delete(item.target)
            else:
                applier.apply_entry(item.source, item.target)
            applied.approved.append(workspace.display(item.target))
        staged.commit(applied)
    finally:
        staged.discard()
    _recheck(consenting, applied)


def _held_diff(source: Path | None, target: Path, rel: str) -> str:
    """The diff a held change makes: a folder of the layer that merges into the host's one only
    for the entries it holds (a whiteout deletes, an opaque folder replaces)."""
    if source is None:
        return tree_diff(target, Path("/nonexistent/codeward"), rel)
    info = source.lstat()
    if _is_whiteout(source, info):
        return tree_diff(target, Path("/nonexistent/codeward"), rel)
    if stat.S_ISDIR(info.st_mode) and not _has_xattr(source, OPAQUE_XATTRS) and target.is_dir() \
            and not target.is_symlink():
        return "".join(_held_diff(Path(entry.path), target / entry.name, f"{rel}/{entry.name}")
                       for entry in sorted(os.scandir(source), key=lambda e: e.name))
    return tree_diff(target, source, rel)


def apply_overlays(workspace: Workspace, overlays: Overlays, journal: ChangeJournal | None = None,
                   marks: Marks | None = None) -> Applied:
    """Apply every layer of a finished run to the workspace (see the module docstring), holding
    back changes to host-run paths (``Applied.held``: :func:`bring_back` asks about them).

    ``marks`` (a program still running, its writes applied more than once): each entry of a layer
    that is not a folder is handled once per version — an entry whose inode, size, mode and times
    are those recorded at an earlier apply is passed over, so a file applied, then changed on the
    host, is not overwritten by the same old write at the next apply (or at the stop).

    New file contents are first written to temporary files beside their targets, then made
    durable with one ``syncfs`` per file system (not one ``fsync`` per file: a build writes
    thousands), and only then renamed over their targets, so a file is always whole.
    """
    applied = Applied()
    staged = _Staged(workspace)
    view = _LayeredView(overlays.layers)
    try:
        for layer in overlays.layers:
            _Applier(workspace, layer.lower, applied, staged, journal, view, marks).apply_root(layer.upper,
                                                                                               layer.lower)
        for original, copy in overlays.copies:
            _apply_copy(workspace, original, copy, applied, staged, journal)
        staged.commit(applied)
    finally:
        staged.discard()
    _recheck(workspace, applied)
    return applied


def _recheck(workspace: Workspace, applied: Applied) -> None:
    """Once applied: each link made leads where it was judged to (the host now holds every link on
    its way), and no folder the write-back added a repository name to became a repository."""
    for link, pointed in applied.made_links:
        reason = link_refusal(workspace, link, pointed) if host_readlink(str(link)) == pointed else ""
        if reason:
            with contextlib.suppress(OSError):
                os.unlink(link)
            applied.links -= 1
            applied.refused.append((workspace.display(link), reason))
    applied.made_links.clear()
    for folder in dict.fromkeys(folder for folder, _entry in applied.repository_entries):
        if looks_like_git_dir(git_dir_names(folder)):
            for _folder, entry in applied.repository_entries:
                if _folder == folder:
                    _remove_created(entry)
                    applied.refused.append((workspace.display(entry), f"{COMPLETED} ({GIT_DIRECTORY_REFUSAL})"))
    applied.repository_entries.clear()


def _remove_created(entry: Path) -> None:
    with contextlib.suppress(OSError):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class _LayeredView:
    """Links as the run left them: a path's entry in the layer that covers it (a whiteout: gone),
    else the host's — what the project will hold once the layer is applied, for judging a link
    before the links on its way are made."""

    def __init__(self, layers: list[Layer]) -> None:
        self.layers = sorted(layers, key=lambda layer: len(str(layer.lower)), reverse=True)  # deepest first

    def readlink(self, path: str) -> str | None:
        for layer in self.layers:
            lower = str(layer.lower)
            if path == lower or path.startswith(lower.rstrip("/") + "/"):
                found = self._in_layer(layer.upper, path[len(lower):].strip("/"))
                return host_readlink(path) if found is _HOST else found if isinstance(found, str) else None
        return host_readlink(path)

    @staticmethod
    def _in_layer(upper: Path, rel: str) -> str | object | None:
        """The link target (str), not a link (None), or :data:`_HOST` (the layer does not hold it)."""
        current = upper
        parts = [part for part in rel.split("/") if part]
        for index, part in enumerate(parts):
            entry = current / part
            try:
                info = entry.lstat()
            except OSError:
                return None if _has_xattr(current, OPAQUE_XATTRS) else _HOST
            if _is_whiteout(entry, info):
                return None
            if index == len(parts) - 1:
                return os.readlink(entry) if stat.S_ISLNK(info.st_mode) else None
            if not stat.S_ISDIR(info.st_mode):
                return None
            current = entry
        return None


_HOST = object()


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
    applies (:meth:`Workspace.write_verdict`: git metadata, codeward's configuration — the files
    the server was started with included — and ``.codeward/``; a host-run path this call has no
    consent for), then the blacklist."""
    verdict = workspace.write_verdict(path)
    reason = verdict.refused
    if reason:
        if reason.startswith(GIT_DIRECTORY_REASON):
            return GIT_DIRECTORY_REFUSAL
        display = workspace.display(path)
        parts = Path(display).parts if not os.path.isabs(display) else path.parts
        name = next((part for part in parts if part.casefold() in PROTECTED_NAMES), None)
        if name is not None:
            return f"{name}/ is protected: git metadata and codeward's state are never written by tools"
        return "codeward's configuration is protected: change it yourself"
    return verdict.needs_person or workspace.blacklist_reason(path)


Marks = dict[str, tuple[int, int, int, int, int]]
"""Layer entry → (inode, size, mode, mtime, ctime) when an apply last handled it."""


class _Applier:
    def __init__(self, workspace: Workspace, root: Path, applied: Applied, staged: _Staged,
                 journal: ChangeJournal | None = None, view: _LayeredView | None = None,
                 marks: Marks | None = None) -> None:
        self.workspace = workspace
        self.marks = marks
        self.journal = journal
        self.root = root
        self.applied = applied
        self.staged = staged
        self.readlink = view.readlink if view is not None else host_readlink
        self.checked_folders: set[Path] = set()
        """Folders found real and writable (their entries need not check them again)."""

    def display(self, path: Path) -> str:
        return self.workspace.display(path)

    def refuse(self, path: Path, reason: str) -> None:
        self.applied.refused.append((self.display(path), reason))

    def held(self, source: Path | None, target: Path) -> bool:
        """Whether ``target`` is a host-run path this call has no consent for: then the change is
        kept back (``Applied.held``) — unless it changes nothing."""
        verdict = self.workspace.write_verdict(target)
        if verdict.refused:
            return False
        if not verdict.needs_person:
            if self.workspace.host_run_consent.everything and self.workspace.host_run_reason(target):
                shown = self.display(target)  # said in the result all the same (a folder once, not its files)
                if not any(shown.startswith(f"{earlier}/") for earlier in self.applied.consented):
                    self.applied.consented.append(shown)
            return False
        if source is not None and not source.is_symlink() and source.is_file() and not target.is_symlink() \
                and _same_file(source, target, stat.S_IMODE(source.lstat().st_mode) & 0o777):
            return True  # the same bytes and mode: nothing to ask about, nothing to write
        self.applied.held.append(Held(source, target, verdict.needs_person, self.root, self.display(target)))
        return True

    def created(self, target: Path) -> None:
        """Note a new entry: a repository-making name is looked at again once all is applied."""
        if is_git_dir_name(target.name):
            self.applied.repository_entries.append((target.parent, target))

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
        if not stat.S_ISDIR(mode) and not self.first_time(source, info):
            return  # handled at an earlier apply, unchanged since
        if self.held(source, target):
            return
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
            self.created(target)
            self.applied.created_dirs += 1
        elif opaque:
            keep = {entry.name for entry in os.scandir(source)}
            for child in sorted(target.iterdir()):
                if child.name not in keep:
                    self.delete(child)
        self.apply_dir(source, target)

    def refuse_tree(self, source: Path, target: Path, reason: str) -> None:
        """One refusal per file of a refused folder (folders themselves are not listed); with marks,
        per file not refused at an earlier apply and unchanged since."""
        files = list(_files_under(source))
        fresh = [path for path in files if self.first_time(path, path.lstat())]
        if files and not fresh:
            return
        for path in [target / path.relative_to(source) for path in fresh] or [target]:
            self.refuse(path, reason)

    def first_time(self, source: Path, info: os.stat_result) -> bool:
        """Whether this version of a layer entry is new to the marks (recorded now); always without marks."""
        if self.marks is None:
            return True
        version = (info.st_ino, info.st_size, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)
        if self.marks.get(str(source)) == version:
            return False
        self.marks[str(source)] = version
        return True

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
        if not os.path.lexists(target):
            self.created(target)
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
        reason = link_refusal(self.workspace, target, pointed, self.readlink)
        if reason:
            self.refuse(target, reason)
            return
        if target.is_symlink() and os.readlink(target) == pointed:
            return
        if target.is_dir() and not target.is_symlink():
            self.delete(target)
            if target.exists():
                return
        existed = os.path.lexists(target)
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
        if not existed:
            self.created(target)
        self.applied.links += 1
        self.applied.made_links.append((target, pointed))

    # -- deleting ------------------------------------------------------------------------

    def delete(self, target: Path) -> None:
        """Delete ``target`` (a tree, bottom up), keeping whatever the gate protects."""
        if not target.is_symlink() and not target.exists():
            return
        if self.held(None, target):
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
