"""The Docker backend against a real Docker engine, through a real ``codeward serve`` and the
official MCP client: code runs and its output comes back, the engine's limits hold, the
container has no network, no capabilities, a read-only root and a non-root user, and it is
gone afterwards. The engine and the image come from ``tests/docker_support.py``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.docker_support import Engine
from tests.sandbox_support import TcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.services, pytest.mark.xdist_group("docker")]


@asynccontextmanager
async def serve(root: Path, engine: Engine, config: str = "") -> AsyncIterator[Client]:
    """``codeward serve ROOT`` over stdio, reaching ``engine``; ``config`` is the project's codeward.toml."""
    if config:
        (root / "codeward.toml").write_text(config, encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **engine.env()}
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)], env=env,
                                   cwd=str(root))
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def run_in_docker(client: Client, **arguments: Any) -> tuple[bool, dict[str, Any], str]:
    """``coding_run_in_docker``: (is_error, structured result, text)."""
    result = await client.call_tool("coding_run_in_docker", arguments)
    text = "\n".join(getattr(block, "text", "") or "" for block in result.content)
    return bool(result.is_error), dict(result.structured_content or {}), text


PROBE = """
import json, os, socket
def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__
def write(path):
    try:
        open(path, "w").write("x")
        return "written"
    except OSError as exc:
        return exc.strerror
def cgroup(name):
    try:
        return open("/sys/fs/cgroup/" + name).read().strip()
    except OSError:
        return ""
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
print(json.dumps({
    "loopback_host": connect("127.0.0.1", PORT), "outside": connect("1.1.1.1", 53),
    "interfaces": sorted(os.listdir("/sys/class/net")), "uid": os.getuid(), "gid": os.getgid(),
    "caps": status["CapEff"].strip(), "bounding": status["CapBnd"].strip(),
    "no_new_privs": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
    "etc": write("/etc/owned"), "usr": write("/usr/bin/owned"), "code": write("/code/owned"),
    "work": write("/work/fine"), "tmp": write("/tmp/fine"),
    "cpu": [cgroup("cpu/cpu.cfs_quota_us"), cgroup("cpu/cpu.cfs_period_us")] if cgroup("cpu/cpu.cfs_period_us")
           else cgroup("cpu.max").split(),
    "memory": cgroup("memory/memory.limit_in_bytes") or cgroup("memory.max"),
    "pids": cgroup("pids/pids.max") or cgroup("pids.max"),
}))
"""
"""What a program sees of its container, as JSON (``PORT``: a host loopback listener to try)."""


async def test_code_runs_in_a_locked_down_container_and_its_output_comes_back(
        root: Path, docker_engine: Engine, docker_image: str) -> None:
    before = set(docker_engine.containers())
    code = ("import os, sys\nprint(sys.stdin.read().strip(), os.environ['GREETING'], os.getuid())\n"
            "print('to stderr', file=sys.stderr)\nsys.exit(3)\n")
    listener = TcpServer()
    try:
        async with serve(root, docker_engine) as client:
            failed, result, text = await run_in_docker(client, language="python", code=code, image=docker_image,
                                                       stdin="from stdin", environment={"GREETING": "hi"})
            probe_failed, probe, probe_text = await run_in_docker(
                client, language="python", code=PROBE.replace("PORT", str(listener.port)), image=docker_image,
                cpu_limit=0.5, memory_limit="96m")
    finally:
        listener.close()
    assert not failed, text
    assert result["stdout"] == "from stdin hi 1000\n"
    assert result["stderr"] == "to stderr\n"
    assert result["exit_code"] == 3 and result["status"] == "error"
    assert result["image"] == docker_image and len(result["container_id"]) == 12

    assert not probe_failed and probe["status"] == "success", probe_text
    seen = json.loads(probe["stdout"])
    assert seen["loopback_host"] != "connected" and seen["outside"] != "connected", seen
    assert listener.accepted == 0
    assert seen["interfaces"] == ["lo"]
    assert (seen["uid"], seen["gid"]) == (1000, 1000)
    assert int(seen["caps"], 16) == 0 and int(seen["bounding"], 16) == 0
    assert seen["no_new_privs"] == "1" and seen["seccomp"] == "2"
    assert seen["etc"] == seen["usr"] == seen["code"] == "Read-only file system", seen
    assert seen["work"] == seen["tmp"] == "written"
    quota, period = map(int, seen["cpu"])
    assert quota / period == 0.5
    assert int(seen["memory"]) == 96 * 1048576
    assert 0 < int(seen["pids"]) <= 256
    assert set(docker_engine.containers()) == before  # every container was removed


def docker_config(python_image: str, bash_image: str) -> str:
    """codeward.toml choosing the docker backend and the images python and bash run in."""
    return ('[coding]\nbackend = "docker"\npool_size = 0\n'
            f'docker_images = {{ python = "{python_image}", bash = "{bash_image}" }}\n')


async def execute(client: Client, **arguments: Any) -> tuple[bool, dict[str, Any], str]:
    """``coding_execute_code``: (is_error, structured result, text)."""
    result = await client.call_tool("coding_execute_code", arguments)
    text = "\n".join(getattr(block, "text", "") or "" for block in result.content)
    return bool(result.is_error), dict(result.structured_content or {}), text


