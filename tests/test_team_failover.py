"""Faults the balancers and Redis must absorb, on one deployment shared by the checks: Redis as a master,
its replica and a Redis Sentinel (Debian's redis-sentinel), two gateway replicas reaching the master
through the Sentinel, and both balancers in front of them — HAProxy with deploy/haproxy.cfg and nginx
with deploy/nginx.conf. Official client, real processes, loopback only.

- HAProxy's active checks of ``/readyz`` take a SIGSTOP'd replica out within seconds; calls go on.
- The same request of a session reaching two replicas (a balancer's retry after a timeout, the first
  replica alive) runs once: the second replica answers with the first run's result.
- kill -9 of the Redis master: the Sentinel promotes its replica, the gateway replicas follow it, the
  errors in between name Redis (never an HTML page), and a call held for approval across the failover is
  released by an approver on the other replica afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2 as httpx
import pytest
import redis as redis_client
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import server_stderr
from tests.replica_support import (
    ALICE,
    CAROL,
    TOKEN,
    gateway_config,
    haproxy,
    have,
    nginx,
    redis_sentinel,
    sentinel_master,
    start_replicas,
    stop,
)

missing = have("redis-server", "redis-sentinel", "nginx", "haproxy")
pytestmark = [
    pytest.mark.skipif(missing is not None, reason=f"{missing} is not installed (scripts/test installs it)"),
    pytest.mark.xdist_group("replicas"),
    pytest.mark.services,
]

AUTH = {"Authorization": f"Bearer {TOKEN}"}
STREAMING = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("failover")
    runs = directory / "echo-runs.txt"
    runs.touch()
    with redis_sentinel(directory) as redis:
        state = f'sentinels = ["127.0.0.1:{redis["sentinel"]}"]\nsentinel_master = "{redis["name"]}"'
        config = gateway_config(directory, 0, state=state, extra=f'env = {{ PEER_CALL_LOG = "{runs}" }}',
                                auto_approve=["peer__steps", "peer__echo", "peer__slow"])
        replicas = start_replicas(config, 2)
        ports = [port for _, port in replicas]
        try:
            (directory / "nginx").mkdir()
            with haproxy(directory, ports) as (haproxy_port, balancer), \
                    nginx(directory / "nginx", ports) as nginx_port:
                yield {"haproxy": f"http://127.0.0.1:{haproxy_port}", "nginx": f"http://127.0.0.1:{nginx_port}",
                       "balancer": balancer,
                       "replicas": replicas, "ports": ports, "redis": redis, "runs": runs, "tmp": directory}
        finally:
            for proc, _ in replicas:
                stop(proc)


async def _calling(url: str, done: dict[str, Any], tool: str, arguments: dict[str, Any]) -> None:
    """One session calling ``tool`` until ``done["stop"]``: good answers timed, failures kept as text."""
    async with httpx.AsyncClient(headers=AUTH, timeout=60) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        while not done["stop"]:
            try:
                result = await client.call_tool(tool, arguments)
            except Exception as error:
                done["failed"].append(repr(error))
                await anyio.sleep(0.2)
                continue
            if result.is_error:
                done["failed"].append(str(result.content[0]))
                await anyio.sleep(0.2)
            else:
                done["times"].append(time.monotonic())


async def _more_calls(done: dict[str, Any], count: int, within: float = 60) -> None:
    target = len(done["times"]) + count
    with anyio.fail_after(within):
        while len(done["times"]) < target:
            await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_haproxy_takes_a_hung_replica_out_by_its_readiness_checks(team: dict[str, Any]) -> None:
    (_, port_a), (b, port_b) = team["replicas"]
    async with httpx.AsyncClient(timeout=5) as probe:  # probes pass through with no token
        assert (await probe.get(team["haproxy"] + "/healthz")).status_code == 200
    done: dict[str, Any] = {"times": [], "failed": [], "stop": False}
    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(_calling, team["haproxy"] + "/mcp", done, "peer__steps", {"count": 2, "delay": 0.1})
        await _more_calls(done, 6)
        b.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            await anyio.sleep(8)
        finally:
            b.send_signal(signal.SIGCONT)
        await _more_calls(done, 6)
        done["stop"] = True
    gaps = [later - earlier for earlier, later in zip(done["times"], done["times"][1:], strict=False)
            if later > stopped]
    print(f"HAProxy, SIGSTOP of one replica for 8 s: longest gap between two finished calls {max(gaps):.1f} s; "
          f"calls lost: {len(done['failed'])} {done['failed']}")
    assert max(gaps) < 10, f"the hung replica stalled every session for {max(gaps):.1f} s"
    assert len(done["failed"]) <= 1, done["failed"]
    haproxy_log = server_stderr(team["balancer"], limit=20000)
    assert f"r{port_b} is DOWN" in haproxy_log and f"r{port_a} is DOWN" not in haproxy_log, haproxy_log


async def _open_session(http: httpx.AsyncClient, url: str) -> str:
    """An MCP session (2025 era) opened by hand: its id."""
    opened = await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "twice", "version": "1"}}},
        headers=STREAMING)
    session = opened.headers["mcp-session-id"]
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers={**STREAMING, "mcp-session-id": session})
    return str(session)


async def _answer(http: httpx.AsyncClient, url: str, session: str, request: dict[str, Any]) -> dict[str, Any]:
    """POST one JSON-RPC request in a session and read its event stream up to the answer."""
    async with http.stream("POST", url, json=request, headers={**STREAMING, "mcp-session-id": session}) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: ") and ('"result"' in line or '"error"' in line):
                return dict(json.loads(line.removeprefix("data: ")))
    raise AssertionError(f"the stream of {request} ended without an answer")


@pytest.mark.anyio
async def test_a_request_sent_to_two_replicas_runs_once(team: dict[str, Any]) -> None:
    """What a balancer's retry after a timeout does when the first replica read the request but hung before
    answering (nginx's ``proxy_next_upstream timeout non_idempotent``, HAProxy's ``retry-on
    response-timeout``): the same request of the same session reaches a second replica while the first
    runs it. The second answers with the first run's result instead of running it again."""
    (_, port_a), (_, port_b) = team["replicas"]
    seconds = 1.5 + (os.getpid() % 1000) / 10_000  # this run's mark in the peer's log
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "peer__slow", "arguments": {"seconds": seconds}}}
    master = redis_client.Redis(port=sentinel_master(team["redis"]["sentinel"]) or 0, decode_responses=True)
    async with httpx.AsyncClient(headers=AUTH, timeout=60) as http:
        session = await _open_session(http, f"http://127.0.0.1:{port_a}/mcp")
        async with anyio.create_task_group() as group:
            answers: list[dict[str, Any]] = []

            async def first() -> None:
                answers.append(await _answer(http, f"http://127.0.0.1:{port_a}/mcp", session, request))

            group.start_soon(first)
            with anyio.fail_after(20):  # the first replica has it running
                while not master.exists(f"codeward:call:{session}:7"):
                    await anyio.sleep(0.02)
            second = await _answer(http, f"http://127.0.0.1:{port_b}/mcp", session, request)
        runs = team["runs"].read_text(encoding="utf-8").splitlines().count(f"slow {seconds}")
    print(f"one request posted to two replicas: ran {runs} time(s); answers {[*answers, second]}")
    assert runs == 1, f"the request ran {runs} times"
    assert second == answers[0] and second["result"]["content"][0]["text"] == f"slept {seconds}", (second, answers)


