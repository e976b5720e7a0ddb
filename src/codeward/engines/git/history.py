"""Whether a repository's object store holds a file the workspace keeps secret.

The shell sandbox covers ``.env`` with an empty stand-in, but a script that may read ``.git``
could still print it from the history: ``git show HEAD:.env``, ``git cat-file``, or inflating
``.git/objects`` by hand. :func:`check_history` answers, before a run, whether that could
happen, so the runner can hide the object store of such a repository (and say so).

What counts, asked of a hardened git (no repository-configured program runs):

* every path of every tree reachable from any ref (the stash included), any reflog entry and
  the index (``git rev-list --objects --all --reflog --indexed-objects``), judged by
  :meth:`Workspace.blacklist_reason` as the file tools judge it — a blob stored under a secret
  name and under an ordinary one is reported by git under one of them, and then its content is
  readable through the ordinary name anyway;
* the current content of every secret file found in the work tree, as an object anywhere in
  the store (``git hash-object`` then ``git cat-file --batch-check``): a copy nothing
  references (an ``add`` undone) is still there to inflate.

Not covered: an *older* content of a secret that only unreachable objects hold (a commit
amended away whose reflog expired); ``git gc --prune=now`` removes those.

A full listing costs about a second per 10,000 commits, so the answer is remembered in
``.codeward/`` (:data:`codeward.kernel.state_dir.GIT_HISTORY`), keyed by the state of the refs, the
reflogs, the index, the secret files and the policy: an unchanged repository costs a few
``stat`` calls, and a repository that moved on lists only the objects the tips already
checked do not reach (``--not`` them). A server keeps its own answers by that key
(:class:`KnownVerdicts`), and, where file events are trusted, the key itself until an event
says what it reads changed (:class:`WatchedKeys`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.engines.git.repository import alternates
from codeward.engines.git.runner import GitOutput, run_git
from codeward.kernel.result import Result
from codeward.kernel.state_dir import GIT_HISTORY, StateDir
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    from inotify_simple import INotify  # type: ignore[import-untyped]

SCAN_TIMEOUT_S = 300.0
"""The longest one listing of a repository's objects may take (a first check of a very long history)."""
CACHE_VERSION = 1
MAX_SHOWN = 5
MAX_REMEMBERED_REPOSITORIES = 64
HASH_LINE = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_STATE_FILES = ("HEAD", "packed-refs", "index", "objects/info/alternates", "objects/info/packs", "shallow")
_STATE_FOLDERS = ("refs", "logs")


@dataclass(frozen=True)
class HistoryVerdict:
    """What one repository's store would show a script."""

    git_dir: Path
    secrets: tuple[str, ...] = ()
    """Blacklisted paths (as tools show them) whose content the store holds, the first few."""
    count: int = 0
    """How many there are in all."""
    problem: str = ""
    """Why the check could not answer (then the store is hidden too: fail closed)."""
    cached: bool = False

    @property
    def exposes(self) -> bool:
        """Whether a script reading this store could read a secret (or that could not be ruled out)."""
        return bool(self.count or self.problem)


@dataclass
class _Memo:
    """The remembered answers of one state folder, by git directory."""

    entries: dict[str, dict[str, object]] = field(default_factory=dict)


class KnownVerdicts:
    """The answers this server already gave, by git directory and :func:`state_key`: an unchanged
    repository is answered without reading ``.codeward/``'s file again (which also costs parsing the
    whole memo). Only this process's own answers are kept here, so nothing a file could forge is
    trusted; a key that differs (the repository, its secrets or the policy moved on) is checked as
    before. The keys themselves are kept by file events (:class:`WatchedKeys`). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, tuple[str, HistoryVerdict]] = {}
        self.keys = WatchedKeys()

    def get(self, git_dir: Path, key: str) -> HistoryVerdict | None:
        with self._lock:
            found = self._known.get(str(git_dir))
        return found[1] if found is not None and found[0] == key else None

    def put(self, git_dir: Path, key: str, verdict: HistoryVerdict) -> None:
        if verdict.problem:  # a check that could not answer is tried again next time
            return
        with self._lock:
            self._known.pop(str(git_dir), None)
            self._known[str(git_dir)] = (key, replace(verdict, cached=True))
            while len(self._known) > MAX_REMEMBERED_REPOSITORIES:
                self._known.pop(next(iter(self._known)))

    def close(self) -> None:
        self.keys.close()


@dataclass
class _Keyed:
    """One repository's key as last read, and what it was read for."""

    inputs: tuple[object, ...]
    identity: tuple[int, int]
    key: str
    watches: frozenset[int]
    current: bool = True


