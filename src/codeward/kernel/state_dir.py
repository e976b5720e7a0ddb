"""The one owner of a project's ``.codeward/`` folder: what lives there, and how codeward writes it.

codeward keeps its own state in ``<root>/.codeward/``: the symbol index, the registry's search
index, saved outputs, logs, per-tool virtual environments, gateway pins, checkpoints. Every
module asks :class:`StateDir` for these paths instead of spelling the folder itself.

Tools may never write there (the :class:`~codeward.kernel.workspace.Workspace` refuses it: the folder
holds the shell's log and the gateway's pins, which the agent must not rewrite). codeward's own
writes therefore do not go through the tool-facing gate but through this class, which makes
them safe on its own: each folder is opened from the root one component at a time without
following a link (a repository may arrive with ``.codeward`` or ``.codeward/logs`` as a
symlink to anywhere), files are created with ``O_NOFOLLOW`` relative to those handles, and a
database path is handed out only when neither it nor its SQLite side files is a link.

The first write also creates ``.codeward/.gitignore`` naming the caches, so ``git add .`` does
not commit a database. Gateway pins stay out of it on purpose: a team may want to share them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

NAME = ".codeward"
"""The folder's name under a root; the only place codeward spells it."""

INDEX = "index.sqlite"
REGISTRY_INDEX = "registry.sqlite3"
OUTPUTS = "outputs"
LOGS = "logs"
SHELL_LOG = "logs/shell.jsonl"
NETWORK_LOG = "logs/network.jsonl"
"""One line per connection the egress proxy allowed or refused (``[network]``)."""
VENVS = "venvs"
PINS = "gateway-pins.json"
CHECKPOINTS = "checkpoints"
GIT_HISTORY = "git-history.json"
"""Which repositories' histories hold a secret, by the state of their refs (:mod:`codeward.engines.git.history`)."""
LOCKS = "locks"
WRITE_LOCK = "locks/repository-names.lock"
"""The lock every codeward process on a root takes around a write that could make a folder a git
repository, and around a sandboxed run's write-back (see :meth:`StateDir.locked`)."""
LOCK_POLL_SECONDS = 0.02

GITIGNORE = f"""\
# Written by codeward: its caches, outputs, logs and environments, rebuilt as needed.
# Delete this file to track them. ({PINS} is left out on purpose: a team may share pins.)
{INDEX}*
{REGISTRY_INDEX}*
{OUTPUTS}/
{LOGS}/
{VENVS}/
{CHECKPOINTS}/
{GIT_HISTORY}
{LOCKS}/
"""
OUTPUTS_GITIGNORE = "# Written by codeward: saved tool outputs are not tracked.\n*\n"
"""A ``.gitignore`` for an outputs folder outside ``.codeward`` (the registry's ``.ai/outputs``)."""

_OUR_HEADER = b"# Written by codeward"
SQLITE_SIDE_SUFFIXES = ("", "-wal", "-shm", "-journal", ".lock")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class StateDirError(OSError):
    """A part of ``.codeward`` is not what codeward made (a link, a file where a folder should be)."""


class LockBusy(Exception):
    """Another process held a ``.codeward`` lock for longer than the caller would wait."""