@pytest.mark.anyio
async def test_a_sentinel_failover_keeps_calls_and_approvals_working(team: dict[str, Any]) -> None:
    redis = team["redis"]
    (_, port_a), (_, port_b) = team["replicas"]
    done: dict[str, Any] = {"times": [], "failed": [], "stop": False}
    held: list[Any] = []

    async def wait_for_a_person() -> None:  # alice's call needs an approver's yes; it waits on replica a
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=120) as http, \
                Client(streamable_http_client(f"http://127.0.0.1:{port_a}/mcp", http_client=http),
                       mode="legacy") as client:
            held.append(await client.call_tool("peer__count", {}))

    async with anyio.create_task_group() as group, \
            httpx.AsyncClient(headers={"Authorization": f"Bearer {CAROL}"}, timeout=10) as carol:
        for _ in range(3):
            group.start_soon(_calling, team["haproxy"] + "/mcp", done, "peer__echo", {"text": "failover"})
        group.start_soon(wait_for_a_person)
        with anyio.fail_after(60):
            while not (pending := (await carol.get(f"http://127.0.0.1:{port_b}/approvals")).json()["approvals"]):
                await anyio.sleep(0.1)
        await _more_calls(done, 6)

        redis["processes"][redis["master"]].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        with anyio.fail_after(30):
            while sentinel_master(redis["sentinel"]) != redis["replica"]:
                await anyio.sleep(0.1)
        promoted = time.monotonic() - killed
        await _more_calls(done, 9)
        back = done["times"][-9] - killed

        # The call held across the failover is released by an approver on the other replica.
        with anyio.fail_after(30):
            while (answer := await carol.post(f"http://127.0.0.1:{port_b}/approvals/{pending[0]['id']}",
                                              json={"approved": True})).status_code == 503:
                await anyio.sleep(0.2)
        assert answer.status_code == 200, answer.text
        with anyio.fail_after(30):
            while not held:
                await anyio.sleep(0.1)
        done["stop"] = True

    print(f"Sentinel failover: replica promoted {promoted:.1f} s after kill -9 of the master; calls succeeding "
          f"again {back:.1f} s after; {len(done['failed'])} calls failed in between: {done['failed'][:3]}")
    assert all("Redis" in failure and "<html" not in failure.lower() for failure in done["failed"]), done["failed"]
    (result,) = held
    assert not result.is_error and result.content[0].text == "1", result
