"""The bubblewrap backend: Linux namespaces, a read-only system, a private writable /work
and /tmp, per-run cgroup, rlimits and seccomp.

Each run gets new user, pid, ipc, uts, cgroup, mount and network namespaces: without
``network`` only ``lo`` exists; with it, the namespace reaches the internet through
slirp4netns but not the host's loopback, private ranges or the host's own networks
(:mod:`.network`). Inside, the program is uid/gid 1000 with no capabilities, in a new session, with
a cleared environment; ``/`` is an empty tmpfs remounted read-only holding ``/usr`` (and
the ``/bin``, ``/lib`` links), a few ``/etc`` files, ``/proc``, a minimal ``/dev``, the
requested binds, and size-limited tmpfs ``/tmp`` and ``/work``. bwrap dies with its parent.

When codeward runs as root and a run has no read-write binds, bwrap itself is started
as an unprivileged host uid (``nobody``), so even what the sandbox can see is accessed
without root's rights. Runs with read-write binds (a workspace) keep the caller's uid so
its files stay writable; capabilities are dropped either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

from codeward.engines.sandbox.cgroups import CgroupLayout
from codeward.engines.sandbox.model import (
    DEFAULT_PATH,
    Bind,
    SandboxRequest,
    SandboxResult,
    SandboxUnavailable,
    Status,
)
from codeward.engines.sandbox.network import IsolatedNetwork
from codeward.engines.sandbox.outcome import to_result
from codeward.engines.sandbox.overlay import namespace_entry
from codeward.engines.sandbox.runner import (
    Launch,
    RunObserver,
    can_switch_user,
    collect_observed,
    kill_tree,
    limit_launch,
    minimal_env,
    spawn_or_release,
    world_reachable,
)
from codeward.engines.sandbox.seccomp import filter_fd

SANDBOX_UID = 1000
SANDBOX_HOSTNAME = "sandbox"
NOBODY = (65534, 65534)
ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
NETWORK_ETC_FILES = ("resolv.conf", "hosts", "nsswitch.conf", "host.conf", "gai.conf", "ssl", "ca-certificates")
PRIVATE_WORKDIR = "/work"


class BwrapSandbox:
    """Runs each request in a fresh bubblewrap sandbox (see the module docstring)."""

    name = "bwrap"
    isolated = True

    def __init__(
        self,
        bwrap: str,
        version: str,
        cgroups: CgroupLayout | None,
        seccomp: dict[bool, bytes] | None,
        drop_to: tuple[int, int] | None = NOBODY,
    ) -> None:
        self.bwrap = bwrap
        self.version = version
        self.cgroups = cgroups
        self.seccomp = seccomp
        self.scratch_cap_mb: int | None = None
        """The most each private tmpfs (``/tmp``, ``/work``) may hold: half the disk cap (``[sandbox]
        disk_mb``). A run with overlays keeps its ``/tmp`` on its disk instead."""
        self.switches_user = can_switch_user()
        """Root with the capabilities to become another user (a root without them stays root)."""
        self.drop_to = drop_to if self.switches_user else None

    def describe(self) -> str:
        parts = [f"bwrap {self.version}: user/pid/net/ipc/uts/mount namespaces, no capabilities"]
        parts.append(self.cgroups.describe() if self.cgroups else "no cgroup limits (rlimits only)")
        parts.append("seccomp filter" if self.seccomp else "no seccomp filter")
        return ", ".join(parts)

    # -- building the command ------------------------------------------------------------

    def prepare(self, request: SandboxRequest) -> Launch:
        """The host command for ``request``; raises ``OSError`` when a resource cannot be made."""
        launch = Launch(argv=[], env=minimal_env({}, "/", DEFAULT_PATH))
        try:
            self._fill(launch, request)
        except BaseException:
            launch.release()
            raise
        return launch

    def _fill(self, launch: Launch, request: SandboxRequest) -> None:
        args = [self.bwrap, "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--hostname", SANDBOX_HOSTNAME, "--disable-userns",
                "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
        network = IsolatedNetwork.prepare(request.network_hosts) if request.network else None
        shared = request.shared_network if network is None else None  # one client's loopback-only namespace
        if network is not None:
            launch.cleanups.append(network.close)
            launch.network = network
            launch.pass_fds = (network.go_read,)  # the network closes it (once) when released
        elif shared is None:
            args.append("--unshare-net")  # with a shared one, bwrap keeps the namespace its child joined
        env = minimal_env(request.env, "/tmp", DEFAULT_PATH)
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += system_binds(request.network)
        if network is not None:
            args += ["--ro-bind", str(network.resolv_conf), "/etc/resolv.conf"]
            if network.hosts_file is not None:
                args += ["--ro-bind", str(network.hosts_file), "/etc/hosts"]
        args += ["--proc", "/proc", "--dev", "/dev"]
        scratch = str(min(request.scratch_mb, self.scratch_cap_mb or request.scratch_mb) * 1024 * 1024)
        scratch_dir = request.overlays.scratch if request.overlays is not None else None
        if scratch_dir is not None:  # on the run's disk, with its overlay layers: one cap for all it writes
            args += ["--bind", str(scratch_dir), "/tmp"]
        else:
            args += ["--size", scratch, "--tmpfs", "/tmp"]
        if request.workdir is None:
            args += ["--size", scratch, "--tmpfs", PRIVATE_WORKDIR]
        binds = [Bind.of(b) for b in request.ro_binds]
        rw = [Bind.of(b) for b in request.rw_binds]
        for bind in binds:
            args += ["--ro-bind", bind.source, bind.target]
        for bind in rw:
            args += ["--bind", bind.source, bind.target]
        if request.overlays is not None:
            for layer in request.overlays.layers:
                args += ["--bind", str(layer.merged), str(layer.lower)]
            for original, copy in request.overlays.copies:
                args += ["--bind", str(copy), str(original)]
        if request.overlays is not None:
            launch.enter_namespaces = request.overlays.mounter(new_network=network is not None, join=shared)
        elif network is not None or shared is not None:
            launch.enter_namespaces = namespace_entry([], new_network=network is not None, join=shared)
        for bind in (Bind.of(b) for b in request.protected):
            args += ["--ro-bind", bind.source, bind.target]
        args += hide_args([Bind.of(b) for b in request.hidden])
        args += ["--remount-ro", "/", "--chdir", request.workdir or PRIVATE_WORKDIR]
        read_status, write_status = os.pipe()
        launch.status_fd = read_status
        launch.parent_fds.append(write_status)
        fds = [write_status, *request.inherit_fds]
        args += ["--json-status-fd", str(write_status)]
        if self.seccomp is not None:
            program = filter_fd(self.seccomp[request.network or shared is not None])
            launch.parent_fds.append(program)
            fds.append(program)
            args += ["--seccomp", str(program)]
        if (self.drop_to is not None and not rw and request.overlays is None
                and all(world_reachable(b.source) for b in binds)):
            launch.run_as = self.drop_to
        if request.run_as is not None and self.switches_user:
            launch.run_as = request.run_as
        plan = limit_launch(launch, request, self.cgroups, own_user_namespace=True)
        args += ["--", *plan.wrap(list(request.argv))]
        launch.argv = network.wrap(args) if network is not None else args
        launch.pass_fds = (*launch.pass_fds, *fds)

    # -- running -------------------------------------------------------------------------

    def start(self, request: SandboxRequest) -> tuple[subprocess.Popen[bytes], Launch]:
        """Prepare and start ``request`` without waiting (for the warm pool and sessions)."""
        launch = self.prepare(request)
        proc = spawn_or_release(launch)
        if request.overlays is not None:
            request.overlays.receive()  # the run's disk, which the child mounted before exec
        if launch.network is not None:
            try:
                launch.network.attach(proc.pid)
            except OSError as exc:
                kill_tree(proc, launch.cgroup)
                proc.wait()
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
                launch.release()
                raise OSError(f"the sandbox's network could not be set up: {exc}") from exc
        return proc, launch

    def finish(
        self, proc: subprocess.Popen[bytes], launch: Launch, request: SandboxRequest, stdin: bytes,
        started: float | None = None, observer: RunObserver | None = None, *, keep_launch: bool = False,
    ) -> SandboxResult:
        """Feed, collect and interpret a started run, then release its resources (``keep_launch``: the
        caller releases the launch, see :class:`~codeward.engines.sandbox.runner.StartableSandbox`)."""
        try:
            collected, events = collect_observed(proc, launch, request, stdin, started, observer,
                                                 namespace_reaps=True)
            status = read_status(launch.status_fd)
        except BaseException:
            launch.release()
            raise
        if launch.network is not None:
            launch.network.close()  # now: slirp4netns and its files must not outlive a short-lived caller
        if keep_launch:
            launch.close_parent_fds()
        else:
            launch.release_soon()
        if "child-pid" not in status and not collected.timed_out:
            message = collected.stderr.decode("utf-8", "replace").strip() or f"bwrap exited {collected.returncode}"
            return SandboxResult.setup_error(
                f"the sandbox could not be set up: {message}. Check that bubblewrap works here "
                f"(`bwrap --ro-bind / / true`) or choose the process backend.", self.name, True)
        result = to_result(collected, events, request, self.name, True, shell_style_exit=True, limits=launch.limits)
        missing = _exec_failure(result.stderr)
        if missing is not None and result.exit_code == 1:
            result.status = Status.SETUP_ERROR
            result.error_message = (f"the program could not be started in the sandbox: {missing}. Only /usr and "
                                    "the binds are visible inside; use a program installed there.")
        return result

    def run(self, request: SandboxRequest) -> SandboxResult:
        try:
            proc, launch = self.start(request)
        except OSError as exc:
            return SandboxResult.setup_error(
                f"could not start bwrap: {exc}. Check the bubblewrap install and cgroup permissions.",
                self.name, True)
        return self.finish(proc, launch, request, request.stdin_bytes())


def _exec_failure(stderr: str) -> str | None:
    """bwrap's own message when exec of the program failed (it is the last line it prints)."""
    lines = stderr.strip().splitlines()
    if lines and lines[-1].startswith("bwrap: execvp "):
        return lines[-1].removeprefix("bwrap: ")
    if lines and lines[-1].startswith("prlimit: failed to execute "):
        return "execvp " + lines[-1].removeprefix("prlimit: failed to execute ")
    return None


