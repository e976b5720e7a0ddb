"""The escape battery: real attempts to get out of the bwrap sandbox, through the tool.

Each attempt must be contained, reported with the seed's ``status`` and a clear
``error_message``, and leave the host unchanged.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

import codeward
from codeward.engines.execution.runtime import CodingRuntime
from codeward.engines.sandbox.network import network_unavailable
from codeward.kernel.catalog import Catalog
from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot
from tests.sandbox_support import TcpServer, caller, context, needs_bwrap, runtime_fixture, survivors

pytestmark = [needs_bwrap, pytest.mark.xdist_group("sandbox-escape")]

runtime = pytest.fixture(scope="module")(runtime_fixture())


@pytest.fixture
def run(catalog: Catalog, root: Path, runtime: CodingRuntime) -> Callable[..., ToolOutcome]:
    return caller(catalog, context(root, runtime))


@pytest.fixture
def host_files(tmp_path: Path) -> Iterator[Path]:
    """A stand-in for the user's home: a secret file on the host the sandbox must not reach."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".secret").write_text("TOKEN=do-not-leak\n")
    before = snapshot(home)
    yield home
    assert snapshot(home) == before


def execute(run: Callable[..., ToolOutcome], language: str, code: str, **extra: object) -> dict[str, object]:
    outcome = run("coding_execute_code", language=language, code=code, **extra)
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    assert outcome.structured["backend"] == "bwrap" and outcome.structured["isolated"] is True
    return outcome.structured


def test_cannot_reach_a_server_on_the_hosts_loopback(run: Callable[..., ToolOutcome]) -> None:
    server = TcpServer()
    try:
        code = ("import socket\n"
                f"s = socket.create_connection(('127.0.0.1', {server.port}), timeout=3)\n"
                "print(s.recv(100))\n")
        result = execute(run, "python", code)
        shell = execute(run, "bash", f"exec 3<>/dev/tcp/127.0.0.1/{server.port} && cat <&3")
    finally:
        server.close()
    assert result["status"] == "error" and "exited with status 1" in str(result["error_message"])
    assert "PermissionError" in str(result["stderr"]) or "Network is unreachable" in str(result["stderr"])
    assert shell["status"] == "error" and shell["error_message"]
    assert "hello from the host" not in str(result["stdout"]) + str(shell["stdout"])
    assert server.accepted == 0


def test_network_is_refused_unless_the_operator_allows_it(run: Callable[..., ToolOutcome], root: Path,
                                                         runtime: CodingRuntime) -> None:
    refused = run("coding_execute_code", language="python", code="print('x')", network=True)
    assert refused.is_error and "network=true was refused" in refused.text and "[coding] allow_network" in refused.text
    docker = run("coding_run_in_docker", language="python", code="print('x')", network_enabled=True)
    assert docker.is_error and "network_enabled=true was refused" in docker.text


@pytest.mark.skipif(network_unavailable() is not None, reason=f"no isolated network here: {network_unavailable()}")
def test_allowed_network_still_cannot_reach_the_host_or_private_ranges(catalog: Catalog, root: Path,
                                                                       runtime: CodingRuntime) -> None:
    server = TcpServer("0.0.0.0")
    allowed = caller(catalog, context(root, runtime, runtime.settings.model_copy(update={"allow_network": True})))
    own = [a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET]
    targets = ["127.0.0.1", "10.0.2.2", *own]
    try:
        code = ("import socket\n"
                f"for host in {targets!r}:\n"
                "    try:\n"
                f"        socket.create_connection((host, {server.port}), timeout=3); print(host, 'CONNECTED')\n"
                "    except OSError as error:\n        print(host, 'refused:', error.strerror)\n"
                "import subprocess\n"
                "def ip(*args):\n"
                "    done = subprocess.run(['ip', *args], capture_output=True, text=True)\n"
                "    return done.returncode, done.stdout + done.stderr\n"
                "for host in ('169.254.169.254', '10.1.2.3', '172.16.0.1', '192.168.0.1'):\n"
                "    print(host, ip('route', 'get', host))\n"  # asks the kernel; sends nothing
                "print('delete', ip('route', 'del', 'unreachable', '10.0.0.0/8')[0])\n")
        result = execute(allowed, "python", code, network=True)
    finally:
        server.close()
    assert result["status"] == "success", result
    assert "CONNECTED" not in str(result["stdout"]) and server.accepted == 0
    lines = str(result["stdout"]).splitlines()
    assert len([line for line in lines if "No route to host" in line or "unreachable" in line]) >= 4, lines
    assert "delete 2" in lines  # the routes cannot be removed from inside


def test_cannot_read_shadow_home_or_the_servers_own_files(
    run: Callable[..., ToolOutcome], host_files: Path, root: Path
) -> None:
    (root / "project_secret.txt").write_text("workspace data\n")
    targets = ["/etc/shadow", "/etc/passwd", str(host_files / ".secret"), str(Path.home() / ".bashrc"),
               codeward.__file__, str(root / "project_secret.txt")]
    code = ("import sys\nleaked = []\n"
            f"for path in {targets!r}:\n"
            "    try:\n        leaked.append((path, open(path).read()[:40]))\n"
            "    except OSError as error:\n        print(path, '->', type(error).__name__)\n"
            "if leaked:\n    print('LEAKED', leaked)\n    sys.exit(0)\n"
            "sys.exit(3)\n")
    result = execute(run, "python", code)
    assert result["status"] == "error", result
    assert "exited with status 3" in str(result["error_message"])
    assert "LEAKED" not in str(result["stdout"])
    assert str(result["stdout"]).count("FileNotFoundError") == len(targets)


