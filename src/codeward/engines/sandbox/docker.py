"""The Docker backend: one throw-away container per run, through the Docker Engine API.

Used when an engine answers (``docker.from_env().ping()``) and behind
``coding_run_in_docker``. Containers get a read-only root filesystem, tmpfs ``/tmp`` and
``/work``, no capabilities, ``no-new-privileges``, memory (swap included), pids and CPU
limits, rlimits, a non-root user, and ``network_mode=none`` unless networking is asked for.
Images are never pulled implicitly: a missing image is a setup error naming the pull command and
the local build (``deploy/build-sandbox-image``) for engines that cannot reach a registry.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from codeward.engines.sandbox.bwrap import PRIVATE_WORKDIR
from codeward.engines.sandbox.model import (
    DEFAULT_PATH,
    Bind,
    Limit,
    SandboxRequest,
    SandboxResult,
    SandboxUnavailable,
    Status,
)
from codeward.engines.sandbox.outcome import signal_name

DEFAULT_IMAGE = "debian:12-slim"
BRIDGE_WARNING = ("WARNING: the container had the engine's bridge network: the host (through the bridge's "
                  "gateway) and private ranges WERE reachable")
PING_TIMEOUT_S = 3
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
LOCAL_IMAGE = "codeward-sandbox:bookworm"
"""What ``deploy/build-sandbox-image`` builds from Debian packages, for engines with no registry."""
SANDBOX_UID = 1000
"""Who the program runs as inside the container (no name needed in the image)."""


@dataclass
class ContainerResult:
    """A run's result plus what only a container has: its id and measured usage."""

    result: SandboxResult
    container_id: str = ""
    resource_usage: dict[str, float] = field(default_factory=dict)


def engine_client(timeout_s: float = PING_TIMEOUT_S) -> Any:
    """A connected ``docker.DockerClient``; raises :class:`SandboxUnavailable` saying why not."""
    socket_path = _local_socket(os.environ.get("DOCKER_HOST", DEFAULT_SOCKET))
    if socket_path is not None and not os.path.exists(socket_path):  # no engine: no need to load the client
        raise SandboxUnavailable(f"no Docker engine is reachable (no socket at {socket_path}). Start the Docker "
                                 "daemon or set DOCKER_HOST to a running engine; coding_execute_code runs code "
                                 "without Docker where bubblewrap works.")
    try:
        import docker  # type: ignore[import-untyped]
        import docker.errors  # type: ignore[import-untyped]
    except ImportError as exc:
        raise SandboxUnavailable("the Python `docker` package is not installed (pip install docker)") from exc
    try:
        client = docker.from_env(timeout=int(max(1, timeout_s)))
        client.ping()
    except Exception as exc:  # DockerException, requests errors, socket errors: all mean "no engine"
        raise SandboxUnavailable(
            f"no Docker engine is reachable ({type(exc).__name__}: {exc}). Start the Docker daemon or set "
            "DOCKER_HOST to a running engine; coding_execute_code runs code without Docker where "
            "bubblewrap works.") from exc
    return client


def _local_socket(host: str) -> str | None:
    """The path of a ``unix://`` engine address (``None`` for a TCP or SSH one)."""
    return host.removeprefix("unix://") if host.startswith("unix://") else None


