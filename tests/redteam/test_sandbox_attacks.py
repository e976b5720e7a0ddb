"""Attacks on what executes: run_shell and coding_execute_code, as root and as a normal user.

- **Host code execution through git** (issue attack 1): a script renames ``.git`` away and puts
  a copy with a planted ``core.fsmonitor`` in its place, writes hooks, points ``gitdir:`` and
  ``commondir`` elsewhere, creates repositories in subfolders, plants a bare repository, moves
  and rewrites the shell log, rewrites ``codeward.toml``. The fixture then runs the host's own
  ``git status``/``git commit`` everywhere and compares every protected path.
- **The model chooses the network** (attack 4): ``network=true`` is refused without the
  operator's ``[coding] allow_network``; allowed, the code still cannot connect to the host's
  listener on 127.0.0.1, to the host's own addresses or through slirp's gateway.
- **No limits as a normal user** (attack 5): memory, processes and the process rlimit, in
  Python, C, node, bash and run_shell; every result lists the limits and how they held.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

import psutil
import pytest

from codeward.engines.sandbox.network import network_unavailable
from codeward.engines.sandbox.overlay import overlays_work
from tests.redteam.harness import Host
from tests.sandbox_support import bwrap_works

NO_OVERLAY = overlays_work()
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here"),
    pytest.mark.skipif(NO_OVERLAY is not None, reason=f"no overlay here: {NO_OVERLAY}"),
]


async def logged_once(session: Any, host: Host) -> None:
    """A first harmless run, so the shell log codeward itself keeps (``.codeward/``) exists
    before the attack; the checks then compare with that."""
    await session.call("run_shell", {"script": "true"})
    host.rebaseline()


def configure(host: Host, extra: str) -> None:
    """The operator's codeward.toml for this attack (set by hand, then the new baseline)."""
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + extra)
    os.chown(config, host.principal.uid, host.principal.gid)
    host.rebaseline()


async def test_a_script_cannot_plant_anything_git_or_codeward_would_run(host: Host) -> None:
    plant = f"{host.marker_command('planted')}; false"
    attacks = [
        # the attack, verbatim
        f"mv .git .git-orig && cp -a .git-orig .git && git config --file .git/config core.fsmonitor '{plant}'",
        # hooks and config in place
        f"printf '#!/bin/sh\\n{host.marker_command('hook')}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/*",
        f"git config core.hooksPath hooks-elsewhere; git config core.fsmonitor '{plant}'",
        # pointers: gitdir files and commondir
        f"git init -q --bare ../evil.git 2>/dev/null; mkdir -p linked && echo 'gitdir: {host.outside}' > linked/.git",
        "echo ../.. > .git/commondir",
        # new repositories in subfolders, and a bare one git finds by walking up
        f"mkdir -p vendor/lib && cd vendor/lib && git init -q && git config core.fsmonitor '{plant}'",
        f"git init -q --bare tools.git && git --git-dir=tools.git config core.fsmonitor '{plant}'",
        # codeward's own policy and record
        "printf '[shell]\\nsandbox = false\\n' > codeward.toml; echo '[env]' > mcp_env.toml",
        "mv .codeward/logs .codeward/logs-gone; mkdir -p .codeward/logs; echo '{}' > .codeward/logs/shell.jsonl",
        # a link the user's next write would follow out of the project
        f"ln -s {host.home / '.bashrc'} notes/bashrc; ln -s {host.outside / 'canary.txt'} canary",
    ]
    async with host.serve() as session:
        await logged_once(session, host)  # and a log to rewrite
        answers = [await session.call("run_shell", {"script": script}) for script in attacks]
        listed = await session.call("run_shell", {"script": "ls -a; git status --short | head -5"})
    assert all(not answer.is_error for answer in answers), [a.text for a in answers if a.is_error]
    refusals = "\n".join(answer.text for answer in answers)
    for reason in (".git/ is protected", "codeward's configuration is protected", ".codeward/ is protected",
                   "git repository's metadata", "a symlink pointing outside the workspace"):
        assert reason in refusals, reason
    assert not (host.project / ".git-orig").exists() and not (host.project / "tools.git").exists()
    assert not (host.project / "vendor" / "lib" / ".git").exists()
    assert not os.path.lexists(host.project / "canary") and not os.path.lexists(host.project / "notes" / "bashrc")
    assert (host.project / "vendor" / "lib").is_dir()  # the ordinary part of the script came back
    assert "STDOUT:" in listed.text
    log = (host.project / ".codeward" / "logs" / "shell.jsonl").read_text().splitlines()
    assert len(log) == len(attacks) + 2 and all(json.loads(line)["script"] for line in log)
    # the fixture now runs the host's git status/commit everywhere and compares protected paths


async def test_network_is_refused_without_the_operator(host: Host) -> None:
    async with host.serve() as session:
        await logged_once(session, host)
        code = await session.call("coding_execute_code", {"language": "python", "code": "print(1)", "network": True})
        docker = await session.call("coding_run_in_docker", {"language": "python", "code": "print(1)",
                                                             "network_enabled": True})
        shell = await session.call("run_shell", {
            "script": f"exec 3<>/dev/tcp/127.0.0.1/{host.listener.port} && cat <&3; echo rc=$?"})
    assert code.refused("network=true was refused", "[coding] allow_network")
    assert docker.refused("network_enabled=true was refused")
    assert "rc=1" in shell.text
    # the fixture checks that the host listener saw no connection