def test_cannot_write_outside_the_work_dir(run: Callable[..., ToolOutcome], root: Path, host_files: Path) -> None:
    marker = f"escape-{uuid.uuid4().hex[:8]}"
    before = snapshot(root)
    targets = [f"/{marker}", f"/usr/{marker}", f"/etc/{marker}", f"/code/{marker}", str(root / marker),
               str(host_files / marker), f"/proc/sys/kernel/{marker}"]
    code = ("failures = 0\n"
            f"for path in {targets!r}:\n"
            "    try:\n        open(path, 'w').write('x')\n        print('WROTE', path)\n"
            "    except OSError as error:\n        failures += 1\n        print(path, '->', error.strerror)\n"
            "open('/work/allowed.txt', 'w').write('fine'); open('/tmp/allowed.txt', 'w').write('fine')\n"
            "raise SystemExit(0 if failures < len(" + repr(targets) + ") else 4)\n")
    result = execute(run, "python", code)
    assert result["status"] == "error" and "exited with status 4" in str(result["error_message"])
    assert "WROTE" not in str(result["stdout"])
    assert snapshot(root) == before
    assert not any(os.path.exists(path) for path in targets if not path.startswith("/code"))


def test_fork_bomb_stops_at_the_process_limit(run: Callable[..., ToolOutcome]) -> None:
    marker = f"forkbomb-{uuid.uuid4().hex[:8]}"
    code = f"import os\n# {marker}\nwhile True:\n    os.fork()\n"
    result = execute(run, "python", code, timeout=10)
    assert result["status"] in ("error", "timeout"), result
    # Whichever cgroup limit the bomb reaches first (pids, or memory for the forked interpreters)
    # stops it, and the message names that limit.
    expected = {"processes": "process limit", "memory": "out of memory", "timeout": "timed out"}
    assert result["limit_hit"] in expected, result
    assert expected[str(result["limit_hit"])] in str(result["error_message"])
    assert survivors(marker) == []


def test_allocating_4_gib_is_killed_at_the_memory_limit(run: Callable[..., ToolOutcome]) -> None:
    result = execute(run, "python", "block = bytearray(4 * 1024 ** 3)\nprint('allocated', len(block))\n")
    assert result["status"] == "error", result
    assert result["limit_hit"] == "memory"
    assert "out of memory" in str(result["error_message"])
    assert "allocated" not in str(result["stdout"])


def test_spinning_forever_times_out_and_is_killed(run: Callable[..., ToolOutcome]) -> None:
    marker = f"spin-{uuid.uuid4().hex[:8]}"
    result = execute(run, "bash", f"# {marker}\nwhile :; do :; done", timeout=1)
    assert result["status"] == "timeout"
    assert "timed out after 1 s" in str(result["error_message"])
    assert survivors(marker) == []


def test_filling_the_disk_ends_at_the_private_scratch_space(run: Callable[..., ToolOutcome], root: Path) -> None:
    code = ("written = 0\n"
            "try:\n"
            "    for index in range(100000):\n"
            "        with open(f'/work/fill-{index}', 'wb') as handle:\n"
            "            handle.write(b'x' * (1 << 20))\n"
            "        written += 1\n"
            "finally:\n"
            "    print('MB written', written)\n")
    result = execute(run, "python", code, timeout=30)
    assert result["status"] == "error", result
    assert "No space left on device" in str(result["stderr"])
    assert "writable space is full" in str(result["error_message"])
    written = int(str(result["stdout"]).split()[-1])
    assert 0 < written <= 256
    assert snapshot(root) == {}


def test_background_processes_do_not_outlive_the_run(run: Callable[..., ToolOutcome]) -> None:
    seconds = f"{4000 + uuid.uuid4().int % 1000}.25"
    code = ("import subprocess\n"
            f"subprocess.Popen(['sleep', '{seconds}'], start_new_session=True)\n"
            f"subprocess.Popen('nohup sleep {seconds} >/dev/null 2>&1 &', shell=True)\n"
            "print('left them running')\n")
    result = execute(run, "python", code)
    assert result["status"] == "success"
    assert survivors(f"sleep {seconds}") == []


def test_ptrace_is_denied(run: Callable[..., ToolOutcome]) -> None:
    code = ("import ctypes, os, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "for request in (0, 16):  # PTRACE_TRACEME, PTRACE_ATTACH to pid 1\n"
            "    if libc.ptrace(request, 0 if request == 0 else 1, 0, 0) != 0:\n"
            "        errno = ctypes.get_errno()\n"
            "        raise PermissionError(errno, 'ptrace: ' + os.strerror(errno))\n")
    result = execute(run, "python", code)
    assert result["status"] == "error"
    assert "exited with status 1" in str(result["error_message"])
    assert "ptrace: Operation not permitted" in str(result["stderr"])


def test_mount_and_new_namespaces_are_denied(run: Callable[..., ToolOutcome]) -> None:
    code = "mount -t tmpfs none /tmp; status=$?\nunshare -r true || exit $((status + 10))\n"
    result = execute(run, "bash", code)
    assert result["status"] == "error"
    assert result["exit_code"] == 42  # mount failed with 32, unshare failed too
    assert "must be superuser" in str(result["stderr"]) or "not permitted" in str(result["stderr"])
    assert "unshare failed: Operation not permitted" in str(result["stderr"])
