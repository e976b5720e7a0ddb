"""Whether a running program waits for its input: one of its processes is blocked reading the
pipe codeward holds the other end of, and nothing written to it is still unread.

Read from ``/proc``: each process of the run (its cgroup, else the tree under the main process)
whose descriptor 0 is that pipe, each of its threads' ``syscall`` file (the number and arguments
of the system call a blocked thread is in; ``running`` otherwise). A thread blocked in
``read``/``readv``/``pread64`` on descriptor 0 waits for input; so does one whose kernel wait
channel is the pipe's reader (``pipe_read``/``pipe_wait``) when its syscall file cannot be read.
A program that waits in ``poll``/``select``/``epoll`` on several descriptors (node's REPL) is not
told apart from one waiting on a socket, and reads as running.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import struct
import termios
from collections.abc import Iterable

READ_CALLS = {"x86_64": frozenset({0, 17, 19}), "aarch64": frozenset({63, 65, 67})}
"""``read``, ``pread64``, ``readv`` on the machines codeward runs on."""
PIPE_WAITS = frozenset({"pipe_read", "pipe_wait", "pipe_wait_readable"})
MAX_PROCESSES = 256


def unread_bytes(fd: int) -> int:
    """Bytes written to a pipe and not yet read (``FIONREAD`` works on either end on Linux)."""
    try:
        data = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return 0
    return int(struct.unpack("i", data)[0])


def waits_for_input(stdin_fd: int, pids: Iterable[int]) -> bool:
    """Whether a process of ``pids`` is blocked reading the pipe whose write end is ``stdin_fd``,
    everything written to it read."""
    try:
        pipe = f"pipe:[{os.fstat(stdin_fd).st_ino}]"
    except OSError:
        return False
    if unread_bytes(stdin_fd):
        return False
    calls = READ_CALLS.get(platform.machine(), frozenset())
    for pid in pids:
        try:
            if os.readlink(f"/proc/{pid}/fd/0") != pipe:
                continue
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        if any(_reads_stdin(pid, tid, calls) for tid in threads):
            return True
    return False


def _reads_stdin(pid: int, tid: str, calls: frozenset[int]) -> bool:
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/syscall", encoding="ascii") as handle:
            fields = handle.read().split()
    except OSError:
        fields = []
    if len(fields) >= 2 and fields[0].isdigit():
        return int(fields[0]) in calls and int(fields[1], 16) == 0
    if fields:  # "running", or a thread between calls
        return False
    with contextlib.suppress(OSError), open(f"{base}/wchan", encoding="ascii") as handle:
        return handle.read().strip() in PIPE_WAITS
    return False


def tree_of(pid: int) -> list[int]:
    """``pid`` and its descendants, through ``/proc/PID/task/TID/children`` (at most :data:`MAX_PROCESSES`)."""
    found: list[int] = []
    queue = [pid]
    while queue and len(found) < MAX_PROCESSES:
        current = queue.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tasks:
            with contextlib.suppress(OSError, ValueError), open(f"/proc/{current}/task/{tid}/children",
                                                               encoding="ascii") as handle:
                queue += [int(child) for child in handle.read().split()]
    return found
