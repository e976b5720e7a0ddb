"""Attacks on the Docker backend through a real ``codeward serve`` on a real Docker engine, with
the server as root and as an unprivileged user who may use the engine (the docker group's
access to its socket).

Anyone who can open the engine's socket can start a privileged container, so the docker group
is root-equivalent on the host: what is tested as the user is that codeward itself never lets a
call reach for that power (no argument turns a limit or an isolation off) and that it works
unchanged without root. What a model sends: programs that try mounts, namespaces, the kernel's
sysrq trigger, devices, the engine's socket and the host's processes; arguments that try to
switch limits off or smuggle options into the image name. The fixture then checks the host.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from tests.docker_support import Engine
from tests.redteam.harness import Host

pytestmark = [pytest.mark.anyio, pytest.mark.services, pytest.mark.xdist_group("docker")]

ESCAPES = r"""
import ctypes, errno, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def call(result):
    return "succeeded" if result == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
def attempt(action):
    try:
        action()
        return "succeeded"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc))
def unix(path):
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(path)
    finally:
        sock.close()
os.makedirs("/tmp/m", exist_ok=True)
print(json.dumps({
    "mount_tmpfs": call(libc.mount(b"none", b"/tmp/m", b"tmpfs", 0, None)),
    "remount_root_rw": call(libc.mount(b"none", b"/", None, 32 | 4096, None)),  # MS_REMOUNT|MS_BIND
    "unshare_user_mount": call(libc.unshare(0x10000000 | 0x00020000)),
    "sysrq": attempt(lambda: open("/proc/sysrq-trigger", "w").write("h")),
    "kernel_param": attempt(lambda: open("/proc/sys/kernel/hostname", "w").write("pwned")),
    "mknod_disk": attempt(lambda: os.mknod("/tmp/sda", 0o600 | 0o060000, os.makedev(8, 0))),
    "docker_sock": attempt(lambda: unix("/var/run/docker.sock")),
    "engine_sock": attempt(lambda: unix(ENGINE_SOCKET)),
    "host_project": os.path.exists(PROJECT),
    "setuid_root": attempt(lambda: os.setuid(0)),
    "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
}))
"""
"""Escape attempts from inside; each prints what happened (``succeeded`` or the errno's name)."""


async def test_a_program_cannot_leave_its_container_nor_an_argument_loosen_it(
        host: Host, docker_engine: Engine, docker_image: str, monkeypatch: pytest.MonkeyPatch) -> None:
    docker_engine.grant(host.principal.uid, host.principal.gid)
    monkeypatch.setenv("DOCKER_HOST", docker_engine.host)
    scratch = host.base / "server-tmp"  # the server's own TMPDIR: its source folders are checked there
    scratch.mkdir()
    os.chown(scratch, host.principal.uid, host.principal.gid)
    monkeypatch.setenv("TMPDIR", str(scratch))
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + f'\n[coding]\nbackend = "docker"\npool_size = 2\n'
                      f'docker_images = {{ python = "{docker_image}", bash = "{docker_image}" }}\n')
    os.chown(config, host.principal.uid, host.principal.gid)
    host.rebaseline()
    before = set(docker_engine.containers())
    code = (ESCAPES.replace("ENGINE_SOCKET", repr(docker_engine.host.removeprefix("unix://")))
            .replace("PROJECT", repr(str(host.project))))
    async with host.serve() as session:
        # The first run is a cold container (it starts the warm pool); then the same in a started one.
        runs = [await session.call("coding_execute_code", {"language": "python", "code": code})]
        for _ in range(120):
            if runs[-1].structured.get("warm"):
                break
            await anyio.sleep(0.25)
            runs.append(await session.call("coding_execute_code", {"language": "python", "code": code}))
        shell = await session.call("coding_execute_code", {
            "language": "bash", "code": f"cat {host.project}/.env; echo pwned > {host.outside}/canary.txt; "
                                        f"{host.marker_command()}; echo rc=$?"})
        loosened = [await session.call("coding_run_in_docker", {"language": "python", "code": "print(1)", **args})
                    for args in ({"memory_limit": "0"}, {"memory_limit": "1b"}, {"image": "--privileged"},
                                 {"image": "../../var/run/docker.sock"}, {"cpu_limit": 0},
                                 {"network_enabled": True}, {"environment": {"A=B; --privileged": "1"}})]
    assert not runs[0].structured.get("warm") and runs[-1].structured.get("warm"), [r.structured for r in runs]
    for escaped in (runs[0], runs[-1]):
        assert not escaped.is_error, escaped.text
        seen = json.loads(escaped.structured["stdout"])
        assert {key: value for key, value in seen.items() if value == "succeeded"} == {}, seen
        assert seen["mount_tmpfs"] == seen["remount_root_rw"] == seen["unshare_user_mount"] == "EPERM"
        no_sysrq = () if Path("/proc/sysrq-trigger").exists() else ("ENOENT",)  # a kernel built without it
        assert seen["sysrq"] in ("EROFS", "EACCES", *no_sysrq) and seen["kernel_param"] in ("EROFS", "EACCES")
        assert seen["docker_sock"] == seen["engine_sock"] == "ENOENT"
        assert seen["host_project"] is False
        assert len(seen["processes"]) <= 3  # its own: sh exec'd into python, nothing of the host's
    assert "rc=1" in shell.text and "No such file" in shell.structured["stderr"]
    assert all(answer.is_error for answer in loosened), [a.text for a in loosened if not a.is_error]
    assert "must be between 32m and 8g" in loosened[0].text and "not a valid Docker image" in loosened[2].text
    assert set(docker_engine.containers()) == before
    assert not list(scratch.glob("codeward-docker-*"))  # the programs' source folders are gone too
    # the fixture checks the host: canaries, protected files, planted markers, secrets in outputs
