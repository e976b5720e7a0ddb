"""A ``run_shell`` box prepared ahead of the call, so a script pays for its own run and not the box's.

Most of a sandboxed script's cost is the box, not the script: the fork, the user and mount
namespaces, the disk cap's tmpfs and the overlays mounted before bwrap starts, bwrap's own
namespaces, binds and seccomp filter, the cgroup. After a run, codeward prepares the next box of
the same shape in the background: the very box the next run would get — the same
:class:`~codeward.engines.sandbox.SandboxRequest` (binds, secrets covered, limits, disk cap,
network), built from the same plan — with, in place of the script, a small bash waiter that
reads the command line from a pipe and ``exec``\\ s it (the script's process is then the one
bwrap started, with the environment bwrap gave it).

A prepared box is used only for a run whose *shape* — everything of the request but the
script's text: the plan (roots, covered secrets and their list as the call computed it), the
program's environment, binds and limits, the owner, the disk cap, the backend, the shared
network — equals the one it was made for; anything else runs in a fresh box as before, and the
next box is prepared for the new shape. So a secret that appears, a changed ``mcp_env.toml`` or
``[shell]`` limit never reaches a box made before it: the comparison fails closed. Runs with
single files outside the roots (whose private copies are taken when the box is made) are never
prepared ahead.

One box per server, unused for at most :data:`IDLE_S` seconds; one thread makes them (bwrap
dies with the thread that started it, so that thread lives as long as the pool) and removes the
layers and cgroup of finished runs, off the caller's time. Both are handed to it once the call's answer
is out (``ctx.call.later``: :mod:`codeward.kernel.afterwards`), so they never compete with the end of the
call they follow. The server's end kills a waiting box.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codeward.engines.sandbox.runner import terminate

if TYPE_CHECKING:
    import subprocess

    from codeward.engines.sandbox.overlay import Overlays
    from codeward.engines.sandbox.runner import Launch

IDLE_S = 120.0
"""A prepared box nobody took for this long is dropped (made again by the next run)."""
WAITER = ('mapfile -t -d "" -u {fd} argv; exec {fd}<&-; '
          'if [[ ${{#argv[@]}} -eq 5 && ${{argv[0]}} == "$0" && ${{argv[1]}} == --noprofile && ${{argv[2]}} == --norc '
          '&& ${{argv[3]}} == -c ]]; then set -- "${{argv[4]}}"; unset argv; eval "set --; $1"; '
          'else exec -- "${{argv[@]}}"; fi')
"""The program a prepared box runs until its script comes: read the NUL-separated command line
from descriptor ``fd`` and close it. A bash script run the way the waiter itself was started
(``bash --noprofile --norc -c SCRIPT``, the same bash: ``run_shell``'s) runs in the waiter, with no
positional parameters — starting a second bash was a millisecond of a 16 ms ``echo hi``; what
differs is only ``$BASH_EXECUTION_STRING`` and a syntax error naming ``eval`` where ``-c`` stood.
Any other command line is executed in the waiter's place (``exec``: bash adds nothing to the
environment). Either way the script runs in the process bwrap started."""

BOX_RUN_EVENT = "codeward.box.run"
"""The audit event (PEP 578) said when a program starts in a box prepared ahead: ``(argv, workdir)``, as
``subprocess.Popen`` says a spawn (the box itself was spawned before the program was known)."""


def waiter_argv(bash: str, fd: int) -> list[str]:
    return [bash, "--noprofile", "--norc", "-c", WAITER.format(fd=fd)]


@dataclass(frozen=True)
class BoxShape:
    """What a prepared box was made for: everything of a run but its command line."""

    program: object
    """The run's :class:`~codeward.engines.contained.project_sandbox.Program` with an empty ``argv``
    (its environment, binds, limits, timeout, network), compared field by field."""
    directories: tuple[str, ...]
    hidden: tuple[str, ...]
    """The covered secrets and private folders, as the plan listed them."""
    owner: tuple[int, int] | None
    disk_mb: int | None
    backend: int
    """``id()`` of the sandbox backend object (one per server)."""


@dataclass
class Prepared:
    """A started box waiting for its command line on ``feed``."""

    shape: BoxShape
    proc: subprocess.Popen[bytes]
    launch: Launch
    overlays: Overlays
    feed: int
    made: float = field(default_factory=time.monotonic)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, argv: Sequence[str]) -> bool:
        """Hand the box its command line (it starts at once); ``False`` when the box did not take it."""
        data = b"".join(arg.encode() + b"\0" for arg in argv)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.feed, view):]
        except OSError:
            return False
        finally:
            self.close_feed()
        return True

    def close_feed(self) -> None:
        if self.feed >= 0:
            with contextlib.suppress(OSError):
                os.close(self.feed)
            self.feed = -1

    def discard(self) -> None:
        """Kill the waiting box and remove everything it held."""
        self.close_feed()
        terminate(self.proc, self.launch)
        self.overlays.close()


class WarmBoxes:
    """At most one prepared box per server, for the shape of the last run that asked for one."""

    def __init__(self, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._ready: Prepared | None = None
        self._wanted: tuple[BoxShape, Callable[[], Prepared]] | None = None
        self._litter: list[Callable[[], None]] = []
        self._closed = False
        self._thread: threading.Thread | None = None

    def take(self, shape: BoxShape) -> Prepared | None:
        """The prepared box for ``shape``, now the caller's; ``None`` when there is none of that shape."""
        with self._lock:
            ready = self._ready
            if ready is None or ready.shape != shape:
                return None
            self._ready = None
        if ready.alive():
            return ready
        self.dispose(ready.discard)
        return None

    def waiting(self) -> bool:
        """Whether a prepared box waits for a run (it is made in the background after a run)."""
        with self._lock:
            return self._ready is not None

    def prepare(self, shape: BoxShape, make: Callable[[], Prepared]) -> None:
        """Have a box of ``shape`` made in the background (``make`` raises ``OSError`` when it cannot)."""
        with self._lock:
            if self._closed:
                return
            self._wanted = (shape, make)
            self._start()
            self._wake.notify()

    def dispose(self, cleanup: Callable[[], None]) -> None:
        """Run ``cleanup`` (a finished run's layers) on the pool's thread, off the caller's time."""
        with self._lock:
            if self._closed:
                run_now = True
            else:
                run_now = False
                self._litter.append(cleanup)
                self._start()
                self._wake.notify()
        if run_now:
            cleanup()

    def close(self) -> None:
        """The server is ending: kill the waiting box, finish the clean-ups."""
        with self._lock:
            self._closed = True
            ready, self._ready, self._wanted = self._ready, None, None
            litter, self._litter = self._litter, []
            thread = self._thread
            self._wake.notify()
        if ready is not None:
            ready.discard()
        for cleanup in litter:
            cleanup()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    # -- the pool's thread -----------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, daemon=True, name="codeward-warm-box")
            self._thread.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._closed and not self._litter and self._wanted is None and not self._stale():
                    self._wake.wait(self._wait_s())
                if self._closed:
                    return
                litter, self._litter = self._litter, []
                wanted, self._wanted = self._wanted, None
                stale = self._ready if self._stale() or (wanted is not None and self._ready is not None
                                                          and self._ready.shape != wanted[0]) else None
                if stale is not None:
                    self._ready = None
                keep = wanted is None or (self._ready is not None and self._ready.shape == wanted[0])
            for cleanup in litter:
                with contextlib.suppress(OSError):
                    cleanup()
            if stale is not None:
                stale.discard()
            if keep or wanted is None:
                continue
            try:
                made = wanted[1]()
            except OSError:
                continue  # the next run starts a box of its own, which says what is wrong
            with self._lock:
                if self._closed or self._ready is not None:
                    extra: Prepared | None = made
                else:
                    self._ready, extra = made, None
            if extra is not None:
                extra.discard()

    def _stale(self) -> bool:
        return self._ready is not None and (time.monotonic() - self._ready.made > self.idle_s
                                            or not self._ready.alive())

    def _wait_s(self) -> float | None:
        return None if self._ready is None else max(0.05, self._ready.made + self.idle_s - time.monotonic())