class DockerSandbox:
    """Runs each request in a fresh container (see the module docstring)."""

    name = "docker"
    isolated = True

    def __init__(self, client: Any, image: str = DEFAULT_IMAGE) -> None:
        self.client = client
        self.image = image
        self.scratch_cap_mb: int | None = None
        """The most each tmpfs (``/tmp``, ``/work``) may hold: half the disk cap (``[sandbox] disk_mb``)."""

    def describe(self) -> str:
        return f"docker (engine reachable), default image {self.image}"

    def run(self, request: SandboxRequest) -> SandboxResult:
        return self.run_container(request, self.image).result

    def run_container(
        self, request: SandboxRequest, image: str, cpu_limit: float = 1.0, memory_limit: str | None = None,
    ) -> ContainerResult:
        started = time.monotonic()
        created = self.create(request, image, cpu_limit, memory_limit, stdin=bool(request.stdin_bytes()))
        if isinstance(created, ContainerResult):
            return created
        try:
            self._start(created, request.stdin_bytes())
            return self.collect(created, request, started, memory_limit)
        finally:
            with contextlib.suppress(Exception):
                created.remove(force=True)

    def create(self, request: SandboxRequest, image: str, cpu_limit: float = 1.0, memory_limit: str | None = None,
               *, stdin: bool = False) -> Any:
        """A created (not started) container for ``request``, or a :class:`ContainerResult` saying why the
        engine would not make one. With ``stdin`` its standard input is open until the attached writer closes it."""
        import docker.errors  # type: ignore[import-untyped]
        from docker.types import Ulimit  # type: ignore[import-untyped]

        binds: dict[str, dict[str, str]] = {}
        for spec in request.ro_binds:
            bind = Bind.of(spec)
            binds[bind.source] = {"bind": bind.target, "mode": "ro"}
        for spec in request.rw_binds:
            bind = Bind.of(spec)
            binds[bind.source] = {"bind": bind.target, "mode": "rw"}
        # The scratch mounts belong to the run's user: Docker gives a tmpfs the mode of the image's own
        # folder at that path (often root's 0755), which the user could not write. /work is mounted
        # exec: compiled programs run from it.
        scratch_mb = min(request.scratch_mb, self.scratch_cap_mb or request.scratch_mb)
        scratch = f"size={scratch_mb}m,uid={SANDBOX_UID},gid={SANDBOX_UID},mode=1777"
        memory = _memory(request, memory_limit)
        ulimits = [Ulimit(name="core", soft=0, hard=0)]
        if request.open_files:
            ulimits.append(Ulimit(name="nofile", soft=request.open_files, hard=request.open_files))
        if request.file_size_mb:
            size = request.file_size_mb * 1024 * 1024
            ulimits.append(Ulimit(name="fsize", soft=size, hard=size))
        env: Mapping[str, str] = {"PATH": DEFAULT_PATH, "HOME": "/tmp", "LANG": "C.UTF-8", **request.env}
        api = self.client.api
        host_config = api.create_host_config(
            binds=binds, network_mode="bridge" if request.network else "none", read_only=True,
            tmpfs={"/tmp": scratch, PRIVATE_WORKDIR: f"{scratch},exec"}, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], pids_limit=request.max_processes or -1,
            nano_cpus=int(cpu_limit * 1e9), ulimits=ulimits, mem_limit=memory, memswap_limit=memory,
        )
        # The low-level call: created not detached with stdin open, the container gets StdinOnce, so
        # stdin closes when the attached writer is done. Without input stdin stays closed and the
        # program reads end-of-file instead of waiting forever.
        options: dict[str, Any] = {
            "command": list(request.argv), "environment": dict(env), "working_dir": request.workdir or PRIVATE_WORKDIR,
            "stdin_open": stdin, "host_config": host_config,
            "user": f"{SANDBOX_UID}:{SANDBOX_UID}" if not request.rw_binds else None,
        }
        try:
            created = api.create_container(image, **options)
            return self.client.containers.get(created["Id"])
        except docker.errors.ImageNotFound:
            return ContainerResult(SandboxResult.setup_error(missing_image(image), self.name, True))
        except docker.errors.APIError as exc:
            return ContainerResult(SandboxResult.setup_error(
                f"the Docker engine refused to create the container: {exc.explanation or exc}", self.name, True))

    @staticmethod
    def _start(container: Any, stdin: bytes) -> None:
        if not stdin:
            container.start()
            return
        raw = attach_stdin(container)
        container.start()
        send_stdin(raw, stdin)

    def collect(self, container: Any, request: SandboxRequest, started: float,
                memory_limit: str | None = None) -> ContainerResult:
        """Wait for a started container's program (up to the request's timeout, then kill it) and read
        its result; the container is left for the caller to remove."""
        outcome = self._drive(container, request, started)
        outcome.result.limits = container_limits(request, _memory(request, memory_limit))
        if request.network:
            outcome.result.notes.append(BRIDGE_WARNING)
        return outcome

    def _drive(self, container: Any, request: SandboxRequest, started: float) -> ContainerResult:
        import requests.exceptions

        timed_out = False
        try:
            status = container.wait(timeout=request.timeout_s)
            code = int(status.get("StatusCode", -1))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            timed_out = True
            with contextlib.suppress(Exception):
                container.kill()
            code = -9
        usage = _usage(container)
        container.reload()
        oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        stdout = container.logs(stdout=True, stderr=False) or b""
        stderr = container.logs(stdout=False, stderr=True) or b""
        result = container_result(request, started, code, stdout, stderr, timed_out=timed_out, oom=oom,
                                  peak_memory_mb=usage.get("memory_peak_mb"))
        return ContainerResult(result, str(container.id)[:12], usage)