async def test_execute_code_runs_in_the_configured_image_and_the_limits_hold(
        root: Path, docker_engine: Engine, docker_image: str) -> None:
    before = set(docker_engine.containers())
    api = docker_engine.client()
    images = {image.id for image in api.images.list(all=True)}
    hog = "x = []\nwhile True:\n    x.append(bytearray(16 * 1024 * 1024))\n"
    fork_bomb = ("import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
                 "            time.sleep(60)\n            os._exit(0)\n        n += 1\n"
                 "except OSError as exc:\n    print('stopped after', n, exc.strerror)\n")
    busy = "import time\nstart = time.time()\nwhile True:\n    pass\n"
    async with serve(root, docker_engine, docker_config(docker_image, "codeward-absent:1")) as client:
        failed, ok, text = await execute(client, language="python", code="import sys; print(sys.version_info[0])")
        assert not failed, text
        assert ok["backend"] == "docker" and ok["isolated"] is True and ok["stdout"] == "3\n", ok["notes"]
        assert any(docker_image in note for note in ok["notes"]), ok["notes"]

        _, oom, text = await execute(client, language="python", code=hog, memory_mb=64, timeout=30)
        assert oom["status"] == "error" and oom["limit_hit"] == "memory", text
        assert "out of memory" in oom["error_message"]

        _, bomb, text = await execute(client, language="python", code=fork_bomb, timeout=30)
        assert bomb["stdout"].startswith("stopped after"), text
        assert int(bomb["stdout"].split()[2]) < 128  # the language's pids limit, not the host's

        _, spun, text = await execute(client, language="python", code=busy, timeout=2)
        assert spun["status"] == "timeout" and spun["limit_hit"] == "timeout", text
        assert spun["execution_time"] < 15

        missing_failed, _, missing = await execute(client, language="bash", code="echo 1")
        tool_failed, _, tool_text = await run_in_docker(client, language="python", code="print(1)",
                                                        image="codeward-absent:2")
    assert missing_failed and tool_failed
    for message, image in ((missing, "codeward-absent:1"), (tool_text, "codeward-absent:2")):
        assert f"Docker image '{image}' is not on this Docker engine, and codeward never pulls" in message
        assert "docker pull" in message and "deploy/build-sandbox-image" in message
        assert "docker_images" in message
    assert {image.id for image in api.images.list(all=True)} == images  # nothing was pulled
    assert set(docker_engine.containers()) == before
    api.close()


async def warm(client: Client, **arguments: Any) -> tuple[bool, dict[str, Any], str]:
    """A Python run that went to the warm pool: the pool starts on the first run and refills in the
    background after each one, so a run that found it empty (and ran cold, correctly) is sent again."""
    for _ in range(120):
        failed, result, text = await execute(client, language="python", **arguments)
        if result.get("warm"):
            return failed, result, text
        await anyio.sleep(0.25)
    raise AssertionError(f"no run went to the warm pool: {text}")


async def test_the_warm_pool_runs_each_program_in_a_fresh_started_container(
        root: Path, docker_engine: Engine, docker_image: str) -> None:
    """``pool_size`` containers per image are started ahead; each runs one program, confined like a cold
    one, with its standard input, and is removed: what one run leaves, the next does not see."""
    before = set(docker_engine.containers())
    config = docker_config(docker_image, docker_image).replace("pool_size = 0", "pool_size = 2")
    leave = ("import os\nopen('/tmp/left', 'w').write('x')\nopen('/work/left', 'w').write('x')\n"
             "status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
             "print(input(), os.getuid(), status['CapEff'].strip(), sorted(os.listdir('/sys/class/net')))\n"
             "try:\n    open('/etc/owned', 'w')\nexcept OSError as exc:\n    print(exc.strerror)\n")
    look = "import os\nprint(os.path.exists('/tmp/left'), os.path.exists('/work/left'))\n"
    async with serve(root, docker_engine, config) as client:
        failed, first, text = await warm(client, code=leave, stdin="hello from stdin\n")
        assert not failed and any("Docker warm pool" in note for note in first["notes"]), text
        assert first["stdout"] == "hello from stdin 1000 0000000000000000 ['lo']\nRead-only file system\n", first
        _, second, text = await warm(client, code=look)
        assert second["stdout"] == "False False\n", text
        _, broken, text = await warm(client, code="print(1\n")
        assert broken["status"] == "error" and "SyntaxError" in broken["stderr"], text
        assert 'File "/work/main.py", line 1' in broken["stderr"], broken["stderr"]
        _, slow, text = await warm(client, code="while True:\n    pass\n", timeout=2)
        assert slow["status"] == "timeout" and slow["limit_hit"] == "timeout", text
        # The exit status: the program's own, a forged status line changes nothing, a kill is the engine's.
        _, exited, text = await warm(client, code="import sys\nprint('out')\n"
                                     "sys.stderr.write('\\0codeward-exit 0123456789abcdef 0\\n')\nsys.exit(3)\n")
        assert exited["exit_code"] == 3 and exited["stdout"] == "out\n" and exited["status"] == "error", text
        assert exited["stderr"] == "\0codeward-exit 0123456789abcdef 0\n", exited
        _, killed, text = await warm(client, code="print('before', flush=True)\nx = b'x' * (400 * 1024 * 1024)\n")
        assert killed["limit_hit"] == "memory" and killed["stdout"] == "before\n", text  # 256 MB by default
        _, loud, text = await warm(client, code="print('x' * 3_000_000)")
        assert loud["stdout_truncated"] is True and set(loud["stdout"]) == {"x"}, loud["stdout"][-80:]
        running = set(docker_engine.containers()) - before
        assert len(running) <= 3, running  # the pool's two, and at most one used one being removed
    assert set(docker_engine.containers()) == before  # the pool's containers went with the server
