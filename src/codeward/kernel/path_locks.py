"""Locks that serialise writes: one per file path within one server, and one shared by every write
that adds a name which can make a folder a git repository — within the server, and across every
codeward process on the same root.

The catalog's locks step (:class:`~codeward.kernel.steps.HoldWriteLocks`) holds the locks of the paths a
call's arguments name while the call runs. A tool
that writes files its arguments do not name (``apply_patch``'s diff, ``run_shell``'s
write-back) takes them itself through :meth:`codeward.kernel.context.CallInfo.hold_writes`, so that two
concurrent calls cannot each add half of a repository after both were checked.

Two ``codeward serve`` processes on one project (two agent sessions, replicas on shared storage)
do not share memory, so :data:`GIT_MARKER_LOCK` is also an ``flock`` on
``<root>/.codeward/locks/repository-names.lock`` of every root (:meth:`codeward.kernel.state_dir.StateDir.locked`),
taken in one order by everyone. What holds where the kernel cannot lock (NFS without ``lockd``,
roots nested differently in two processes) is the re-check after the write
(:meth:`codeward.kernel.workspace.Workspace.completed_repository`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from codeward.kernel.state_dir import WRITE_LOCK, LockBusy, StateDir, StateDirError
from codeward.kernel.workspace import GIT_MARKER_LOCK, git_marker_lock_key

logger = logging.getLogger("codeward.locks")

CROSS_PROCESS_WAIT_SECONDS = 120.0
"""How long a write waits for another process's repository-making write or write-back."""

__all__ = ["CROSS_PROCESS_WAIT_SECONDS", "LockBusy", "PathLocks", "hold_roots", "write_lock_keys"]


class PathLocks:
    """One lock per key (a file path, or :data:`GIT_MARKER_LOCK`), so concurrent edits to a
    file run one after another.

    A key's lock lives only while a call holds or waits for it, so a long-running server
    does not keep one for every file it ever wrote. Locks are not re-entrant: a call holds
    each key once.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, _PathLock] = {}

    @contextmanager
    def hold(self, paths: Iterable[str], roots: Iterable[Path] = ()) -> Iterator[None]:
        """Hold every key; with :data:`GIT_MARKER_LOCK` among them, also the cross-process lock of
        each of ``roots`` (see :func:`hold_roots`)."""
        keys = sorted(set(paths))  # one order for everyone: two calls never wait on each other crosswise
        with self._guard:
            locks = [self._locks.setdefault(key, _PathLock()) for key in keys]
            for lock in locks:
                lock.users += 1
        try:
            with ExitStack() as stack:
                for lock in locks:
                    stack.enter_context(lock.lock)
                if GIT_MARKER_LOCK in keys:
                    stack.enter_context(hold_roots(roots))
                yield
        finally:
            with self._guard:
                for key, lock in zip(keys, locks, strict=True):
                    lock.users -= 1
                    if not lock.users:
                        del self._locks[key]

    def __len__(self) -> int:
        """Keys locked or waited for right now."""
        return len(self._locks)


@contextmanager
def hold_roots(roots: Iterable[Path], timeout: float | None = None) -> Iterator[None]:
    """The repository-names lock of every root, shared with every codeward process on the machine,
    taken in path order. A root where the lock file cannot be made (read-only, ``.codeward`` not
    codeward's) is passed over with a warning: the writes there are re-checked afterwards anyway.
    Raises :class:`LockBusy` when another process holds one for more than ``timeout`` seconds
    (default :data:`CROSS_PROCESS_WAIT_SECONDS`)."""
    wait = CROSS_PROCESS_WAIT_SECONDS if timeout is None else timeout
    with ExitStack() as stack:
        for root in sorted(set(roots), key=str):
            try:
                stack.enter_context(StateDir(root).locked(WRITE_LOCK, wait))
            except (OSError, StateDirError) as exc:
                logger.warning("no cross-process write lock in %s (%s); writes there rely on the re-check", root,
                               exc)
        yield


@dataclass
class _PathLock:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


def write_lock_keys(paths: Iterable[Path], *, any_name: bool = False) -> list[str]:
    """The keys to hold while writing ``paths``: each path, and :data:`GIT_MARKER_LOCK` when one
    of them could add a repository-making name — or always with ``any_name``, for a writer
    that does not know its paths before it writes (a shell run's write-back)."""
    keys = [str(path) for path in paths]
    if any_name or any(git_marker_lock_key(path) for path in paths):
        keys.append(GIT_MARKER_LOCK)
    return keys