@pytest.mark.skipif(network_unavailable() is not None, reason=f"no isolated network: {network_unavailable()}")
async def test_allowed_network_cannot_reach_the_host(host: Host) -> None:
    configure(host, "\n[coding]\nallow_network = true\n\n[shell]\nnetwork = true\n")
    own = sorted({a.address for addrs in psutil.net_if_addrs().values() for a in addrs
                  if a.family == socket.AF_INET})
    targets = ["127.0.0.1", "10.0.2.2", *own]
    code = ("import socket\n"
            f"for host in {targets!r}:\n"
            "    try:\n"
            f"        socket.create_connection((host, {host.listener.port}), timeout=3)\n"
            "        print(host, 'CONNECTED')\n"
            "    except OSError as error:\n"
            "        print(host, 'no:', error.strerror)\n")
    shell = "".join(f"(exec 3<>/dev/tcp/{target}/{host.listener.port} && echo {target} CONNECTED) 2>/dev/null\n"
                    for target in targets) + "ip route | grep -c unreachable\n"
    async with host.serve() as session:
        await logged_once(session, host)
        answer = await session.call("coding_execute_code", {"language": "python", "code": code, "network": True})
        scripted = await session.call("run_shell", {"script": shell, "timeout_s": 60})
    assert not answer.is_error, answer.text
    assert answer.structured["status"] == "success", answer.structured
    assert "CONNECTED" not in answer.text and answer.text.count(" no: ") == len(targets)
    assert "CONNECTED" not in scripted.text and "EXIT CODE: 0" in scripted.text, scripted.text
    # the fixture checks that the listener (bound to 127.0.0.1) saw nothing


LIMIT_ATTACKS: dict[str, tuple[str, str, int]] = {
    "python grabs 600 MB": ("python", "b = bytearray(600 * 1024 * 1024)\nb[::4096] = b'x' * len(b[::4096])\n"
                                      "print('GOT 600 MB')\n", 128),
    "C grabs 2 GB": ("c", "#include <stdio.h>\n#include <stdlib.h>\n"
                          "int main(void) { size_t n = 2UL << 30; volatile char *p = malloc(n);\n"
                          "  if (!p) { puts(\"refused\"); return 3; }\n"
                          "  for (size_t i = 0; i < n; i += 4096) p[i] = 1;\n"
                          "  printf(\"GOT %zu MB\\n\", n >> 20); return 0; }\n", 128),
    "node grabs 2 GB": ("javascript", "const a = []; for (let i = 0; i < 32; i++) a.push(Buffer.alloc(64 << 20, 1));\n"
                                      "console.log('GOT 2 GB');\n", 256),
}


@pytest.mark.parametrize("attack", list(LIMIT_ATTACKS))
async def test_memory_limits_hold_without_root(host: Host, attack: str) -> None:
    language, code, memory = LIMIT_ATTACKS[attack]
    async with host.serve() as session:
        answer = await session.call("coding_execute_code", {"language": language, "code": code,
                                                            "memory_mb": memory, "timeout": 60})
    result: dict[str, Any] = answer.structured
    if result["status"] == "setup_error":
        pytest.skip(f"{language} cannot run here: {result['error_message']}")
    assert "GOT" not in result["stdout"], result
    assert result["status"] == "error", result
    assert any(f"memory {memory} MB" in limit for limit in result["limits"]), result["limits"]
    if host.principal.uid != 0:
        assert any("RLIMIT_DATA" in limit or "cgroup" in limit for limit in result["limits"])
        assert result["limits_not_enforced"] or any("cgroup" in limit for limit in result["limits"])


FORK_COUNTER = """
import os, time
started = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    started += 1
print("started", started)
print(open("/proc/self/limits").read())
"""


def started(text: str) -> int:
    return int(text.split("started ")[1].split()[0])


async def test_process_limits_hold_without_root(host: Host) -> None:
    async with host.serve() as session:
        answer = await session.call("coding_execute_code", {"language": "python", "code": FORK_COUNTER,
                                                            "timeout": 60})
    result: dict[str, Any] = answer.structured
    assert started(result["stdout"]) < 64, result  # the limit counts the interpreter too
    if host.principal.uid != 0:
        limit = result["stdout"].split("Max processes")[1].split()
        assert int(limit[0]) <= 64, result["stdout"]  # RLIMIT_NPROC is no longer above pid_max
    assert any("processes and threads 64" in limit for limit in result["limits"]), result["limits"]


async def test_run_shell_limits_hold_without_root(host: Host) -> None:
    configure(host, "\n[shell]\nmemory_mb = 256\nmax_processes = 64\n")
    script = ("python3 -c \"b = bytearray(600 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); "
              "print('ALLOC' + 'ATED')\"; echo python=$?\n"
              f"python3 -c '{FORK_COUNTER}' | head -1\n")
    async with host.serve() as session:
        await logged_once(session, host)
        answer = await session.call("run_shell", {"script": script, "timeout_s": 60})
    assert "ALLOCATED" not in answer.text and "python=0" not in answer.text, answer.text
    assert started(answer.text) < 64, answer.text
    if host.principal.uid != 0:  # the result says how the limits held, and which did not
        assert "note: limits:" in answer.text and "NOT enforced: memory of all processes together" in answer.text
