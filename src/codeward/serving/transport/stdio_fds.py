"""Claiming the process's stdin/stdout for a protocol: a private wire, a diverted standard fd.

While a server speaks JSON-RPC on fd 0/1, anything else in the process that reads stdin or
prints to stdout (a tool's stray ``print``, a child process) would steal or corrupt protocol
bytes. So the wire moves to a private descriptor, fd 0 points at the null device and fd 1 at
stderr; both are put back on release.

The wire must be non-blocking for the event loop to drive it. ``O_NONBLOCK`` belongs to the
*open file description*, which a terminal shares with the shell and with stderr, so the wire is
re-opened through ``/proc/self/fd`` when the system allows it (a fresh description whose flags
nobody else sees). Where it does not, a pipe wire shares the description and its blocking
mode is restored on release; a terminal is then left to the SDK's threaded transport. Sockets
are always left to it: asyncio's write-pipe transport takes a readable socket for a closed one,
and a socket on stdout usually carries stdin's traffic too.
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass


@dataclass
class ClaimedFd:
    """One standard fd taken over: ``wire`` carries the protocol, ``fd`` is diverted."""

    fd: int
    wire: int
    saved: int
    """A duplicate of the original descriptor, put back on ``fd`` by :meth:`release`."""
    restore_blocking: bool | None = None
    """The description's original blocking mode, when the wire shares (and changed) it."""
    diverted: bool = False

    def divert(self, open_target: Callable[[], int]) -> None:
        """Point ``fd`` at ``open_target()`` (the null device, stderr) while serving."""
        target = open_target()
        try:
            os.dup2(target, self.fd)
        finally:
            os.close(target)
        self.diverted = True

    def release(self) -> None:
        """Put the original descriptor back on ``fd``; the wire itself is closed by its owner."""
        if self.diverted:
            with suppress(OSError):
                os.dup2(self.saved, self.fd)
            self.diverted = False
        if self.restore_blocking is not None:
            with suppress(OSError):
                os.set_blocking(self.saved, self.restore_blocking)
        with suppress(OSError):
            os.close(self.saved)


def is_pipe_or_terminal(fd: int) -> bool:
    """Pipes and character devices (terminals) can be driven as pipes; files and sockets are not."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def claim(fd: int, *, writing: bool) -> ClaimedFd | None:
    """Take ``fd`` over with a non-blocking wire, or ``None`` when that cannot be done safely.

    Nothing is diverted yet: call :meth:`ClaimedFd.divert` once the wire is known to work.
    """
    if sys.platform == "win32" or not is_pipe_or_terminal(fd):
        return None
    try:
        saved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None
    wire = _reopen_private(saved, writing=writing)
    if wire is not None:
        return ClaimedFd(fd=fd, wire=wire, saved=saved)
    if stat.S_ISCHR(os.fstat(saved).st_mode):
        # A terminal's description is shared with the shell and stderr: never make it non-blocking.
        os.close(saved)
        return None
    try:
        wire = fcntl.fcntl(saved, fcntl.F_DUPFD_CLOEXEC, 3)
        blocking = os.get_blocking(saved)
    except OSError:
        os.close(saved)
        return None
    return ClaimedFd(fd=fd, wire=wire, saved=saved, restore_blocking=blocking)


def open_null_for_reading() -> int:
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def open_stderr_for_writing() -> int:
    """Stray stdout output goes to stderr (the null device if there is no stderr)."""
    try:
        return fcntl.fcntl(2, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


def _reopen_private(fd: int, *, writing: bool) -> int | None:
    """A new open file description of the same pipe or terminal (Linux ``/proc`` magic links)."""
    flags = (os.O_WRONLY if writing else os.O_RDONLY) | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        reopened = os.open(f"/proc/self/fd/{fd}", flags)
    except OSError:
        return None
    if not _same_file(fd, reopened):
        os.close(reopened)
        return None
    return reopened


def _same_file(a: int, b: int) -> bool:
    try:
        first, second = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)
