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

**The disk cap.** With ``disk_mb``, the layers do not live on the host's disk: in that same
namespace, before the overlays, the child mounts a tmpfs of that size on ``<base>/disk`` and
makes every upper and work directory on it, with the run's ``/tmp`` and the private copies of
single files beside them — so everything one run writes shares one bounded space, in memory,
invisible to the host. Before it execs bwrap the child hands the parent a descriptor of that
tmpfs over a socket (``SCM_RIGHTS``); the parent holds it, which keeps the tmpfs alive after
the namespace is gone, and reads the layers through ``/proc/self/fd/N/...`` (see
:meth:`Overlays.receive`). :meth:`Overlays.close` drops it, and the memory with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeward.engines.sandbox.shared_net import SharedNetwork

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_REC = 0x4000
PR_SET_DUMPABLE = 4
MS_PRIVATE = 1 << 18
MS_NOSUID = 0x2
MS_NODEV = 0x4
MIB = 1024 * 1024
DISK_FULL_MARGIN = MIB
"""A run's disk counts as full when less than this is left (a tmpfs refuses a write for want of one page)."""
COPY_CHUNK = 1 << 20
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
    disk: Disk | None = None
    """The size-limited tmpfs the layers live on (``None``: they live in ``base`` on the host's disk)."""

    @classmethod
    def create(cls, directories: Sequence[Path], files: Sequence[Path] = (),
               owner: tuple[int, int] | None = None, disk_mb: int | None = None) -> Overlays:
        """Layers for ``directories`` and private copies of ``files``; raises ``OSError``.

        ``owner``: the (uid, gid) the run will have (a root caller running it as the project's
        owner), who must own the layers. ``disk_mb``: put the layers, the copies and the run's
        ``/tmp`` on a tmpfs of that size (see the module docstring).
        """
        base = Path(tempfile.mkdtemp(prefix="codeward-overlay-"))
        made = cls(base)
        try:
            created = [base]
            on = base
            if disk_mb is not None:
                made.disk = Disk(base / "disk", disk_mb)
                made.disk.mount_point.mkdir(mode=0o700)
                created.append(made.disk.mount_point)
                on = made.disk.mount_point
            for index, directory in enumerate(directories):
                layer = Layer(directory, on / f"{index}.upper", on / f"{index}.work", base / f"{index}.merged")
                for path in (layer.upper, layer.work, layer.merged):
                    if not path.is_relative_to(on) or on == base:  # on the disk: made by the child
                        path.mkdir(mode=0o700)
                        created.append(path)
                made.layers.append(layer)
            for index, original in enumerate(files):
                copy = base / f"{index}.file"
                shutil.copy2(original, copy, follow_symlinks=False)
                created.append(copy)
                made.copies.append((original, copy if made.disk is None else on / f"{index}.file"))
            if owner is not None:
                for path in created:
                    os.lchown(path, *owner)
        except BaseException:
            made.close()
            raise
        return made

    def close(self) -> None:
        """Remove the layers (overlayfs leaves its ``work/work`` folder with mode 0: made
        removable first, or a normal user could not delete it) and release the disk."""
        for layer in self.layers:
            with contextlib.suppress(OSError):
                for folder in layer.work.iterdir():
                    folder.chmod(0o700)
        if self.disk is not None:
            self.disk.release()
        shutil.rmtree(self.base, ignore_errors=True)

    def mounter(self, new_network: bool = False, join: SharedNetwork | None = None) -> Callable[[], None]:
        """What the child runs before exec: see :func:`namespace_entry`."""
        if self.disk is not None:
            self.disk.open_channel()
        staged = [(self.base / f"{index}.file", copy) for index, (_original, copy) in enumerate(self.copies)]
        return namespace_entry(self.layers, new_network, self.disk, staged if self.disk is not None else [], join)

    @property
    def scratch(self) -> Path | None:
        """The run's ``/tmp`` on the disk, or ``None`` (the sandbox then makes its own tmpfs)."""
        return self.disk.mount_point / SCRATCH_NAME if self.disk is not None else None

    def receive(self) -> None:
        """After the child started: take the disk's descriptor it sent, and from then on name
        every layer (and copy) by the path the parent reaches it at. Without a disk: nothing."""
        if self.disk is None or not self.disk.receive():
            return
        view, on = self.disk.view(), self.disk.mount_point
        self.layers = [replace(layer, upper=view / layer.upper.relative_to(on),
                               work=view / layer.work.relative_to(on)) for layer in self.layers]
        self.copies = [(original, view / copy.relative_to(on)) for original, copy in self.copies]


SCRATCH_NAME = "tmp"


