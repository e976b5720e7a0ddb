"""A real Docker engine for the tests, and a sandbox image built locally in about a second.

The engine: the one ``DOCKER_HOST`` (or the default socket) names when it answers; else, as
root with Debian's ``docker.io`` installed, a private ``dockerd`` started for the session
(``--bridge=none --iptables=false``: no container networking, nothing on the host's firewall),
with its own data and exec roots in a temporary folder, stopped and removed at the end. With
neither, the tests skip saying how to get one.

The image: no registry can be reached here, so :func:`sandbox_image` assembles a root
filesystem from this machine's own files (Python with its standard library and the shared
libraries it loads, ``sh``, ``bash``, ``cp``) and ``docker import``s it, tagged by a hash of
what went in: a later session on the same engine finds it and builds nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

IMAGE_REPOSITORY = "codeward-sandbox-test"
ENGINE_START_TIMEOUT_S = 60
BUILDER_VERSION = "1"
"""Bump when the image's recipe changes, so an old image under the same host files is not reused."""
PROGRAMS = ("/bin/sh", "/bin/bash", "/bin/cp", "/bin/cat", "/bin/ls")
SKIP_STDLIB = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "config-3")


@dataclass(frozen=True)
class Engine:
    """A Docker engine that answers: its ``DOCKER_HOST`` and whether this session started it."""

    host: str
    started: bool

    def client(self) -> Any:
        import docker  # type: ignore[import-untyped]

        return docker.DockerClient(base_url=self.host, timeout=60)

    def env(self) -> dict[str, str]:
        """The environment a codeward process needs to reach this engine."""
        return {"DOCKER_HOST": self.host}

    def grant(self, uid: int, gid: int) -> None:
        """Let ``uid``/``gid`` use this engine (its socket), as the docker group would: only for an
        engine this session started; skips otherwise (an operator's engine is not the tests' to open)."""
        if uid == os.geteuid():
            return
        if not self.started:
            pytest.skip("the Docker engine is not one the tests started: give the unprivileged test user "
                        "access to its socket yourself to run this half")
        socket_path = Path(self.host.removeprefix("unix://"))
        socket_path.parent.chmod(0o711)
        os.chown(socket_path, 0, gid)
        socket_path.chmod(0o660)

    def containers(self) -> list[str]:
        """Every container on the engine, running or not (``docker ps -a``)."""
        return [container.id for container in self.client().containers.list(all=True)]


def _answers(host: str | None) -> bool:
    try:
        import docker

        client = docker.DockerClient(base_url=host, timeout=5) if host else docker.from_env(timeout=5)
        client.ping()
        client.close()
        return True
    except Exception:
        return False


def _dockerd() -> str | None:
    return shutil.which("dockerd") or next((p for p in ("/usr/sbin/dockerd", "/usr/bin/dockerd")
                                            if os.access(p, os.X_OK)), None)


@contextlib.contextmanager
def docker_engine() -> Iterator[Engine]:
    """The engine for a test session (see the module docstring); skips when there can be none."""
    configured = os.environ.get("DOCKER_HOST")
    if configured and _answers(configured):
        yield Engine(configured, started=False)
        return
    if not configured and Path("/var/run/docker.sock").exists() and _answers("unix:///var/run/docker.sock"):
        yield Engine("unix:///var/run/docker.sock", started=False)
        return
    dockerd = _dockerd()
    if dockerd is None:
        pytest.skip("no Docker engine answers (DOCKER_HOST, /var/run/docker.sock) and dockerd is not installed: "
                    "apt-get install docker.io (scripts/test does) or point DOCKER_HOST at an engine")
    if os.geteuid() != 0:
        pytest.skip("no Docker engine answers and starting dockerd needs root: run the tests as root "
                    "(scripts/test) or point DOCKER_HOST at an engine")
    with _private_dockerd(dockerd) as host:
        yield Engine(host, started=True)


