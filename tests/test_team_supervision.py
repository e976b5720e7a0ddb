"""``deploy/run-replicas`` as shipped: kill -9 of one replica under load leaves the other serving and the
dead one started again on its port; SIGTERM stops the whole deployment (replicas drained first) and
leaves no process behind.

Real services: Debian's redis-server and nginx, codeward gateway replicas, the official client.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import psutil
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import free_port, wait_for_port
from tests.replica_support import TOKEN, gateway_config, have

missing = have("redis-server", "nginx")
pytestmark = [
    pytest.mark.skipif(missing is not None, reason=f"{missing} is not installed (scripts/test installs it)"),
    pytest.mark.xdist_group("replicas"),
    pytest.mark.services,
]

RUN_REPLICAS = Path(__file__).resolve().parent.parent / "deploy" / "run-replicas"


def _replica_on(supervisor: int, port: int) -> psutil.Process | None:
    """The replica process the supervisor started for ``port`` (None while there is none)."""
    for child in psutil.Process(supervisor).children():
        try:
            if "--port" in (line := child.cmdline()) and line[line.index("--port") + 1] == str(port):
                return child
        except psutil.Error:
            continue
    return None


def _replica_id(port: int) -> str | None:
    """The id of the replica on ``port`` once it is ready (its upstream connected), else None."""
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
        return str(answer.json()["replica"]) if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError):
        return None


@pytest.mark.anyio
async def test_a_killed_replica_is_restarted_and_the_other_keeps_serving(tmp_path: Path) -> None:
    port = free_port()
    config = gateway_config(tmp_path, port + 100)
    env = {**os.environ, "CODEWARD_TOKEN": TOKEN, "PORT": str(port), "CODEWARD_CONFIG": str(config),
           "CODEWARD": str(Path(sys.executable).with_name("codeward")), "DEPLOY_DIR": str(tmp_path / "deploy"),
           "PYTHONUNBUFFERED": "1"}
    run = subprocess.Popen([str(RUN_REPLICAS), "2"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                           stderr=open(tmp_path / "run.log", "wb"), start_new_session=True)  # noqa: SIM115
    try:
        wait_for_port(port, run, timeout=60)
        with anyio.fail_after(90):
            while not all(_replica_id(port + i) for i in (1, 2)):
                assert run.poll() is None, (tmp_path / "run.log").read_text()
                await anyio.sleep(0.2)
        victim, survivor = _replica_on(run.pid, port + 1), _replica_on(run.pid, port + 2)
        assert victim is not None and survivor is not None
        first_id = _replica_id(port + 1)

        results: list[Any] = []
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
                Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                       mode="legacy") as client:
            for _ in range(3):
                results.append(await client.call_tool("peer__echo", {"text": "before"}))
            victim.kill()  # SIGKILL: a crash
            victim.wait(10)
            for _ in range(10):  # the other replica serves every call meanwhile
                results.append(await client.call_tool("peer__echo", {"text": "after"}))
            with anyio.fail_after(90):
                while (new_id := _replica_id(port + 1)) in (None, first_id):
                    await anyio.sleep(0.2)
            results.append(await client.call_tool("peer__echo", {"text": "restarted"}))
        assert [r.content[0].text for r in results] == ["before"] * 3 + ["after"] * 10 + ["restarted"]
        assert survivor.is_running() and run.poll() is None, "one replica's death stopped nothing else"
        replacement = _replica_on(run.pid, port + 1)
        assert replacement is not None and replacement.pid != victim.pid and new_id != first_id
        log = (tmp_path / "run.log").read_text()
        assert f"the replica on port {port + 1} ended (exit 137" in log, log

        children = psutil.Process(run.pid).children(recursive=True)
        run.send_signal(signal.SIGTERM)
        assert run.wait(60) == 0, (tmp_path / "run.log").read_text()
        started = time.monotonic()
        _, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"left behind after {time.monotonic() - started:.1f}s: {alive}"
        replica_log = (tmp_path / "deploy" / f"replica-{port + 2}.log").read_text()
        assert "drained" in replica_log and "Traceback" not in replica_log, replica_log
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(10)