@dataclass(frozen=True)
class StateDir:
    """``<root>/.codeward`` of one root (resolved, absolute)."""

    root: Path

    @property
    def path(self) -> Path:
        return self.root / NAME

    def __truediv__(self, rel: str) -> Path:
        """A path inside the folder (nothing is checked or created)."""
        return self.path / rel

    @property
    def index(self) -> Path:
        return self / INDEX

    @property
    def registry_index(self) -> Path:
        return self / REGISTRY_INDEX

    @property
    def outputs(self) -> Path:
        return self / OUTPUTS

    @property
    def shell_log(self) -> Path:
        return self / SHELL_LOG

    @property
    def venvs(self) -> Path:
        return self / VENVS

    @property
    def pins(self) -> Path:
        return self / PINS

    @property
    def checkpoints(self) -> Path:
        return self / CHECKPOINTS

    # -- safe writes ------------------------------------------------------------------------

    @contextmanager
    def open_folder(self, rel: str = "") -> Iterator[int]:
        """A descriptor of ``.codeward/rel``, created as needed, reached without following a link.

        Raises :class:`StateDirError` when a component is a link or not a folder, ``OSError``
        when the root is not writable.
        """
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in [NAME, *[p for p in rel.split("/") if p]]:
                if part in (".", ".."):
                    raise StateDirError(f"{rel!r} is not a path inside {NAME}")
                child = _open_or_make_dir_at(fd, part, self.path / rel)
                os.close(fd)
                fd = child
                if part == NAME:
                    _ensure_gitignore(fd)
            yield fd
        finally:
            os.close(fd)

    def folder(self, rel: str = "") -> Path:
        """``.codeward/rel`` created (safely, with the ``.gitignore``); its path for tools that need one
        (``python -m venv``). Raises :class:`StateDirError` or ``OSError`` as :meth:`open_folder`."""
        with self.open_folder(rel):
            pass
        return self.path / rel if rel else self.path

    def append(self, rel: str, data: bytes, mode: int = 0o600) -> None:
        """Append ``data`` to ``.codeward/rel`` with one ``write`` (concurrent appends never interleave)."""
        folder, _, name = rel.rpartition("/")
        with self.open_folder(folder) as dir_fd:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                         dir_fd=dir_fd)
            try:
                _require_regular(fd, self / rel)
                os.write(fd, data)
            finally:
                os.close(fd)

    def write_new(self, rel: str, data: bytes, mode: int = 0o644) -> bool:
        """Create ``.codeward/rel`` with ``data``; False when it already exists (it is left alone)."""
        folder, _, name = rel.rpartition("/")
        with self.open_folder(folder) as dir_fd:
            try:
                _write_new_at(dir_fd, name, data, mode, missing_ok=False)
            except FileExistsError:
                return False
        return True

    def replace(self, rel: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``.codeward/rel`` atomically (temp file, fsync, rename in the same folder)."""
        folder, _, name = rel.rpartition("/")
        with self.open_folder(folder) as dir_fd:
            temp = f".{name}.{secrets.token_hex(4)}.tmp"
            _write_new_at(dir_fd, temp, data, mode, missing_ok=False, sync=True)
            try:
                os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise

    @contextmanager
    def locked(self, rel: str, timeout: float) -> Iterator[None]:
        """Hold an exclusive advisory lock (``flock``) on ``.codeward/rel``, shared by every process
        on this machine that takes it; wait up to ``timeout`` seconds, then raise :class:`LockBusy`.

        The file is opened read-only (any user who can read it can lock it, so a server run as
        root and one run as the project's owner exclude each other) and never through a link.
        The kernel drops the lock when the holder exits, however it ends. On NFS, ``flock`` is
        carried over the network lock manager (``lockd``): without one it locks nothing beyond
        this machine. Raises ``OSError``/:class:`StateDirError` when the file cannot be made.
        """
        folder, _, name = rel.rpartition("/")
        with self.open_folder(folder) as dir_fd:
            fd = os.open(name, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644,
                         dir_fd=dir_fd)
        try:
            _require_regular(fd, self / rel)
            if not flock_within(fd, timeout):
                raise LockBusy(f"another codeward process has held {self / rel} for more than {timeout:g} s "
                               "(a long write-back, or a stuck process)")
            yield
        finally:
            os.close(fd)  # releases the lock

    def database(self, rel: str) -> Path:
        """The path of a SQLite database in ``.codeward/rel``, its folder created safely.

        Raises :class:`StateDirError` when the database or one of its side files (journal,
        WAL, shared memory, lock) is a link or not a regular file: SQLite opens by path and
        would follow it out of the project.
        """
        folder, _, name = rel.rpartition("/")
        with self.open_folder(folder) as dir_fd:
            for suffix in SQLITE_SIDE_SUFFIXES:
                try:
                    info = os.stat(name + suffix, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    raise StateDirError(f"{self / (rel + suffix)} is not a regular file (a link or a folder); "
                                        "codeward will not open a database through it — delete it")
        return self / rel


def flock_within(fd: int, timeout: float, poll: float = LOCK_POLL_SECONDS) -> bool:
    """Take an exclusive ``flock`` on ``fd``, waiting up to ``timeout`` seconds; False when another
    holder kept it that long. (Closing ``fd``, or the process ending, releases it.)"""
    import fcntl
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)


def of(root: Path) -> StateDir:
    """The state folder of ``root``."""
    return StateDir(root)


def ignore_outputs(folder: Path) -> None:
    """Leave a ``.gitignore`` ignoring everything in an outputs folder (never through a link; silent)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, _DIR_FLAGS)
        try:
            _write_new_at(fd, ".gitignore", OUTPUTS_GITIGNORE.encode(), 0o644)
        finally:
            os.close(fd)


def _ensure_gitignore(state_fd: int) -> None:
    """Write ``.gitignore`` when missing; bring one an older codeward wrote up to date; leave a user's alone."""
    with contextlib.suppress(OSError):
        try:  # read first: it is there on every call but the first
            fd = os.open(".gitignore", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=state_fd)
        except FileNotFoundError:
            _write_new_at(state_fd, ".gitignore", GITIGNORE.encode(), 0o644, missing_ok=True)
            return
        try:
            current = os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
        if current.startswith(_OUR_HEADER) and current != GITIGNORE.encode():
            temp = f".gitignore.{secrets.token_hex(4)}.tmp"
            _write_new_at(state_fd, temp, GITIGNORE.encode(), 0o644, missing_ok=False)
            os.rename(temp, ".gitignore", src_dir_fd=state_fd, dst_dir_fd=state_fd)


def _mkdir_at(dir_fd: int, name: str) -> bool:
    try:
        os.mkdir(name, 0o755, dir_fd=dir_fd)
    except FileExistsError:
        return False
    return True


def _open_or_make_dir_at(dir_fd: int, name: str, shown: Path) -> int:
    """Open the folder ``name`` (never through a link), made first when missing (opened first: it is there
    on every call but the first, and a failed ``mkdir`` costs a system call and an exception)."""
    try:
        return _open_dir_at(dir_fd, name, shown)
    except FileNotFoundError:
        _mkdir_at(dir_fd, name)
        return _open_dir_at(dir_fd, name, shown)


def _open_dir_at(dir_fd: int, name: str, shown: Path) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (40, 20):  # ELOOP (a link), ENOTDIR (a file)
            raise StateDirError(f"{shown} holds {name!r}, which is a link or a file, not a folder codeward made; "
                                "remove it and codeward will recreate it") from exc
        raise


def _write_new_at(dir_fd: int, name: str, data: bytes, mode: int, *, missing_ok: bool = True,
                  sync: bool = False) -> None:
    try:
        fd = os.open(name, _NEW_FILE_FLAGS, mode, dir_fd=dir_fd)
    except FileExistsError:
        if missing_ok:
            return
        raise
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _require_regular(fd: int, shown: Path) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise StateDirError(f"{shown} is not a regular file; remove it and codeward will recreate it")