def container_result(request: SandboxRequest, started: float, code: int, stdout: bytes, stderr: bytes, *,
                     timed_out: bool = False, oom: bool = False, peak_memory_mb: float | None = None) -> SandboxResult:
    """A container run's result from its exit status (a signal as 128+N) and output, capped as the request says."""
    cap = request.max_output_bytes
    result = SandboxResult(
        status=Status.SUCCESS if code == 0 and not timed_out else Status.ERROR,
        exit_code=code if code < 128 or code > 128 + 64 else -(code - 128),
        stdout=stdout[:cap].decode("utf-8", "replace"), stderr=stderr[:cap].decode("utf-8", "replace"),
        duration_s=round(time.monotonic() - started, 4), backend=DockerSandbox.name, isolated=True,
        stdout_truncated=len(stdout) > cap, stderr_truncated=len(stderr) > cap, peak_memory_mb=peak_memory_mb,
    )
    if timed_out:
        result.status, result.limit_hit = Status.TIMEOUT, Limit.TIMEOUT
        result.error_message = f"timed out after {request.timeout_s:g} s; the container was killed."
    elif oom:
        result.limit_hit = Limit.MEMORY
        result.error_message = "killed: out of memory (the container's memory limit). Use less memory."
    elif result.exit_code is not None and result.exit_code < 0:
        result.error_message = f"the program was killed by {signal_name(-result.exit_code)}"
    elif code != 0:
        result.error_message = f"the program exited with status {code}"
    return result


def _memory(request: SandboxRequest, memory_limit: str | None) -> str | None:
    return memory_limit or (f"{request.memory_mb}m" if request.memory_mb else None)


def attach_stdin(container: Any, output: bool = False) -> Any:
    """The raw socket writing a created container's standard input (attach before start: nothing is lost);
    with ``output`` it also reads its standard output and error, multiplexed in Docker's frames."""
    sock = container.attach_socket(params={"stdin": 1, "stream": 1, **({"stdout": 1, "stderr": 1} if output else {})})
    return getattr(sock, "_sock", sock)


def send_stdin(raw: Any, data: bytes) -> None:
    """Write ``data`` to a container's standard input and close it (the program reads end-of-file)."""
    with contextlib.suppress(OSError):
        raw.sendall(data)
        raw.shutdown(1)
    with contextlib.suppress(OSError):
        raw.close()


def missing_image(image: str) -> str:
    """Why ``image`` cannot run and the two ways to get it (codeward never pulls one itself)."""
    return (f"Docker image {image!r} is not on this Docker engine, and codeward never pulls images. Pull it "
            f"(`docker pull {image}`), or, where no registry can be reached, build one from Debian packages "
            f"with `deploy/build-sandbox-image` (in codeward's source; it makes {LOCAL_IMAGE}) and name it in "
            f"codeward.toml (`[coding] docker_images = {{ python = \"{LOCAL_IMAGE}\" }}`) or in the call's "
            "`image` argument.")


def container_limits(request: SandboxRequest, memory: str | None) -> list[str]:
    """What the engine enforces on a container run (its own cgroup)."""
    limits = [f"wall clock {request.timeout_s:g} s (the container is killed)"]
    if memory:
        limits.append(f"memory {memory} for the container, swap included (engine cgroup)")
    if request.max_processes:
        limits.append(f"processes and threads {request.max_processes} (engine pids limit)")
    if request.file_size_mb:
        limits.append(f"file size {request.file_size_mb} MB (RLIMIT_FSIZE)")
    if request.open_files:
        limits.append(f"open files {request.open_files} per process (RLIMIT_NOFILE)")
    return limits


def _usage(container: Any) -> dict[str, float]:
    """Peak memory and CPU seconds from a one-shot stats read (empty when the engine has none)."""
    try:
        stats = container.stats(stream=False)
    except Exception:
        return {}
    memory = stats.get("memory_stats", {})
    peak = memory.get("max_usage") or memory.get("usage") or 0
    cpu = stats.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage", 0)
    usage = {"memory_peak_mb": round(peak / 1048576, 1), "cpu_seconds": round(cpu / 1e9, 3)}
    return {name: value for name, value in usage.items() if value}  # an exited container's stats are zeros


def probe_docker(image: str = DEFAULT_IMAGE) -> DockerSandbox:
    return DockerSandbox(engine_client(), image)