@dataclass
class Disk:
    """A size-limited tmpfs mounted in a run's own namespace, held by the parent through a descriptor."""

    mount_point: Path
    size_mb: int
    fd: int | None = None
    channel: tuple[socket.socket, socket.socket] | None = None
    """(parent's end, child's end) of the socket the child sends the tmpfs's descriptor over."""

    def open_channel(self) -> None:
        self.close_channel()
        self.channel = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)

    def close_channel(self) -> None:
        if self.channel is not None:
            for end in self.channel:
                end.close()
            self.channel = None

    def receive(self) -> bool:
        """Take the descriptor the child sent (it did before exec); ``False`` when it sent none."""
        if self.channel is None:
            return False
        try:
            _message, fds, _flags, _address = socket.recv_fds(self.channel[0], 16, 1, socket.MSG_DONTWAIT)
        except OSError:
            fds = []
        finally:
            self.close_channel()
        if not fds:
            return False
        if self.fd is not None:
            os.close(self.fd)
        self.fd = fds[0]
        return True

    def view(self) -> Path:
        """Where the parent reaches the tmpfs (valid while it holds the descriptor)."""
        assert self.fd is not None
        return Path(f"/proc/self/fd/{self.fd}")

    def usage(self) -> tuple[int, int] | None:
        """(bytes used, bytes in all) of the tmpfs, ``None`` before it is held."""
        if self.fd is None:
            return None
        try:
            info = os.fstatvfs(self.fd)
        except OSError:
            return None
        total = info.f_blocks * info.f_frsize
        return total - info.f_bavail * info.f_frsize, total

    def full(self) -> bool:
        """Whether the run has used (nearly) all of it."""
        usage = self.usage()
        return usage is not None and usage[1] - usage[0] < DISK_FULL_MARGIN

    def release(self) -> None:
        self.close_channel()
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def namespace_entry(layers: Sequence[Layer], new_network: bool = False, disk: Disk | None = None,
                    staged: Sequence[tuple[Path, Path]] = (), join: SharedNetwork | None = None) -> Callable[[], None]:
    """What the child runs between fork and exec: enter a new user and mount namespace (and a
    network namespace with ``new_network``), map its own uid and gid to root there, make every
    mount private, mount the run's disk (with ``disk``: a tmpfs holding the layers, ``/tmp`` and
    the ``staged`` (host file, copy on the disk) pairs, its descriptor sent to the parent) and the
    overlay of each layer. With ``join``, first enter that shared network (and the user namespace
    owning it, inside which the new ones are made).

    Everything is prepared here, in the parent; the child only makes system calls. On failure
    it writes the reason to stderr and exits with :data:`OVERLAY_UNAVAILABLE_EXIT`.
    """
    libc = _libc()
    unshare, mount, prctl, setns = libc.unshare, libc.mount, libc.prctl, libc.setns
    flags = CLONE_NEWUSER | CLONE_NEWNS | (CLONE_NEWNET if new_network else 0)
    mounts = [(str(layer.merged).encode(),
               f"lowerdir={_escape(layer.lower)},upperdir={_escape(layer.upper)},"
               f"workdir={_escape(layer.work)},userxattr".encode()) for layer in layers]
    on_disk = [path for layer in layers for path in (layer.upper, layer.work)]
    disk_mount = None
    if disk is not None:
        disk_mount = (str(disk.mount_point).encode(), b"size=%d,mode=0700" % (disk.size_mb * MIB))
        on_disk = [*on_disk, disk.mount_point / SCRATCH_NAME]
    sender = disk.channel[1] if disk is not None and disk.channel is not None else None

    def make_disk() -> None:
        assert disk_mount is not None and disk is not None
        if mount(b"tmpfs", disk_mount[0], b"tmpfs", MS_NOSUID | MS_NODEV, disk_mount[1]) != 0:
            _die(b"cannot mount the overlay's disk (a size-limited tmpfs)", ctypes.get_errno())
        for path in on_disk:
            os.mkdir(path, 0o700)
        os.chmod(disk.mount_point / SCRATCH_NAME, 0o1777)
        for source, copy in staged:
            _copy_file(source, copy)
        if sender is not None:
            held = os.open(disk.mount_point, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            socket.send_fds(sender, [b"d"], [held])
            os.close(held)

    def enter() -> None:
        uid, gid = os.geteuid(), os.getegid()  # after any switch to an unprivileged user
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # a switch from root made /proc/self root's: take it back
        if join is not None and (setns(join.user_fd, CLONE_NEWUSER) != 0 or setns(join.net_fd, CLONE_NEWNET) != 0):
            _die(b"cannot join the session's shared network", ctypes.get_errno())
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
        if disk_mount is not None:
            make_disk()
        for target, options in mounts:
            if mount(b"overlay", target, b"overlay", 0, options) != 0:
                _die(b"cannot mount the overlay of the workspace", ctypes.get_errno())

    return enter


def _copy_file(source: Path, target: Path) -> None:
    """Copy a file's bytes, mode and times (in the child: system calls only)."""
    info = os.stat(source)
    reader = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        writer = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, stat.S_IMODE(info.st_mode))
        try:
            while chunk := os.read(reader, COPY_CHUNK):
                os.write(writer, chunk)
        finally:
            os.close(writer)
    finally:
        os.close(reader)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def _escape(path: Path) -> str:
    """A path as overlayfs options take it: ``,``, ``:`` and ``\\`` escaped."""
    return str(path).replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _die(message: bytes, error: int) -> None:
    os.write(2, b"codeward: " + message + b": " + os.strerror(error).encode() + b"\n")
    os._exit(OVERLAY_UNAVAILABLE_EXIT)


def _libc() -> ctypes.CDLL:
    """The C library's calls the child makes, from the interpreter's own process image (``dlopen(NULL)``:
    no ``ldconfig`` run, which ``ctypes.util.find_library`` costs every run)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.unshare.argtypes = [ctypes.c_int]
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def overlay_failure(stderr: str) -> str | None:
    """The child's message when the overlay could not be mounted, else ``None``."""
    for line in stderr.splitlines():
        if line.startswith("codeward: cannot ") and ("overlay" in line or "mounts private" in line):
            return line.removeprefix("codeward: ")
    return None


def overlays_work(probe_dir: Path | None = None, disk_mb: int | None = None) -> str | None:
    """``None`` when an overlay can be mounted here (with ``disk_mb``: on a tmpfs of that size, the
    disk cap), else the reason (one fork, a few ms)."""
    with contextlib.ExitStack() as stack:
        base = Path(tempfile.mkdtemp(prefix="codeward-overlay-probe-", dir=probe_dir))
        stack.callback(shutil.rmtree, base, True)
        lower = base / "lower"
        lower.mkdir()
        overlays = Overlays.create([lower], disk_mb=disk_mb)
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
