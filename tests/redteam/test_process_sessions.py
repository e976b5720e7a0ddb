"""A long-running process is the same box as run_shell, as root and as the unprivileged user:
it cannot read a secret, plant a hook or change git's configuration (its writes pass the gate
when it stops), reach the host's loopback listener, or outlive its stop; its dev server is
reachable from the session's next run (their shared namespace) and nowhere else; past its memory limit
it is killed and past its disk cap stopped, each said in its state, nothing of it applied; and the
server sees when it waits for input."""

from __future__ import annotations

import os
import uuid

import pytest

from tests.process_support import free_port
from tests.redteam.harness import Host
from tests.sandbox_support import survivors

pytestmark = pytest.mark.anyio


async def test_a_process_is_contained_like_a_script(host: Host) -> None:
    marker = f"4713.{uuid.uuid4().int % 10**9}"
    port = free_port()
    reach_host = (f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {host.listener.port}), 2)\" "
                  "2>/dev/null && echo REACHED-HOST || echo no-host")
    attack = (f"cat .env deploy/server.key; mkdir -p .git/hooks; printf '#!/bin/sh\\n{host.marker_command()}\\n' "
              f"> .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; echo '[core] fsmonitor = x' >> .git/config; "
              f"{reach_host}; echo attacked; exec python3 -u -m http.server {port} --bind 127.0.0.1 # {marker}")
    async with host.serve() as session:
        started = await session.call("process_start", {"name": "attack", "command": attack})
        assert not started.is_error, started.text
        read = await session.call("process_read", {"name": "attack", "wait_s": 30, "until": "Serving"})
        printed = (read.structured or {}).get("text", "")
        assert "attacked" in printed and "no-host" in printed and "REACHED-HOST" not in printed, read.text
        fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/src/app.py').read())\""
        fetched = await session.call("run_shell", {"script": fetch})
        assert "def main" in fetched.text, fetched.text
        stopped = await session.call("process_stop", {"name": "attack"})
        assert not stopped.is_error, stopped.text
        assert ".git" in stopped.text, stopped.text  # said what it did not apply
    assert survivors(marker) == []


async def test_a_process_is_held_to_its_memory_and_disk_cap_and_says_when_it_waits(host: Host) -> None:
    marker = f"4714.{uuid.uuid4().int % 10**9}"
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + "\n[shell]\nmemory_mb = 128\n\n[sandbox]\ndisk_mb = 32\n")
    os.chown(config, host.principal.uid, host.principal.gid)
    host.rebaseline()
    hog = ("exec python3 -c \"b = bytearray(600 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); "
           "print('ALLOC' + 'ATED')\"")
    filler = f"head -c 100M /dev/zero > big.bin; echo after > after.txt; exec sleep {marker}"
    async with host.serve() as session:
        for name, command in (("hog", hog), ("filler", filler)):
            started = await session.call("process_start", {"name": name, "command": command})
            assert not started.is_error, started.text
        for name in ("hog", "filler"):
            read = await session.call("process_read", {"name": name, "wait_s": 30, "until": "never printed"})
            process = (read.structured or {}).get("process", {})
            assert process.get("state") == "exited", read.text
        hog_read = await session.call("process_read", {"name": "hog"})
        assert "ALLOCATED" not in hog_read.text and "out of memory" in hog_read.text, hog_read.text
        assert "128 MiB" in hog_read.text and "[shell] memory_mb" in hog_read.text, hog_read.text
        filled = await session.call("process_read", {"name": "filler"})
        assert "filled its disk cap of 32 MiB" in filled.text, filled.text
        # as this principal, the server sees when a process waits for its input
        await session.call("process_start", {"name": "asker", "command": "read -r answer; echo \"got $answer\""})
        asked = await session.call("process_read", {"name": "asker", "wait_s": 20, "until": "never printed"})
        assert (asked.structured or {}).get("process", {}).get("state") == "waiting_for_input", asked.text
        await session.call("process_write", {"name": "asker", "text": "yes\n"})
        answered = await session.call("process_read", {"name": "asker", "wait_s": 20, "until": "got yes"})
        assert "got yes" in answered.text, answered.text
        applied = await session.call("process_apply", {"name": "filler"})
        assert "nothing was applied" in applied.text, applied.text
        stopped = await session.call("process_stop", {"name": "filler"})
        assert "nothing this process wrote was applied" in stopped.text, stopped.text
    assert not any((host.project / name).exists() for name in ("big.bin", "after.txt"))
    assert survivors(marker) == []