def read_status(fd: int | None) -> dict[str, int]:
    """bwrap's ``--json-status-fd`` messages merged into one dict (``child-pid``, ``exit-code``)."""
    merged: dict[str, int] = {}
    if fd is None:
        return merged
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while chunk := os.read(fd, 4096):
            data += chunk
    for line in data.decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                merged.update({k: v for k, v in value.items() if isinstance(v, int)})
    return merged


def system_binds(network: bool) -> list[str]:
    """Read-only binds of the host system every program needs (``/usr``, loader config)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ROOT_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ETC_FILES + (NETWORK_ETC_FILES if network else ()):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def hide_args(hidden: list[Bind]) -> list[str]:
    """Cover each path with an empty stand-in: ``/dev/null`` for a file, a read-only tmpfs for a directory."""
    args: list[str] = []
    for bind in hidden:
        if os.path.isdir(bind.source):
            args += ["--tmpfs", bind.target, "--remount-ro", bind.target]
        else:
            args += ["--ro-bind", "/dev/null", bind.target]
    return args


def find_bwrap() -> str | None:
    """The ``bwrap`` executable: on ``PATH``, else Debian's ``/usr/bin/bwrap`` (a server started with a
    bare ``PATH`` still finds it); ``None`` when neither is an executable file."""
    import shutil

    found = shutil.which("bwrap")
    if found:
        return found
    fallback = "/usr/bin/bwrap"
    return fallback if os.path.isfile(fallback) and os.access(fallback, os.X_OK) else None


def probe_bwrap(cgroups: CgroupLayout | None, seccomp: dict[bool, bytes] | None) -> BwrapSandbox:
    """A working bwrap backend, or :class:`SandboxUnavailable` saying why there is none."""
    binary = find_bwrap()
    if binary is None:
        raise SandboxUnavailable("bubblewrap is not installed (no `bwrap` on PATH or at /usr/bin/bwrap)")
    try:
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"bwrap does not run: {exc}") from exc
    sandbox = BwrapSandbox(binary, version.split()[-1] if version.split() else "?", cgroups, seccomp)
    check = sandbox.run(SandboxRequest(argv=["true"], timeout_s=10, memory_mb=64, max_processes=8))
    if check.status is not Status.SUCCESS:
        reason = (check.error_message or "") + (" " + check.stderr.strip() if check.stderr.strip() else "")
        raise SandboxUnavailable(f"bwrap cannot create its namespaces here: {reason.strip()}")
    return sandbox
