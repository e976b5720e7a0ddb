"""A seccomp filter for sandboxed programs, built with libseccomp and exported as BPF.

Namespaces already hide the host; the filter removes the kernel interfaces a contained
program has no use for and that escapes go through: debugging other processes, mounting,
loading BPF or kernel modules, the kernel keyring, new namespaces, setuid/setgid file
modes, and — with networking off — every socket family but AF_UNIX. Denied calls fail
with EPERM (the program sees an ordinary error); ``clone3`` reports ENOSYS so libc falls
back to ``clone``, whose namespace flags are then checked. bwrap installs the filter right before exec
(``--seccomp FD``), so its own setup is unaffected.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import tempfile
from typing import Any

DENIED_SYSCALLS: tuple[str, ...] = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr",
    "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key",
    "unshare", "setns",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "iopl", "ioperm",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
)
SET_ID_MODE_ARGUMENTS: tuple[tuple[str, int, int | None], ...] = (
    ("chmod", 1, None), ("fchmod", 1, None), ("fchmodat", 2, None), ("fchmodat2", 2, None),
    ("mknod", 1, None), ("mknodat", 2, None), ("creat", 1, None), ("open", 2, 1), ("openat", 3, 2),
)
"""(syscall, index of its mode argument, index of its flags argument when the mode only
matters with ``O_CREAT``/``O_TMPFILE``)."""
O_TMPFILE = getattr(os, "O_TMPFILE", 0o20200000) & ~os.O_DIRECTORY
NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)


def seccomp_available() -> str | None:
    """``None`` when a filter can be built here, else the reason it cannot."""
    try:
        import pyseccomp  # type: ignore[import-untyped]  # noqa: F401
    except (ImportError, OSError) as exc:  # OSError: the libseccomp shared library is missing
        return f"libseccomp is not usable ({exc}); install pyseccomp and libseccomp2"
    return None


def build_filter(network: bool) -> bytes:
    """The filter as BPF bytes for ``bwrap --seccomp FD``; raises ``OSError``/``ImportError``."""
    import pyseccomp as sc  # type: ignore[import-untyped]

    deny = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            rules.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a syscall on this architecture
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in _flags(NAMESPACE_FLAGS):
        rules.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    if not network:
        rules.add_rule(deny, "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))
    _deny_set_id_files(sc, rules, deny)
    with tempfile.TemporaryFile() as handle:
        rules.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def _deny_set_id_files(sc: Any, rules: Any, deny: Any) -> None:
    """No setuid/setgid files: a sandbox that writes a bound host tree would otherwise leave
    there an executable that runs as the host user it maps to (root, when codeward is root)."""
    creating = (os.O_CREAT, O_TMPFILE)
    for name, mode_arg, flags_arg in SET_ID_MODE_ARGUMENTS:
        for bit in (stat.S_ISUID, stat.S_ISGID):
            mode = sc.Arg(mode_arg, sc.MASKED_EQ, bit, bit)
            conditions = [[mode]] if flags_arg is None else [
                [sc.Arg(flags_arg, sc.MASKED_EQ, flag, flag), mode] for flag in creating]
            for condition in conditions:
                try:
                    rules.add_rule(deny, name, *condition)
                except (OSError, ValueError, RuntimeError):
                    break  # not a syscall on this architecture
    for name in ("openat2", "io_uring_setup"):  # their modes are out of the filter's sight
        try:
            rules.add_rule(sc.ERRNO(errno.ENOSYS), name)
        except (OSError, ValueError, RuntimeError):
            continue


def _flags(mask: int) -> list[int]:
    return [1 << bit for bit in range(mask.bit_length()) if mask & (1 << bit)]


def filter_fd(program: bytes) -> int:
    """A readable file descriptor holding the BPF program (a memfd, rewound)."""
    fd = os.memfd_create("codeward-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
