"""Drain, health and a rolling restart on a team deployment: two gateway replicas behind nginx sharing a
real Redis, four sessions of the official client calling all along.

A SIGSTOP'd replica is skipped within nginx's read timeout and its calls taken over (the longest
gap between two finished calls is printed; the issue's target is 5 s, asserted loosely here — the
machine is shared). SIGTERM to a replica under load: its readiness goes false, new requests go to the other replica,
the calls it runs finish, the approval it holds is handed back (gone from every list, the call told to
send again), and it exits 0 without a traceback. A replacement started on its port takes work again;
then the other replica is drained the same way — a rolling restart in which no call fails. The
probes answer without a token.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import server_stderr, stop, wait_for_port
from tests.replica_support import CAROL, TOKEN, have, start_replica, team_deployment

missing = have("redis-server", "nginx")
pytestmark = [
    pytest.mark.skipif(missing is not None, reason=f"{missing} is not installed (scripts/test installs it)"),
    pytest.mark.xdist_group("replicas"),
    pytest.mark.services,
]

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def team(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with team_deployment(tmp_path) as deployment:
        yield deployment


async def _ready(port: int) -> bool:
    async with httpx.AsyncClient(timeout=5) as http:
        try:
            return (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
        except httpx.HTTPError:
            return False


async def _drain(proc: Any, port: int, sessions: dict[str, Any]) -> None:
    """SIGTERM ``proc`` while the sessions call; it must go unready, then exit 0 without a traceback."""
    proc.send_signal(signal.SIGTERM)
    with anyio.fail_after(10):
        while await _ready(port):
            await anyio.sleep(0.05)
    with anyio.fail_after(40):
        while proc.poll() is None:
            await anyio.sleep(0.1)
    err = server_stderr(proc)
    assert proc.returncode == 0, err
    assert "SIGTERM: draining" in err and "drained: every call finished" in err, err
    assert "Traceback" not in err, err


async def _calls(done: dict[str, Any], count: int) -> None:
    """Wait until the sessions have made ``count`` good calls in all; fail at the first lost one."""
    with anyio.fail_after(60):
        while done["ok"] < count:
            assert not done["failed"], done["failed"]
            await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_sigterm_drains_and_a_rolling_restart_loses_no_call(team: dict[str, Any]) -> None:
    (a, port_a), (b, port_b) = team["replicas"]
    async with httpx.AsyncClient(timeout=5) as probe:  # the probes need no token and say nothing private
        health = await probe.get(f"http://127.0.0.1:{port_a}/healthz/")
        assert health.status_code == 200 and set(health.json()) == {"status", "replica"}
        assert (await probe.get(f"http://127.0.0.1:{port_a}/readyz")).json()["ready"] is True
        assert (await probe.get(f"http://127.0.0.1:{port_a}/mcp")).status_code == 401

    done: dict[str, Any] = {"ok": 0, "failed": [], "stop": False, "times": []}

    async def session(index: int) -> None:
        async with httpx.AsyncClient(headers=AUTH, timeout=60) as http, \
                Client(streamable_http_client(team["url"], http_client=http), mode="legacy") as client:
            while not done["stop"]:
                try:
                    result = await client.call_tool("peer__steps", {"count": 4, "delay": 0.25})
                except Exception as error:  # a transport error is a lost call
                    done["failed"].append(repr(error))
                    continue
                if result.is_error or result.content[0].text != "4 steps":  # type: ignore[union-attr]
                    done["failed"].append(str(result))
                else:
                    done["ok"] += 1
                    done["times"].append(time.monotonic())

    held: list[Any] = []

    async def wait_for_a_person() -> None:
        async with httpx.AsyncClient(headers=AUTH, timeout=60) as http, \
                Client(streamable_http_client(f"http://127.0.0.1:{port_a}/mcp", http_client=http),
                       mode="legacy") as client:
            held.append(await client.call_tool("peer__count", {}))

    async with anyio.create_task_group() as group:
        for index in range(4):
            group.start_soon(session, index)
        group.start_soon(wait_for_a_person)
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {CAROL}"}, timeout=10) as carol:
            with anyio.fail_after(60):
                while not (pending := (await carol.get(f"http://127.0.0.1:{port_b}/approvals")).json()["approvals"]):
                    assert not held, f"the call was answered before it was listed: {held}"
                    await anyio.sleep(0.1)
            await _calls(done, 8)

            # A hung replica: nginx skips it after its 5 s read timeout; its calls are taken over.
            b.send_signal(signal.SIGSTOP)
            stopped = time.monotonic()
            try:
                await anyio.sleep(8)
            finally:
                b.send_signal(signal.SIGCONT)
            gaps = [later - earlier for earlier, later in zip(done["times"], done["times"][1:], strict=False)
                    if later > stopped]
            stall = max(gaps, default=99.0)
            with anyio.fail_after(60):
                while len(done["times"]) < 2 or done["times"][-1] < stopped + 8:
                    await anyio.sleep(0.1)
            # A call the hung replica was running when it stopped may end in an error that says so
            # (it is not repeated unless its tool is idempotent): counted and shown, not a drain's loss.
            hung, done["failed"] = done["failed"], []
            print(f"SIGSTOP of one replica for 8 s: longest gap between two finished calls {stall:.1f} s; "
                  f"calls lost: {len(hung)} {hung}")
            assert stall < 10, f"the hung replica stalled every session for {stall:.1f} s"
            assert len(hung) <= 1, hung
            await _calls(done, done["ok"] + 4)

            started = time.monotonic()
            await _drain(a, port_a, done)
            drained_in = time.monotonic() - started
            # The approval a held went with it: no longer listed, and answering it says it is gone.
            assert (await carol.get(f"http://127.0.0.1:{port_b}/approvals")).json()["approvals"] == []
            gone = await carol.post(f"http://127.0.0.1:{port_b}/approvals/{pending[0]['id']}", json={"approved": True})
            assert gone.status_code == 410 and "stopped (drained)" in gone.json()["message"], gone.text

        # The replacement on a's port, then b drained in turn: a rolling restart.
        stop(a)
        replacement, _ = start_replica(team["config"], port_a)
        team["replicas"][0] = (replacement, port_a)
        wait_for_port(port_a, replacement)
        with anyio.fail_after(30):
            while not await _ready(port_a):
                await anyio.sleep(0.1)
        await _calls(done, done["ok"] + 8)
        await _drain(b, port_b, done)
        await _calls(done, done["ok"] + 8)
        done["stop"] = True

    assert done["failed"] == [], done["failed"]
    assert done["ok"] >= 24 and drained_in < 30
    (result,) = held
    assert result.is_error and "stopped (drained) before anyone answered" in result.content[0].text, result
