"""One loopback-only network namespace that several sandboxed runs of one client share, so a
dev server started with ``process_start`` can be reached from a later ``run_shell`` or process
— and from nothing else: the namespace has only its own ``lo`` (no route out, not the host's
loopback).

It is made by a short-lived child that enters a new user and network namespace as the user the
runs will have (the project's owner when codeward is root), brings ``lo`` up there and exits;
the server keeps both namespaces alive by descriptors. A run joins them in its child between
fork and exec (``setns`` into the user namespace, which gives it the capability to join the
network one), then makes its own nested user and mount namespace for the overlay as usual, and
bwrap runs without ``--unshare-net``. :meth:`close` drops the descriptors; the namespace goes
with its last member.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeward.engines.sandbox.egress_proxy import Served

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCSIFFLAGS = 0x8914
IFF_UP_LOOPBACK = 0x1 | 0x8


@dataclass
class SharedNetwork:
    """Descriptors of a loopback-only network namespace and of the user namespace owning it."""

    user_fd: int
    net_fd: int
    run_as: tuple[int, int] | None = None
    """The user runs that join it run as (``None``: as this process), the one its user namespace maps."""
    egress: Served | None = None
    """The egress proxy serving ``127.0.0.1:3128`` inside, when the operator allows some domains."""

    @classmethod
    def create(cls, run_as: tuple[int, int] | None = None) -> SharedNetwork:
        """Make one for runs as ``run_as`` (``None``: as this process); raises ``OSError``."""
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = run_as if run_as is not None else (os.geteuid(), os.getegid())
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            status = 1
            try:
                os.close(to_child)
                os.close(from_child)
                if run_as is not None and (os.geteuid(), os.getegid()) != run_as:
                    os.setgroups([])
                    os.setgid(gid)
                    os.setuid(uid)
                if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "cannot create a network namespace")
                os.write(to_parent, b"u")
                if os.read(from_parent, 1) != b"m":
                    raise OSError("the parent did not map the user")
                with socket.socket() as handle:
                    fcntl.ioctl(handle.fileno(), SIOCSIFFLAGS, struct.pack("16sH", b"lo", IFF_UP_LOOPBACK))
                os.write(to_parent, b"l")
                os.read(from_parent, 1)
                status = 0
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.write(to_parent, b"!" + str(exc).encode()[:200])
            os._exit(status)
        os.close(from_parent)
        os.close(to_parent)
        try:
            if os.read(from_child, 1) != b"u":
                raise OSError(f"could not make the shared network: {os.read(from_child, 200).decode(errors='replace')}")
            for name, data in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY)
                try:
                    os.write(fd, data.encode())
                finally:
                    os.close(fd)
            os.write(to_child, b"m")
            answer = os.read(from_child, 201)
            if answer[:1] != b"l":
                why = answer[1:].decode(errors="replace")
                raise OSError(f"could not bring up the shared network's loopback: {why}")
            user_fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
            try:
                net_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                os.close(user_fd)
                raise
            os.write(to_child, b"x")
            return cls(user_fd, net_fd, run_as)
        finally:
            os.close(to_child)
            os.close(from_child)
            os.waitpid(pid, 0)

    def listen(self, port: int) -> socket.socket:
        """A TCP socket listening on ``127.0.0.1:port`` *inside* the namespace, held by this process.

        A socket stays in the namespace it was made in: the egress proxy accepts the runs'
        connections on it from the host side, with no forwarder in the box and no other route out.
        A short-lived child joins the namespace (as the runs do), binds, and passes the socket back
        (``SCM_RIGHTS``); raises ``OSError``."""
        libc = ctypes.CDLL(None, use_errno=True)
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            status = 1
            try:
                parent_end.close()
                for fd, kind in ((self.user_fd, CLONE_NEWUSER), (self.net_fd, CLONE_NEWNET)):
                    if libc.setns(fd, kind) != 0 and kind == CLONE_NEWNET:
                        raise OSError(ctypes.get_errno(), "cannot join the shared network")
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
                    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    listener.bind(("127.0.0.1", port))
                    listener.listen(128)
                    socket.send_fds(child_end, [b"l"], [listener.fileno()])
                status = 0
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    child_end.sendall(b"!" + str(exc).encode()[:200])
            os._exit(status)
        child_end.close()
        try:
            message, fds, _, _ = socket.recv_fds(parent_end, 201, 1)
        finally:
            parent_end.close()
            os.waitpid(pid, 0)
        if message[:1] != b"l" or not fds:
            raise OSError(f"could not listen in the shared network: {message[1:].decode(errors='replace')}")
        return socket.socket(fileno=fds[0])

    def close(self) -> None:
        if self.egress is not None:
            self.egress.close()
            self.egress = None
        for fd in (self.user_fd, self.net_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.user_fd = self.net_fd = -1