Names = frozenset[str] | None
"""The entries of a watched folder whose events matter (``None``: all of them)."""
_TOP_NAMES = frozenset({*(name.partition("/")[0] for name in _STATE_FILES), *_STATE_FOLDERS})


class WatchedKeys:
    """:func:`state_key` of each repository, read again only after a file event on what it reads.

    Reading the key costs a walk of ``refs/`` and ``logs/`` and a read of each ref (≈ 0.4 ms in a small
    repository, before every shell run). Here, before a key is read, an inotify watch is put on every
    folder it reads from — the git directory (its ``HEAD``, ``packed-refs``, ``index``, ``shallow``,
    ``refs``, ``logs``, ``objects`` entries), ``objects/info`` (``alternates``, ``packs``), each folder
    under ``refs/`` and ``logs/``, the folders of the secret files (their entries) — so any change there
    (a ref moved, the index or a reflog written, a secret edited, replaced or renamed, a folder made or
    removed, the git directory itself moved) is queued by the kernel before the write returns and makes
    the next answer read the key again. The git directory's identity (device, inode) is compared on
    every answer. A lost or overflowing queue, a watch refused, a link or a file with other hard links
    among what the key reads (whose changes through another name raise no event here): the key is read
    every time, as before. Callers use it only where the secret index trusts events (local
    filesystems). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inotify: INotify | None = None
        self._keyed: dict[str, _Keyed] = {}
        self._watchers: dict[int, dict[str, Names]] = {}
        """Per watch: the repositories whose key depends on it, and the entries that matter to each."""
        self._closed = False

    def key(self, workspace: Workspace, git_dir: Path, secrets: Sequence[Path]) -> str:
        """``state_key(workspace, git_dir, secrets)``, remembered while no event says it moved."""
        inputs = (workspace.blacklist_globs, tuple(sorted(map(str, secrets))))
        top = str(git_dir)
        try:
            info = os.stat(top)
        except OSError:
            return state_key(workspace, git_dir, secrets)
        identity = (info.st_dev, info.st_ino)
        with self._lock:
            if self._closed or not self._drain():
                self._forget_all()
                return state_key(workspace, git_dir, secrets)
            kept = self._keyed.get(top)
            if kept is not None and kept.current and kept.inputs == inputs and kept.identity == identity:
                return kept.key
            self._forget(top)
            watched: dict[int, Names] = {}
            try:
                covered = self._watch(top, secrets, watched)
            except OSError:
                covered = False
            key = state_key(workspace, git_dir, secrets)  # read after the watches are in place
            self._keyed[top] = _Keyed(inputs, identity, key, frozenset(watched), current=covered)
            for wd, names in watched.items():
                self._watchers.setdefault(wd, {})[top] = names
            if not covered:
                self._forget(top)  # read every time while events cannot cover it
            while len(self._keyed) > MAX_REMEMBERED_REPOSITORIES:
                self._forget(next(iter(self._keyed)))
            return key

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._forget_all()
            if self._inotify is not None:
                with contextlib.suppress(OSError):
                    self._inotify.close()
                self._inotify = None

    # -- the parts ---------------------------------------------------------------------

    def _drain(self) -> bool:
        """Mark the keys an event touched as stale; ``False`` when events were lost (all are stale)."""
        if self._inotify is None:
            return True
        from inotify_simple import flags  # type: ignore[import-untyped]

        while events := self._inotify.read(timeout=0):
            for event in events:
                if event.mask & flags.Q_OVERFLOW:
                    return False
                for top, names in self._watchers.get(event.wd, {}).items():
                    kept = self._keyed.get(top)
                    if kept is not None and (names is None or not event.name or event.name in names):
                        kept.current = False
        return True

    def _watch(self, top: str, secrets: Sequence[Path], watched: dict[int, Names]) -> bool:
        """Watch every folder the key of ``top`` reads from (into ``watched``, with the entries that matter);
        ``False`` when events cannot cover it all. Raises ``OSError`` when a watch is refused (the limit)."""
        if self._inotify is None:
            from inotify_simple import INotify  # type: ignore[import-untyped]

            self._inotify = INotify()
        folders: dict[str, set[str] | None] = {top: set(_TOP_NAMES), os.path.join(top, "objects"): {"info"},
                                                os.path.join(top, "objects", "info"): {"alternates", "packs"}}
        for secret in map(str, secrets):
            names = folders.setdefault(os.path.dirname(secret), set())
            if names is not None:
                names.add(os.path.basename(secret))
        optional = {os.path.join(top, "objects"), os.path.join(top, "objects", "info")}  # their making is seen
        for folder, names in folders.items():  # before the walk below, which adds the folders it lists
            if not self._add(folder, None if names is None else frozenset(names), watched) and folder not in optional:
                return False  # the git directory or a secret's folder is not one to watch (a link, gone)
        files = [*(os.path.join(top, name) for name in _STATE_FILES), *map(str, secrets)]
        for folder in _STATE_FOLDERS:
            pending = [os.path.join(top, folder)]
            while pending:  # each folder watched before it is listed: nothing made after the listing goes unseen
                directory = pending.pop()
                if not self._add(directory, None, watched):
                    continue
                try:
                    entries = list(os.scandir(directory))
                except OSError:
                    continue
                for entry in entries:
                    if entry.is_symlink():
                        return False
                    (pending if entry.is_dir(follow_symlinks=False) else files).append(entry.path)
        for path in files:
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_nlink > 1):
                return False
        return True

    def _add(self, folder: str, names: Names, watched: dict[int, Names]) -> bool:
        """Watch ``folder`` (``False`` when it is not there: its parent is watched, and its making is an event)."""
        from inotify_simple import flags  # type: ignore[import-untyped]

        assert self._inotify is not None
        mask = (flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.MODIFY | flags.CLOSE_WRITE
                | flags.ATTRIB | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW)
        try:
            wd: int = self._inotify.add_watch(folder, mask)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ELOOP):
                return False
            raise
        before = watched.get(wd, frozenset())
        watched[wd] = None if names is None or before is None else before | names
        return True

    def _forget(self, top: str) -> None:
        kept = self._keyed.pop(top, None)
        if kept is None:
            return
        for wd in kept.watches:
            holders = self._watchers.get(wd)
            if holders is not None:
                holders.pop(top, None)
                if not holders:
                    del self._watchers[wd]
                    if self._inotify is not None:
                        with contextlib.suppress(OSError):
                            self._inotify.rm_watch(wd)

    def _forget_all(self) -> None:
        for top in list(self._keyed):
            self._forget(top)


def check_history(workspace: Workspace, git_dir: Path, secret_files: Sequence[Path], state: StateDir | None,
                  known: KnownVerdicts | None = None, *, events: bool = False) -> HistoryVerdict:
    """Whether the repository at ``git_dir`` (a git directory inside the roots) holds the content
    of a file the workspace blacklists; remembered in ``state`` by the repository's state, and in
    ``known`` (the server's memory of its own answers) when given. ``events``: file events are
    trusted where the repository lies (the secret index's verdict), so ``known`` keeps its key."""
    work_tree = git_dir.parent
    secrets = [path for path in secret_files if path.is_relative_to(work_tree) and _is_file(path)]
    key = known.keys.key(workspace, git_dir, secrets) if known is not None and events else \
        state_key(workspace, git_dir, secrets)
    if known is not None and (remembered := known.get(git_dir, key)) is not None:
        return remembered
    verdict = _check(workspace, git_dir, secrets, state, key)
    if known is not None:
        known.put(git_dir, key, verdict)
    return verdict


def _check(workspace: Workspace, git_dir: Path, secrets: list[Path], state: StateDir | None, key: str
           ) -> HistoryVerdict:
    memo = _load(state)
    entry = memo.entries.get(str(git_dir))
    if entry is not None and entry.get("key") == key:
        found = [str(p) for p in entry.get("found", []) if isinstance(p, str)]  # type: ignore[attr-defined]
        return HistoryVerdict(git_dir, tuple(found[:MAX_SHOWN]), len(found), cached=True)
    repository = _Store.open(workspace, git_dir)
    if isinstance(repository, str):
        return HistoryVerdict(git_dir, problem=repository)
    policy = hashlib.sha256(repr(workspace.blacklist_globs).encode()).hexdigest()
    previous = entry if entry is not None and entry.get("policy") == policy else None  # else judge all anew
    scanned = _scan(workspace, repository, secrets, previous)
    if isinstance(scanned, str):
        return HistoryVerdict(git_dir, problem=scanned)
    history, stored, tips = scanned
    found = sorted({*history, *stored})
    memo.entries.pop(str(git_dir), None)
    memo.entries[str(git_dir)] = {"key": key, "policy": policy, "found": found, "history": history,
                                     "tips": tips}
    _save(state, memo)
    return HistoryVerdict(git_dir, tuple(found[:MAX_SHOWN]), len(found))


def state_key(workspace: Workspace, git_dir: Path, secrets: Iterable[Path]) -> str:
    """A digest of everything the answer depends on, read without running git: the refs and
    their logs, the index, the pack list, the secret files (size and time) and the policy.
    Times in nanoseconds make a forged answer shipped in a cloned ``.codeward/`` useless."""
    digest = hashlib.sha256()

    def add(*parts: object) -> None:
        digest.update(repr(parts).encode("utf-8", "surrogateescape"))

    add(CACHE_VERSION, str(git_dir), workspace.blacklist_globs)
    with contextlib.suppress(OSError):
        info = os.stat(git_dir)
        add(info.st_dev, info.st_ino)
    top = str(git_dir)  # plain strings and os calls: this runs before every shell run
    for name in _STATE_FILES:
        path = os.path.join(top, name)
        try:
            info = os.stat(path)
        except OSError:
            add(name, None)
            continue
        add(name, info.st_size, info.st_mtime_ns, info.st_ino)
        if name != "index" and info.st_size <= 1 << 20:
            with contextlib.suppress(OSError):
                add(_read(path))
    for folder in _STATE_FOLDERS:
        for directory, dirs, files in os.walk(os.path.join(top, folder)):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(directory, name)
                with contextlib.suppress(OSError):
                    info = os.stat(path)
                    add(path, info.st_size, info.st_mtime_ns)
                    if folder == "refs" and info.st_size <= 4096:
                        add(_read(path))
    for secret in sorted(secrets):
        with contextlib.suppress(OSError):
            info = os.stat(secret)
            add(str(secret), info.st_size, info.st_mtime_ns, info.st_ino)
    return digest.hexdigest()


@dataclass(frozen=True)
class _Store:
    """A git directory (a ``.git`` folder, a submodule's, or a bare repository) read with only
    ``GIT_DIR`` set: no work tree is needed to list a history, and none is trusted."""

    git_dir: Path
    top: Path
    """Where the history's paths are judged from: the folder holding the git directory."""

    @classmethod
    def open(cls, workspace: Workspace, git_dir: Path) -> _Store | str:
        """The store, or why it is not read: its common directory or an alternate object store
        lies outside the roots (a script could not see those; codeward does not read them)."""
        store = cls(git_dir, git_dir.parent)
        asked = store.run(["rev-parse", "--git-common-dir"])
        if not asked.ok or asked.data.returncode:
            return _failure("opening the repository", asked)
        common = Path(asked.data.stdout.strip())
        common = (common if common.is_absolute() else git_dir / common).resolve()
        for what, place in (("common git directory", common), *(("alternate object store", alt)
                                                               for alt in alternates(common))):
            if not workspace.contains(place):
                return f"its {what} is at {place}, outside the workspace"
        return store

    def run(self, args: Sequence[str], *, timeout: float = 30.0, stdin: bytes | None = None) -> Result[GitOutput]:
        return run_git(args, self.git_dir, git_dir=self.git_dir, timeout=timeout, stdin=stdin)


def _scan(workspace: Workspace, repository: _Store, secrets: Sequence[Path],
          previous: dict[str, object] | None) -> tuple[list[str], list[str], list[str]] | str:
    """(the secrets found in the history, the secret files stored, the tips checked) or why the
    check failed. With a previous answer only objects its tips do not reach are listed, and its
    findings kept: while those tips' objects exist, what they hold is still there to read (a
    rewritten history is listed whole once they are pruned)."""
    tipped = repository.run(["rev-list", "--no-walk=unsorted", "--all", "--reflog"], timeout=SCAN_TIMEOUT_S)
    if not tipped.ok or tipped.data.returncode:
        return _failure("listing the refs", tipped)
    tips = sorted(set(tipped.data.stdout.split()))
    names: set[str] = set()
    old = previous.get("tips") if previous is not None else None
    kept = previous.get("history") if previous is not None else None
    earlier = [name for name in kept if isinstance(name, str)] if isinstance(kept, list) else []
    listed = None
    if isinstance(old, list) and old and isinstance(kept, list):
        stdin = "".join(f"^{tip}\n" for tip in old if isinstance(tip, str) and HASH_LINE.match(tip)).encode()
        listed = repository.run(["rev-list", "--objects", "--all", "--reflog", "--indexed-objects", "--stdin"],
                                timeout=SCAN_TIMEOUT_S, stdin=stdin)
        if listed.ok and listed.data.returncode:
            listed = None  # a tip checked before is gone (history rewritten, gc): list everything
    if listed is None:
        earlier = []
        listed = repository.run(["rev-list", "--objects", "--all", "--reflog", "--indexed-objects"],
                                timeout=SCAN_TIMEOUT_S)
    if not listed.ok or listed.data.returncode:
        return _failure("listing the objects", listed)
    for line in listed.data.stdout.split("\n"):
        _, space, name = line.partition(" ")
        if space:
            names.add(name)
        elif line and not HASH_LINE.match(line):
            names.add(line)  # a path with a newline in it: its parts are judged one by one
    found = {shown for name in names if (shown := _secret_name(workspace, repository, name))}
    stored = _stored_copies(workspace, repository, secrets)
    if isinstance(stored, str):
        return stored
    return sorted({*found, *earlier}), stored, tips


def _secret_name(workspace: Workspace, repository: _Store, name: str) -> str:
    """The path as tools show it when the workspace blacklists it ("" when it does not); a name
    that is not a plain relative path counts as secret (fail closed)."""
    if not name:
        return ""
    if name.startswith("/") or ".." in name.split("/") or "\x00" in name:
        return name
    path = repository.top / name
    return workspace.display(path) if workspace.blacklist_reason(path) else ""


def _stored_copies(workspace: Workspace, repository: _Store, secrets: Sequence[Path]) -> list[str] | str:
    """The secret files whose current content is an object in the store, whatever references it."""
    if not secrets:
        return []
    files = [str(path) for path in secrets]
    hashed = repository.run(["hash-object", "--no-filters", "--", *files])
    if not hashed.ok or hashed.data.returncode:
        return _failure("hashing the secret files", hashed)
    ids = hashed.data.stdout.split()
    if len(ids) != len(files):
        return "git hash-object did not hash every secret file"
    checked = repository.run(["cat-file", "--batch-check=%(objectname) %(objecttype)"],
                             stdin="".join(f"{oid}\n" for oid in ids).encode())
    if not checked.ok or checked.data.returncode:
        return _failure("looking the secret files up in the store", checked)
    lines = checked.data.stdout.splitlines()
    return [workspace.display(path) for path, line in zip(secrets, lines, strict=False)
            if not line.endswith(" missing")]


def _failure(what: str, ran: Result[GitOutput]) -> str:
    if ran.ok:
        return f"git failed {what}: {ran.data.first_error_line()}"
    return f"git failed {what}: {ran.errors[0].message if ran.errors else 'unknown error'}"


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _is_file(path: Path) -> bool:
    with contextlib.suppress(OSError):
        return os.path.isfile(path) and not os.path.islink(path)
    return False


def _load(state: StateDir | None) -> _Memo:
    if state is None:
        return _Memo()
    try:
        with state.open_folder() as folder:
            fd = os.open(GIT_HISTORY, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            with os.fdopen(fd, "rb") as handle:
                data = json.loads(handle.read(16 << 20))
    except (OSError, ValueError):
        return _Memo()
    entries = data.get("entries") if isinstance(data, dict) and data.get("version") == CACHE_VERSION else None
    return _Memo({k: v for k, v in entries.items() if isinstance(v, dict)} if isinstance(entries, dict) else {})


def _save(state: StateDir | None, memo: _Memo) -> None:
    if state is None:
        return
    kept = dict(list(memo.entries.items())[-MAX_REMEMBERED_REPOSITORIES:])
    with contextlib.suppress(OSError):
        state.replace(GIT_HISTORY, json.dumps({"version": CACHE_VERSION, "entries": kept}).encode(), mode=0o600)
