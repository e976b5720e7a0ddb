"""Two gateway replicas behind nginx, sharing state in Redis: a stream survives the death of the
replica serving it; Redis down gives a clear error and nothing hangs; Redis back, calls work.

Real services: Debian's redis-server and nginx (the test command installs them), codeward gateway
replicas as subprocesses, the official Python MCP client through nginx.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import stop
from tests.replica_support import ALICE, TOKEN, gateway_config, have, kill, nginx, redis_server, start_replicas

missing = have("redis-server", "nginx")
pytestmark = [
    pytest.mark.skipif(missing is not None, reason=f"{missing} is not installed (scripts/test installs it)"),
    pytest.mark.xdist_group("replicas"),
    pytest.mark.services,
]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with redis_server(tmp_path) as redis_port:
        config = gateway_config(tmp_path, redis_port)
        replicas = start_replicas(config, 2)  # each ready: its upstream connected (/readyz)
        try:
            (tmp_path / "nginx").mkdir()
            with nginx(tmp_path / "nginx", [port for _, port in replicas]) as port:
                yield {"url": f"http://127.0.0.1:{port}/mcp", "replicas": replicas, "redis": redis_port,
                       "tmp": tmp_path, "config": config}
        finally:
            for proc, _ in replicas:
                stop(proc)


def _replica_ids(replicas: list[tuple[subprocess.Popen[bytes], int]]) -> dict[str, subprocess.Popen[bytes]]:
    """Which process is which replica: each names itself in X-Codeward-Replica."""
    return {name: proc for name, (proc, _) in _replicas_by_id(replicas).items()}


Replica = tuple[subprocess.Popen[bytes], int]


def _replicas_by_id(replicas: list[Replica]) -> dict[str, Replica]:
    found = {}
    for proc, port in replicas:
        ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        answer = httpx.post(f"http://127.0.0.1:{port}/mcp", content=ping, timeout=10, headers={
            "Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"})
        found[answer.headers["x-codeward-replica"]] = (proc, port)
    return found


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def _pending(ports: list[int], tool: str, answered: list[Any]) -> dict[str, Any]:
    """The approval ``tool``'s call waits on, on either replica; fails at once (saying how) if the call was
    answered before anyone was asked (the results so far are all approved ones)."""
    async with httpx.AsyncClient(headers=AUTH, timeout=10) as http:
        while True:
            assert not any(r.is_error for r in answered), f"answered before anyone was asked: {answered}"
            for port in ports:
                listed = (await http.get(f"http://127.0.0.1:{port}/approvals")).json()["approvals"]
                waiting = [a for a in listed if a["tool"] == tool]
                if waiting:
                    return dict(waiting[0])
            await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_an_approval_waiting_on_one_replica_is_answered_on_the_other(deployment: dict[str, Any]) -> None:
    by_id = _replicas_by_id(deployment["replicas"])
    ports = [port for _, port in by_id.values()]
    results: list[Any] = []
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=60) as http, \
            Client(streamable_http_client(deployment["url"], http_client=http), mode="legacy") as client:
        for answer in (True, False):
            async with anyio.create_task_group() as group:
                async def call() -> None:
                    results.append(await client.call_tool("peer__count", {}))

                group.start_soon(call)
                with anyio.fail_after(30):
                    pending = await _pending(ports, "peer__count", results)
                assert pending["server"] == "peer" and pending["replica"] in by_id
                other = next(port for name, (_, port) in by_id.items() if name != pending["replica"])
                where = f"http://127.0.0.1:{other}/approvals/{pending['id']}"
                async with httpx.AsyncClient(headers=AUTH, timeout=10) as admin:
                    bad = await admin.post(where, json={"approved": "y"})
                    assert bad.status_code == 400 and '"approved": true' in bad.json()["message"]
                    decided = await admin.post(where, json={"approved": answer})
                    assert decided.status_code == 200, decided.text
                    again = await admin.post(where, json={"approved": True})
                    assert again.status_code == 409
                    unknown = await admin.post(f"http://127.0.0.1:{other}/approvals/nope", json={"approved": True})
                    assert unknown.status_code == 404 and "GET /approvals" in unknown.json()["message"]
    approved, denied = results
    assert not approved.is_error and approved.content[0].text == "1", approved
    assert denied.is_error and "not approved" in denied.content[0].text, denied
    async with httpx.AsyncClient(headers=AUTH, timeout=10) as http:
        assert (await http.get(f"http://127.0.0.1:{ports[0]}/approvals")).json() == {"approvals": []}
    async with httpx.AsyncClient(timeout=10) as stranger:
        assert (await stranger.get(f"http://127.0.0.1:{ports[0]}/approvals")).status_code == 401
        wrong = await stranger.get(f"http://127.0.0.1:{ports[0]}/approvals", headers={"Authorization": "Bearer x"})
        assert wrong.status_code == 401 and "users file" in wrong.json()["message"]

    # The audit: each replica's JSONL file, and every replica's records on any replica's GET /audit.
    # Who answered is audited too: the operator's token answered both, on the other replica.
    expected = [("started", "running"), ("approval", "approved"), ("call", "ok"), ("started", "running"),
                ("approval", "denied"), ("call", "denied"), ("answer", "approved"), ("answer", "denied")]
    lines = [json.loads(line) for path in sorted((deployment["tmp"] / "audit").glob("audit-*.jsonl"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    counted = sorted((r["event"], r["outcome"]) for r in lines if r["tool"] == "peer__count")
    assert counted == sorted(expected), lines
    for record in lines:
        if record["tool"] == "peer__count":
            assert len(record["arguments_sha256"]) == 64 and record["replica"] in by_id
            if record["event"] == "answer":
                assert record["user"] == "operator" and record["caller"] == "alice", record
                assert record["held_by"] != record["replica"], record
            else:
                assert record["user"] == "alice", record
            if record["event"] == "approval":
                assert record["by"] == "operator", record
    async with httpx.AsyncClient(headers=AUTH, timeout=10) as http:
        shared = (await http.get(f"http://127.0.0.1:{ports[1]}/audit?count=100")).json()["records"]
        bad = await http.get(f"http://127.0.0.1:{ports[1]}/audit?count=lots")
    assert sorted((r["event"], r["outcome"]) for r in shared if r["tool"] == "peer__count") == sorted(expected)
    assert bad.status_code == 400 and "count=N" in bad.json()["message"]


@pytest.mark.anyio
async def test_a_stream_survives_the_death_of_its_replica(deployment: dict[str, Any]) -> None:
    processes = _replica_ids(deployment["replicas"])
    answered_by: list[str] = []

    async def remember(response: httpx.Response) -> None:
        if response.request.method in ("POST", "GET") and "x-codeward-replica" in response.headers:
            answered_by.append(response.headers["x-codeward-replica"])

    seen: list[float] = []
    killed: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        if progress == 4 and not killed:
            victim = answered_by[-1]
            killed.append(victim)
            kill(processes[victim])

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60,
                                 event_hooks={"response": [remember]}) as http, \
            Client(streamable_http_client(deployment["url"], http_client=http), mode="legacy") as client:
        with anyio.fail_after(60):
            result = await client.call_tool("peer__steps", {"count": 12, "delay": 0.3}, progress_callback=progress)
    assert not result.is_error, result
    assert result.content[0].text == "12 steps"  # type: ignore[union-attr]
    assert killed, "the call streamed progress through nginx"
    assert seen == [float(n) for n in range(1, 13)], f"every step exactly once, in order: {seen}"
    survivors = [r for r in answered_by if r != killed[0]]
    assert survivors, "the rest came from the other replica"
    assert processes[killed[0]].poll() is not None


@pytest.mark.anyio
async def test_redis_down_is_a_clear_error_and_recovery_is_automatic(deployment: dict[str, Any]) -> None:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
            Client(streamable_http_client(deployment["url"], http_client=http), mode="legacy") as client:
        assert (await client.call_tool("peer__echo", {"text": "before"})).content[0].text == "before"  # type: ignore[union-attr]
        subprocess.run(["redis-cli", "-p", str(deployment["redis"]), "shutdown", "nosave"], check=False,
                       capture_output=True, timeout=10)
        with anyio.fail_after(20):
            with pytest.raises(Exception) as failure:
                await client.call_tool("peer__echo", {"text": "during"})
        text = str(failure.value)
        assert "Redis" in text and f"127.0.0.1:{deployment['redis']}" in text and "redis-cli" in text, text
    # A request that needs no shared state (the 2026-07-28 protocol: no session, no stream to resume; an
    # auto-approved tool, pins off) is answered while Redis is down, where the session's call above was not.
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
            Client(streamable_http_client(deployment["url"], http_client=http), mode="2026-07-28") as stateless:
        with anyio.fail_after(30):
            listed = await stateless.list_tools()
            assert "peer__echo" in {tool.name for tool in listed.tools}
            echoed = await stateless.call_tool("peer__echo", {"text": "during"})
        assert not echoed.is_error and echoed.content[0].text == "during", echoed.content  # type: ignore[union-attr]

    with redis_server(deployment["tmp"], deployment["redis"]):
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
                Client(streamable_http_client(deployment["url"], http_client=http), mode="legacy") as client:
            with anyio.fail_after(30):
                assert (await client.call_tool("peer__echo", {"text": "after"})).content[0].text == "after"  # type: ignore[union-attr]


def test_the_state_url_is_checked() -> None:
    from codeward.config import ConfigError, load_config

    with pytest.raises(ConfigError) as bad:
        load_config(None, environ={**os.environ, "CODEWARD_STATE_URL": "http://127.0.0.1:6379"})
    assert "redis://" in str(bad.value) and "CODEWARD_STATE_URL" in str(bad.value)


async def _echo_figures(port: int, want: int) -> dict[str, Any]:
    """``GET /metrics`` on one replica, once it counts ``want`` calls of ``peer__echo`` and is shared."""
    async with httpx.AsyncClient(headers=AUTH, timeout=10) as http:
        while True:
            answer = await http.get(f"http://127.0.0.1:{port}/metrics")
            assert answer.status_code == 200, answer.text
            figures = dict(answer.json())
            echo = [t for t in figures["tool_calls"]["by_name"] if t["name"] == "peer__echo"]
            if figures["shared"] and echo and echo[0]["calls"] == want and len(figures["replicas"]) == 2:
                return figures
            await anyio.sleep(0.2)


@pytest.mark.anyio
async def test_metrics_add_up_across_replicas_and_degrade_to_one_when_redis_is_down(
        deployment: dict[str, Any]) -> None:
    by_id = _replicas_by_id(deployment["replicas"])
    ports = [port for _, port in by_id.values()]
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=60) as http, \
            Client(streamable_http_client(deployment["url"], http_client=http), mode="legacy") as client:
        for n in range(12):
            assert not (await client.call_tool("peer__echo", {"text": str(n)})).is_error
        for _ in range(3):
            assert (await client.call_tool("peer__echo", {"text": 5})).is_error
    for port in ports:  # any replica's /metrics: both replicas' calls, added up
        with anyio.fail_after(30):
            figures = await _echo_figures(port, 15)
        [echo] = [t for t in figures["tool_calls"]["by_name"] if t["name"] == "peer__echo"]
        assert echo["errors"] == 3 and 0 < echo["p50_ms"] <= echo["p99_ms"] <= echo["max_ms"], echo
        assert set(figures["replicas"]) == set(by_id)
        own = [t["calls"] for r in figures["replicas"].values() for t in r["tool_calls"]["by_name"]
               if t["name"] == "peer__echo"]
        assert sum(own) == 15, figures["replicas"]
    async with httpx.AsyncClient(headers=AUTH, timeout=10) as admin:
        wrong = await admin.post(f"http://127.0.0.1:{ports[0]}/metrics")
        assert wrong.status_code == 405 and "GET /metrics" in wrong.json()["message"]
    async with httpx.AsyncClient(timeout=10) as stranger:
        assert (await stranger.get(f"http://127.0.0.1:{ports[0]}/metrics")).status_code == 401

    subprocess.run(["redis-cli", "-p", str(deployment["redis"]), "shutdown", "nosave"], check=False,
                   capture_output=True, timeout=10)
    async with httpx.AsyncClient(headers=AUTH, timeout=30) as admin:
        with anyio.fail_after(20):
            alone = (await admin.get(f"http://127.0.0.1:{ports[0]}/metrics")).json()
    assert not alone["shared"] and "Redis" in alone["warning"] and "this replica's only" in alone["warning"]
    assert list(alone["replicas"]) == [alone["replica"]]

    with redis_server(deployment["tmp"], deployment["redis"]):  # back, empty: every replica publishes again
        with anyio.fail_after(30):
            await _echo_figures(ports[0], 15)
