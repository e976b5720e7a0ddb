"""Locks that serialise writes within one server: one per file path, and one shared by every
write that adds a name which can make a folder a git repository.

The catalog's locks step (:class:`~codeward.kernel.steps.HoldWriteLocks`) holds the locks of the paths a
call's arguments name while the call runs. A tool
that writes files its arguments do not name (``apply_patch``'s diff, ``run_shell``'s
write-back) takes them itself through :meth:`codeward.kernel.context.CallInfo.hold_writes`, so that two
concurrent calls cannot each add half of a repository after both were checked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from codeward.kernel.workspace import GIT_MARKER_LOCK, git_marker_lock_key


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
    def hold(self, paths: Iterable[str]) -> Iterator[None]:
        keys = sorted(set(paths))  # one order for everyone: two calls never wait on each other crosswise
        with self._guard:
            locks = [self._locks.setdefault(key, _PathLock()) for key in keys]
            for lock in locks:
                lock.users += 1
        try:
            with ExitStack() as stack:
                for lock in locks:
                    stack.enter_context(lock.lock)
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
