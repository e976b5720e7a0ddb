"""The checkpoint store: ``<root>/.codeward/checkpoints/``.

::

    objects/ab/cdef…   file contents, named by their sha256 (written once, shared by records)
    log/00000042.json  one record per tool call that changed something (or per undo)
    trash/<token>/     what delete_path removed, moved here whole (a rename: instant, exact)
    lock               taken while a record is added, an undo runs or the store is pruned

Tools may never write in ``.codeward/`` (the workspace refuses it), so the store writes there
by itself, safely: every folder is opened from the root one component at a time without
following a link (a cloned repository may ship ``.codeward`` as a link to anywhere), files are
created ``O_EXCL | O_NOFOLLOW`` relative to those descriptors.

The store is bounded: the newest ``keep`` tool-call records are kept and, within them, no more
than ``max_bytes`` of snapshots and trash; older records go, then the contents and trash no
record needs any more (after a grace period, so a call still running keeps what it stored).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeward.config.checkpoints import CheckpointSettings
from codeward.engines.checkpoints.states import FileState
from codeward.kernel import state_dir

STATE_DIR = state_dir.NAME
FOLDER = state_dir.CHECKPOINTS
KEEP = 100
MAX_BYTES = 1 << 30
MAX_FILE_BYTES = 64 << 20
"""Bigger files are recorded by hash only: undo cannot put them back, and says so."""
BLOB_GRACE_SECONDS = 600.0
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_RECORD_NAME = 8


class StoreError(OSError):
    """A part of the store is not what codeward made (a link, a file where a folder should be)."""


class Change(BaseModel):
    """One path changed by one tool call."""

    model_config = ConfigDict(extra="forbid")

    path: str
    """The absolute, real path."""
    before: FileState
    after: FileState
    moved_to: str = ""
    """A move: the path now lies here (undo renames it back)."""
    trash: str = ""
    """A deletion: the path now lies here, in the store's trash (undo renames it back)."""
    size: int = 0
    """Bytes this change keeps in the store (snapshot or trash), for the store's bound."""


class Record(BaseModel):
    """What one tool call changed (kind ``edit``), or what one undo changed back (kind ``undo``)."""

    model_config = ConfigDict(extra="forbid")

    id: int
    kind: Literal["edit", "undo"] = "edit"
    time: float
    tool: str
    summary: str
    changes: list[Change]
    reverts: list[int] = Field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(change.size for change in self.changes)


