"""Writable views of host directories whose writes never reach the host directly.

A sandboxed program that must change a project (``run_shell``) sees each root through a
kernel overlay: the project is the read-only lower layer, a private directory the upper
layer. Everything the program writes, renames or deletes lands in the upper layer (new
files, copied-up changes, whiteouts for deletions); the caller then decides, file by file,
what reaches the project (:mod:`codeward.sandbox_changes` applies them through the
workspace's write checks).

Debian's bubblewrap 0.8 has no overlay options, so the overlay is mounted before bwrap
starts, in the child between fork and exec: the child enters a user and mount namespace of
its own (its uid mapped to itself: the only mapping an unprivileged user may write, and the
one overlayfs accepts there), makes every mount private, mounts one overlay per directory
with ``userxattr``, and execs bwrap, which binds the merged directory at the project's
path. The mounts exist only in that namespace: the host never sees them, and they vanish
with the run. Files of the project owned by another user than codeward's are not mapped in
that namespace: the program can read them but not change them (EOVERFLOW).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_REC = 0x4000
PR_SET_DUMPABLE = 4
MS_PRIVATE = 1 << 18
OVERLAY_UNAVAILABLE_EXIT = 125
"""Exit status of the child when the overlay cannot be mounted (the message is on stderr)."""


@dataclass(frozen=True)
class Layer:
    """One overlaid directory: ``lower`` (the host's), and the private upper/work/merged dirs."""

    lower: Path
    upper: Path
    work: Path
    merged: Path


@dataclass
class Overlays:
    """The private layers of one run, in one temporary directory removed by :meth:`close`."""

    base: Path
    layers: list[Layer] = field(default_factory=list)
    copies: list[tuple[Path, Path]] = field(default_factory=list)
    """(host file, private copy) for single files shown writable (tracked files outside roots)."""

    @classmethod
    def create(cls, directories: Sequence[Path], files: Sequence[Path] = (),
               owner: tuple[int, int] | None = None) -> Overlays:
        """Layers for ``directories`` and private copies of ``files``; raises ``OSError``.

        ``owner``: the (uid, gid) the run will have (a root caller running it as the project's
        owner), who must own the layers.
        """
        base = Path(tempfile.mkdtemp(prefix="codeward-overlay-"))
        made = cls(base)
        try:
            created = [base]
            for index, directory in enumerate(directories):
                layer = Layer(directory, base / f"{index}.upper", base / f"{index}.work", base / f"{index}.merged")
                for path in (layer.upper, layer.work, layer.merged):
                    path.mkdir(mode=0o700)
                    created.append(path)
                made.layers.append(layer)
            for index, original in enumerate(files):
                copy = base / f"{index}.file"
                shutil.copy2(original, copy, follow_symlinks=False)
                made.copies.append((original, copy))
                created.append(copy)
            if owner is not None:
                for path in created:
                    os.lchown(path, *owner)
        except BaseException:
            made.close()
            raise
        return made

    def close(self) -> None:
        """Remove the layers (overlayfs leaves its ``work/work`` folder with mode 0: made
        removable first, or a normal user could not delete it)."""
        for layer in self.layers:
            with contextlib.suppress(OSError):
                for folder in layer.work.iterdir():
                    folder.chmod(0o700)
        shutil.rmtree(self.base, ignore_errors=True)

    def mounter(self) -> Callable[[], None]:
        """What the child runs before exec: see :func:`namespace_entry`."""
        return namespace_entry(self.layers)


def namespace_entry(layers: Sequence[Layer], new_network: bool = False) -> Callable[[], None]:
    """What the child runs between fork and exec: enter a new user and mount namespace (and a
    network namespace with ``new_network``), map its own uid and gid to root there, make every
    mount private and mount the overlay of each layer.

    Everything is prepared here, in the parent; the child only makes system calls. On failure
    it writes the reason to stderr and exits with :data:`OVERLAY_UNAVAILABLE_EXIT`.
    """
    libc = _libc()
    unshare, mount, prctl = libc.unshare, libc.mount, libc.prctl
    flags = CLONE_NEWUSER | CLONE_NEWNS | (CLONE_NEWNET if new_network else 0)
    mounts = [(str(layer.merged).encode(),
               f"lowerdir={_escape(layer.lower)},upperdir={_escape(layer.upper)},"
               f"workdir={_escape(layer.work)},userxattr".encode()) for layer in layers]

    def enter() -> None:
        uid, gid = os.geteuid(), os.getegid()  # after any switch to an unprivileged user
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # a switch from root made /proc/self root's: take it back
        if unshare(flags) != 0:
            _die(b"cannot create a user namespace for the overlay", ctypes.get_errno())
        for path, data in ((b"/proc/self/setgroups", b"deny"), (b"/proc/self/uid_map", b"0 %d 1" % uid),
                           (b"/proc/self/gid_map", b"0 %d 1" % gid)):
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        if mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            _die(b"cannot make the mounts private", ctypes.get_errno())
        for target, options in mounts:
            if mount(b"overlay", target, b"overlay", 0, options) != 0:
                _die(b"cannot mount the overlay of the workspace", ctypes.get_errno())

    return enter


def _escape(path: Path) -> str:
    """A path as overlayfs options take it: ``,``, ``:`` and ``\\`` escaped."""
    return str(path).replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _die(message: bytes, error: int) -> None:
    os.write(2, b"codeward: " + message + b": " + os.strerror(error).encode() + b"\n")
    os._exit(OVERLAY_UNAVAILABLE_EXIT)


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.unshare.argtypes = [ctypes.c_int]
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def overlay_failure(stderr: str) -> str | None:
    """The child's message when the overlay could not be mounted, else ``None``."""
    for line in stderr.splitlines():
        if line.startswith("codeward: cannot ") and ("overlay" in line or "mounts private" in line):
            return line.removeprefix("codeward: ")
    return None


def overlays_work(probe_dir: Path | None = None) -> str | None:
    """``None`` when an overlay can be mounted here, else the reason (one fork, a few ms)."""
    with contextlib.ExitStack() as stack:
        base = Path(tempfile.mkdtemp(prefix="codeward-overlay-probe-", dir=probe_dir))
        stack.callback(shutil.rmtree, base, True)
        lower = base / "lower"
        lower.mkdir()
        overlays = Overlays.create([lower])
        stack.callback(overlays.close)
        enter = overlays.mounter()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.close(read_end)
                os.dup2(write_end, 2)
                enter()
                os._exit(0)
            except BaseException:
                os._exit(OVERLAY_UNAVAILABLE_EXIT)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as handle:
            message = handle.read().decode("utf-8", "replace").strip()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == 0:
            return None
        return message.removeprefix("codeward: ") or "the overlay could not be mounted"
    return "the overlay could not be mounted"