@contextlib.contextmanager
def _private_dockerd(dockerd: str) -> Iterator[str]:
    """``dockerd`` with its own roots and socket in a temporary folder; stopped and removed at the end."""
    base = Path(tempfile.mkdtemp(prefix="cw-dockerd-"))
    host = f"unix://{base}/docker.sock"
    argv = [dockerd, "--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
            "--data-root", str(base / "data"), "--exec-root", str(base / "exec"), "--pidfile", str(base / "pid"),
            "--host", host, "--log-level", "warn"]
    log = open(base / "dockerd.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + ENGINE_START_TIMEOUT_S
        while not _answers(host):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dockerd did not start (exit {proc.poll()}):\n"
                                   + (base / "dockerd.log").read_text(errors="replace")[-3000:])
            time.sleep(0.1)
        yield host
    finally:
        _stop(proc)
        log.close()
        _unmount_under(base)
        shutil.rmtree(base, ignore_errors=True)


def _unmount_under(base: Path) -> None:
    """Unmount what dockerd may leave mounted in its roots (its network namespace file), deepest first."""
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        points = [line.split()[1] for line in mounts if line.split()[1].startswith(f"{base}/")]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """dockerd stops its containers and its containerd on SIGTERM; SIGKILL the group if it does not."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # a containerd-shim left behind by a kill


# -- the image ------------------------------------------------------------------------------


def _libraries(binaries: Iterable[str]) -> set[str]:
    """The shared libraries ``binaries`` load (``ldd``), the dynamic loader included."""
    found: set[str] = set()
    binaries = list(binaries)
    for start in range(0, len(binaries), 50):
        done = subprocess.run(["ldd", *binaries[start:start + 50]], capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            match = re.search(r"(/\S+) \(0x", line)
            if match:
                found.add(match.group(1))
    return found


def _files() -> list[str]:
    """Every host path the image holds (symlinks kept as links, their targets added)."""
    python = "/usr/bin/python3"
    stdlib = Path("/usr/lib") / Path(os.path.realpath(python)).name  # /usr/lib/python3.X
    if not Path(python).exists() or not stdlib.is_dir():
        pytest.skip("the test image is assembled from Debian's /usr/bin/python3 and /usr/lib/python3.X, "
                    "which are not on this machine")
    paths = {python, os.path.realpath(python), *PROGRAMS}
    for path in stdlib.rglob("*"):
        rel = path.relative_to(stdlib).parts
        if rel[0] in SKIP_STDLIB or rel[0].startswith("config-") or "__pycache__" in rel or "tests" in rel:
            continue
        if path.is_file():
            paths.add(str(path))
    binaries = [p for p in paths if p.endswith(".so") or p in PROGRAMS or p == os.path.realpath(python)]
    paths |= _libraries(binaries)
    for name in list(paths):
        if os.path.islink(name):
            paths.add(os.path.realpath(name))
    return sorted(p for p in paths if os.path.exists(p))


def _key(files: list[str]) -> str:
    digest = hashlib.sha256(BUILDER_VERSION.encode())
    for path in files:
        info = os.lstat(path)
        digest.update(f"{path}\0{info.st_size}\0{int(info.st_mtime)}\0".encode())
    return digest.hexdigest()[:16]


def _tarball(files: list[str]) -> bytes:
    """The root filesystem: the files under their host paths, the usr-merge links, empty mount points."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"), ("sbin", "usr/sbin")):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for folder in ("tmp", "work", "code", "proc", "sys", "dev", "etc", "usr/sbin"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(info)
        passwd = b"root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
        for path in files:
            name = path.lstrip("/")
            for merged in ("bin/", "lib/", "lib64/", "sbin/"):
                if name.startswith(merged):
                    name = "usr/" + name
            tar.add(path, arcname=name, recursive=False)
    return buffer.getvalue()


def sandbox_image(engine: Engine) -> str:
    """``codeward-sandbox-test:<key>`` on ``engine``: Python 3, sh and bash from this machine's files."""
    files = _files()
    tag = _key(files)
    image = f"{IMAGE_REPOSITORY}:{tag}"
    client = engine.client()
    try:
        import docker.errors  # type: ignore[import-untyped]

        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.get(image)
            return image
        client.api.import_image_from_data(_tarball(files), repository=IMAGE_REPOSITORY, tag=tag,
                                          changes=["ENV LANG=C.UTF-8", "CMD [\"/bin/sh\"]"])
        client.images.get(image)
        return image
    finally:
        client.close()