@dataclass(frozen=True)
class CheckpointStore:
    """The store under one root (resolved, absolute)."""

    root: Path
    keep: int = KEEP
    max_bytes: int = MAX_BYTES

    @property
    def path(self) -> Path:
        return self.root / STATE_DIR / FOLDER

    # -- folders, reached without following links --------------------------------------------

    @contextmanager
    def folder(self, rel: str = "", *, create: bool = True) -> Iterator[int]:
        """A descriptor of ``checkpoints/rel``, reached without following a link (:class:`StoreError` for
        one on the way). Created as needed through the project's :class:`~codeward.kernel.state_dir.StateDir`;
        with ``create`` false, ``FileNotFoundError`` when it does not exist (a reader leaves no trace)."""
        where = f"{FOLDER}/{rel}" if rel else FOLDER
        if create:
            try:
                with state_dir.of(self.root).open_folder(where) as fd:
                    yield fd
            except state_dir.StateDirError as exc:
                raise StoreError(exc.errno or errno.ELOOP, f"{exc.strerror or exc}; codeward keeps its checkpoints "
                                                           "only in a real folder") from exc
            return
        parts = [STATE_DIR, *where.split("/")]
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for position, part in enumerate(parts):
                if part in ("", ".", ".."):
                    raise StoreError(errno.EINVAL, f"{rel!r} is not inside the checkpoint store")
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        shown = "/".join(parts[:position + 1])
                        raise StoreError(exc.errno, f"{shown} is a link or not a folder; codeward keeps its "
                                                    "checkpoints only in a real folder") from exc
                    raise
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The store's lock (one writer of records at a time, across processes)."""
        with self.folder() as fd:
            lock = os.open("lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)

    # -- contents -----------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Keep ``data``; its sha256 (stored once however often it is kept)."""
        digest = hashlib.sha256(data).hexdigest()
        with self.folder(f"objects/{digest[:2]}") as fd:
            name = digest[2:]
            try:
                handle = os.open(name, _NEW_FILE, 0o600, dir_fd=fd)
            except FileExistsError:
                with contextlib.suppress(OSError):
                    os.utime(name, dir_fd=fd, follow_symlinks=False)  # in use again: restart its grace
                return digest
            tmp = f".{name}.{secrets.token_hex(4)}.tmp"
            os.close(handle)
            try:
                out = os.open(tmp, _NEW_FILE, 0o600, dir_fd=fd)
                with os.fdopen(out, "wb") as stream:
                    stream.write(data)
                    stream.flush()
                    os.fsync(stream.fileno())
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
                raise
        return digest

    def get_blob(self, digest: str) -> bytes:
        """Stored contents by hash; raises ``FileNotFoundError`` when they are gone, ``StoreError`` when
        what is stored no longer has that hash."""
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise StoreError(errno.EINVAL, f"{digest!r} is not a content hash")
        with self.folder(f"objects/{digest[:2]}", create=False) as fd:
            handle = os.open(digest[2:], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            with os.fdopen(handle, "rb") as stream:
                data = stream.read()
        if hashlib.sha256(data).hexdigest() != digest:
            raise StoreError(errno.EIO, f"the stored contents {digest[:12]} are damaged")
        return data

    # -- trash --------------------------------------------------------------------------------

    def trash_slot(self) -> Path:
        """A new, empty folder in the trash (created without following links), to move a deletion into."""
        token = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"
        with self.folder(f"trash/{token}"):
            pass
        return self.path / "trash" / token

    def owns_trash(self, path: Path) -> bool:
        """Whether ``path`` is a slot (or inside one) of this store's trash."""
        trash = self.path / "trash"
        return path.is_relative_to(trash) and len(path.relative_to(trash).parts) >= 1

    # -- records ------------------------------------------------------------------------------

    def add(self, kind: Literal["edit", "undo"], tool: str, summary: str, changes: list[Change],
            reverts: list[int] | None = None) -> Record:
        """Write a new record (the next id) and prune; the record as written."""
        with self.locked(), self.folder("log") as fd:
            number = self._last_id(fd) + 1
            while True:
                record = Record(id=number, kind=kind, time=time.time(), tool=tool, summary=summary,
                                changes=changes, reverts=list(reverts or []))
                try:
                    handle = os.open(f"{number:0{_RECORD_NAME}d}.json", _NEW_FILE, 0o600, dir_fd=fd)
                except FileExistsError:
                    number += 1
                    continue
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    stream.write(record.model_dump_json())
                    stream.flush()
                    os.fsync(stream.fileno())
                break
            self._prune(fd)
        return record

    def records(self) -> list[Record]:
        """Every readable record, oldest first (a damaged or foreign file is skipped)."""
        try:
            with self.folder("log", create=False) as fd:
                return self._read_records(fd)
        except FileNotFoundError:
            return []

    def _read_records(self, fd: int) -> list[Record]:
        found: list[Record] = []
        for name in sorted(os.listdir(fd)):
            stem, dot, ext = name.partition(".")
            if ext != "json" or not dot or not stem.isdigit():
                continue
            try:
                handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                with os.fdopen(handle, "rb") as stream:
                    record = Record.model_validate_json(stream.read())
            except (OSError, ValidationError, ValueError):
                continue
            if record.id == int(stem):
                found.append(record)
        return found

    def _last_id(self, fd: int) -> int:
        numbers = [int(name.split(".")[0]) for name in os.listdir(fd)
                   if name.endswith(".json") and name.split(".")[0].isdigit()]
        return max(numbers, default=0)

    # -- bounds -------------------------------------------------------------------------------

    def _prune(self, log_fd: int) -> None:
        """Drop the oldest records past ``keep`` edits or ``max_bytes``, then what nothing needs."""
        records = self._read_records(log_fd)
        edits = [record for record in records if record.kind == "edit"]
        kept_edits: list[Record] = []
        used = 0
        for record in reversed(edits):
            if len(kept_edits) >= self.keep or (kept_edits and used + record.size > self.max_bytes):
                break
            kept_edits.append(record)
            used += record.size
        oldest = min((record.id for record in kept_edits), default=0)
        dropped = [record for record in records if record.id < oldest]
        if not dropped:
            return
        for record in dropped:
            with contextlib.suppress(OSError):
                os.unlink(f"{record.id:0{_RECORD_NAME}d}.json", dir_fd=log_fd)
            for change in record.changes:
                if change.trash:
                    self._remove_trash(Path(change.trash))
        kept = [record for record in records if record.id >= oldest]
        self._collect_blobs({change.before.digest for record in kept for change in record.changes
                             if change.before.stored})

    def _remove_trash(self, item: Path) -> None:
        """Delete the trash slot holding ``item`` (a real folder in a store's trash, nothing else)."""
        slot = item.parent
        trash = slot.parent
        if trash.name != "trash" or trash.parent.name != FOLDER or trash.parent.parent.name != STATE_DIR:
            return
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(slot).st_mode):
                shutil.rmtree(slot)

    def _collect_blobs(self, needed: set[str]) -> None:
        """Delete stored contents no record needs, once past their grace period."""
        cutoff = time.time() - BLOB_GRACE_SECONDS
        try:
            with self.folder("objects", create=False) as objects:
                for prefix in os.listdir(objects):
                    if len(prefix) != 2:
                        continue
                    with contextlib.suppress(OSError):
                        sub = os.open(prefix, _DIR_FLAGS, dir_fd=objects)
                        try:
                            for name in os.listdir(sub):
                                if prefix + name in needed:
                                    continue
                                info = os.stat(name, dir_fd=sub, follow_symlinks=False)
                                if info.st_mtime < cutoff:
                                    os.unlink(name, dir_fd=sub)
                        finally:
                            os.close(sub)
        except FileNotFoundError:
            return


def store_for(root: Path, settings: CheckpointSettings) -> CheckpointStore:
    """The store of ``root`` bounded as ``[checkpoints]`` says."""
    return CheckpointStore(root, keep=settings.keep, max_bytes=settings.max_mb << 20)
