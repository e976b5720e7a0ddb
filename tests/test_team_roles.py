"""Roles on a team deployment: two gateway replicas behind nginx sharing a real Redis, the official
client with each user's own token.

An agent cannot answer the approval its own call waits on (403, and the call does not run); only an
approver lists held calls, and sees their arguments with the secrets redacted — Redis never holds
them raw; only an auditor reads the audit and the figures; a token without the agent role cannot call
tools. Every refusal is a 403 naming the role needed. SIGHUP reloads the users file; a broken one is
refused and the users stay as they were.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from tests.process_support import server_stderr
from tests.replica_support import (
    BOB,
    CAROL,
    DAVE,
    TOKEN,
    USERS,
    have,
    kill,
    redis_server,
    team_deployment,
    users_file,
)

missing = have("redis-server", "nginx", "redis-cli")
pytestmark = [
    pytest.mark.skipif(missing is not None, reason=f"{missing} is not installed (scripts/test installs it)"),
    pytest.mark.xdist_group("replicas"),
    pytest.mark.services,
]

SECRET = "s3cr3t-value-4f9a2b7c"
ALICE = USERS["alice"][0]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One deployment for the module's tests (each costs seconds to start): the roles first, then the
    faults (a replica killed, Redis restarted), which end it."""
    with team_deployment(tmp_path_factory.mktemp("team")) as deployment:
        yield deployment


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _held(ports: list[int], tool: str) -> dict[str, Any]:
    """The approval ``tool``'s call waits on, as an approver (carol) lists it on either replica."""
    async with httpx.AsyncClient(headers=_as(CAROL), timeout=10) as http:
        with anyio.fail_after(30):
            while True:
                for port in ports:
                    listed = (await http.get(f"http://127.0.0.1:{port}/approvals")).json()["approvals"]
                    if waiting := [a for a in listed if a["tool"] == tool]:
                        return dict(waiting[0])
                await anyio.sleep(0.1)


def _redis_text(port: int) -> str:
    """Every string value codeward keeps in Redis, as one text (what an operator with redis-cli sees)."""
    keys = subprocess.run(["redis-cli", "-p", str(port), "--scan", "--pattern", "codeward:approval*"],
                          capture_output=True, text=True, timeout=10, check=True).stdout.split()
    values = [subprocess.run(["redis-cli", "-p", str(port), "get", key], capture_output=True, text=True,
                             timeout=10, check=False).stdout for key in keys]
    return "\n".join(values)


@pytest.mark.anyio
async def test_roles_self_approval_redaction_and_reload(team: dict[str, Any]) -> None:
    ports = team["ports"]
    results: list[Any] = []
    async with httpx.AsyncClient(headers=_as(BOB), timeout=60) as http, \
            Client(streamable_http_client(team["url"], http_client=http), mode="legacy") as bob, \
            httpx.AsyncClient(timeout=10) as web:
        # Bob's call waits for a person; its arguments carry a secret.
        async with anyio.create_task_group() as group:
            async def fail() -> None:
                results.append(await bob.call_tool("peer__fail", {
                    "reason": f"curl -H 'Authorization: Bearer {SECRET}' && export API_TOKEN={SECRET}"}))

            group.start_soon(fail)
            held = await _held(ports, "peer__fail")
            assert held["user"] == "bob" and SECRET not in json.dumps(held), held
            assert "[redacted]" in held["arguments"]["reason"] and "curl -H" in held["arguments"]["reason"]
            assert len(held["arguments_sha256"]) == 64
            assert SECRET not in _redis_text(team["redis"]), "the raw arguments are not kept in Redis"
            for token, who in ((ALICE, "alice"), (DAVE, "dave")):  # neither may list held calls
                refused = await web.get(f"http://127.0.0.1:{ports[0]}/approvals", headers=_as(token))
                assert refused.status_code == 403, refused.text
                message = refused.json()["message"]
                assert "approver role" in message and repr(who) in message and "roles = [" in message, message
            denied = await web.post(f"http://127.0.0.1:{ports[1]}/approvals/{held['id']}", headers=_as(CAROL),
                                    json={"approved": False})
            assert denied.status_code == 200, denied.text
        assert results[0].is_error and "not approved" in results[0].content[0].text

        # Bob (an approver too) cannot release his own call, on either replica; carol can.
        for answer in (True, False):
            async with anyio.create_task_group() as group:
                async def count() -> None:
                    results.append(await bob.call_tool("peer__count", {}))

                group.start_soon(count)
                held = await _held(ports, "peer__count")
                for port in ports:
                    own = await web.post(f"http://127.0.0.1:{port}/approvals/{held['id']}", headers=_as(BOB),
                                         json={"approved": True})
                    assert own.status_code == 403, own.text
                    assert "their own call" in own.json()["message"] and "approver" in own.json()["message"]
                assert (await _held(ports, "peer__count"))["id"] == held["id"], "still waiting after bob's try"
                decided = await web.post(f"http://127.0.0.1:{ports[0]}/approvals/{held['id']}", headers=_as(CAROL),
                                         json={"approved": not answer})
                assert decided.status_code == 200, decided.text
        refused_own, approved = results[1:]
        assert refused_own.is_error and "not approved" in refused_own.content[0].text
        assert not approved.is_error and approved.content[0].text == "1", "the call bob tried to release never ran"

        # The audit and the figures: the auditor reads them, nobody else but the operator.
        for path in ("/audit?count=50", "/metrics"):
            for token in (ALICE, BOB, CAROL):
                refused = await web.get(f"http://127.0.0.1:{ports[1]}{path}", headers=_as(token))
                assert refused.status_code == 403 and "auditor role" in refused.json()["message"], refused.text
            assert (await web.get(f"http://127.0.0.1:{ports[1]}{path}", headers=_as(DAVE))).status_code == 200
        scrape = {"Accept": "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1"}
        for token in (ALICE, BOB, CAROL):  # what Prometheus sends, with an agent's or an approver's token
            refused = await web.get(f"http://127.0.0.1:{ports[0]}/metrics", headers={**_as(token), **scrape})
            assert refused.status_code == 403 and "auditor role" in refused.json()["message"], refused.text
        scraped = {}
        for port in ports:
            answer = await web.get(f"http://127.0.0.1:{port}/metrics", headers={**_as(DAVE), **scrape})
            assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain"), answer.text
            scraped[port] = {(sample.name, sample.labels.get("tool"), sample.labels.get("le")): sample.value
                             for family in text_string_to_metric_families(answer.text) for sample in family.samples}
        count_calls = sum(figures.get(("codeward_tool_calls_total", "peer__count", None), 0)
                          for figures in scraped.values())
        assert count_calls == 2, scraped  # each replica exposes its own calls: summed, bob's two count calls
        for figures in scraped.values():
            for (name, tool, _), value in figures.items():
                if name == "codeward_tool_call_seconds_count":
                    assert figures[("codeward_tool_call_seconds_bucket", tool, "+Inf")] == value
                    assert figures[("codeward_tool_calls_total", tool, None)] == value
            assert figures[("codeward_draining", None, None)] == 0
        records = (await web.get(f"http://127.0.0.1:{ports[0]}/audit?count=100", headers=_as(DAVE))).json()["records"]
        answers = [(r["user"], r["caller"], r["outcome"]) for r in records if r["event"] == "answer"]
        assert sorted(answers) == sorted([("carol", "bob", "denied")] * 2 + [("carol", "bob", "approved")]), answers
        fail_record = next(r for r in records if r["event"] == "answer" and r["tool"] == "peer__fail")
        call_record = next(r for r in records if r["event"] == "call" and r["tool"] == "peer__fail")
        assert fail_record["arguments_sha256"] == call_record["arguments_sha256"], "the answer names the raw call"

    # No agent role, no tools: carol's token opens no MCP session.
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    refused = httpx.post(team["url"], json=initialize, headers={**_as(CAROL), "Accept": "application/json, "
                                                                "text/event-stream"}, timeout=10)
    assert refused.status_code == 403 and "agent role" in refused.json()["message"], refused.text

    # SIGHUP: the users file is read again — a new user is in, a broken file changes nothing.
    erin = "erin-own-token"
    users_file(team["tmp"] / "users.toml", {**USERS, "erin": (erin, ["auditor"])})
    for proc, _ in team["replicas"]:
        proc.send_signal(signal.SIGHUP)
    audit = f"http://127.0.0.1:{ports[0]}/audit?count=1"
    with anyio.fail_after(20):
        while httpx.get(audit, headers=_as(erin), timeout=10).status_code != 200:
            await anyio.sleep(0.1)
    (team["tmp"] / "users.toml").write_text("[users.erin]\nroles = ['root']\n", encoding="utf-8")
    team["replicas"][0][0].send_signal(signal.SIGHUP)
    with anyio.fail_after(20):
        while "not reloaded" not in server_stderr(team["replicas"][0][0]):
            await anyio.sleep(0.1)
    assert "token_sha256" in server_stderr(team["replicas"][0][0])
    assert httpx.get(audit, headers=_as(erin), timeout=10).status_code == 200, "erin kept her place"
    assert httpx.get(audit, headers=_as(TOKEN), timeout=10).status_code == 200, "the operator holds every role"
    assert all(proc.poll() is None for proc, _ in team["replicas"]), "SIGHUP is not a silent death"
    users_file(team["tmp"] / "users.toml")  # as it was: the faults below start nothing that reads it


def _hash(arguments: dict[str, Any]) -> str:
    """The audit's ``arguments_sha256``: SHA-256 of the arguments as canonical JSON."""
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _audit_file(team: dict[str, Any], port: int) -> list[dict[str, Any]]:
    """Every record of one replica's own audit file (``[audit] log_dir``)."""
    path = team["tmp"] / "audit" / f"audit-127.0.0.1-{port}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def _stream(port: int) -> list[dict[str, Any]]:
    """The shared audit stream, as the auditor reads it on one replica."""
    async with httpx.AsyncClient(headers=_as(DAVE), timeout=10) as http:
        answer = await http.get(f"http://127.0.0.1:{port}/audit?count=10000")
        assert answer.status_code == 200, answer.text
        return list(answer.json()["records"])


@pytest.mark.anyio
async def test_a_ten_megabyte_write_passes_the_balancer_byte_for_byte(team: dict[str, Any]) -> None:
    """A large write (a generated file, a vendored bundle) is one POST of more than 10 MB through nginx
    (``deploy/nginx.conf`` buffers bodies up to the 48 MiB a replica accepts; nginx's own default is 1 MB)."""
    target = team["tmp"] / "large.txt"
    line = "0123456789abcdef" * 7 + "\n"  # 113 characters a line, none JSON escapes
    text = line * (10 * 1024 * 1024 // len(line) + 1)
    async with httpx.AsyncClient(headers=_as(BOB), timeout=120) as http, \
            Client(streamable_http_client(team["url"], http_client=http), mode="legacy") as bob:
        result = await bob.call_tool("peer__write_file", {"path": str(target), "text": text})
    assert not result.is_error, result.content
    assert len(text) > 10 * 1024 * 1024
    assert hashlib.sha256(target.read_bytes()).hexdigest() == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.anyio
async def test_a_killed_replicas_approval_and_calls_and_the_audit_through_a_redis_restart(
        team: dict[str, Any]) -> None:
    """kill -9 of the replica holding an approval and running writes: its approval disappears from every
    list and answering it says it is gone (410, nothing ran); every file written has a ``started`` record
    (with the request id, user and replica) on disk and in the shared stream, and each finished call's
    record matches its start. Then Redis is stopped while a call runs on the other replica: the call's
    ``finished`` record is kept and sent — once — when Redis is back."""
    (_, port_a), (b, port_b) = team["replicas"]
    writes = team["tmp"] / "writes"
    writes.mkdir()
    counted: list[Any] = []
    written = {"ok": 0}

    async def held_call() -> None:
        with contextlib.suppress(Exception):  # its replica dies under it (the session's close fails too)
            async with httpx.AsyncClient(headers=_as(BOB), timeout=60) as http, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port_b}/mcp", http_client=http),
                           mode="legacy") as client:
                counted.append(await client.call_tool("peer__count", {}))

    async def writer(index: int) -> None:
        with contextlib.suppress(Exception):  # until the replica dies mid-call
            async with httpx.AsyncClient(headers=_as(ALICE), timeout=60) as http, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port_b}/mcp", http_client=http),
                           mode="legacy") as client:
                for number in range(10_000):
                    path = str(writes / f"{index}-{number}.txt")
                    await client.call_tool("peer__write_file", {"path": path, "text": f"{index} {number}"})
                    written["ok"] += 1

    async with anyio.create_task_group() as group, httpx.AsyncClient(headers=_as(CAROL), timeout=10) as carol:
        group.start_soon(held_call)
        held = await _held([port_b], "peer__count")
        for index in range(3):
            group.start_soon(writer, index)
        with anyio.fail_after(60):
            while written["ok"] < 30:
                await anyio.sleep(0.05)
        kill(b)  # SIGKILL to the replica and its upstream: a crash
        # The dead replica's approval: gone from the list within two leases ([state] lease = 2 s here): its
        # heartbeat expires, then stays missing for a further lease.
        with anyio.fail_after(20):
            while any(a["id"] == held["id"] for a in (await carol.get(f"http://127.0.0.1:{port_a}/approvals"))
                      .json()["approvals"]):
                await anyio.sleep(0.2)
        gone = await carol.post(f"http://127.0.0.1:{port_a}/approvals/{held['id']}", json={"approved": True})
        assert gone.status_code == 410, gone.text
        message = gone.json()["message"]
        assert "gone" in message and "died" in message and "did not run" in message, message
        group.cancel_scope.cancel()
    assert not counted or counted[0].is_error, "the call of a dead replica did not run"

    files = sorted(writes.iterdir())
    records = _audit_file(team, port_b)
    stream = await _stream(port_a)
    written = {_hash({"path": str(f), "text": f.read_text(encoding="utf-8")}): f.name for f in files}
    for source, where in ((records, "the replica's audit file"), (stream, "the shared stream")):
        started = {r["arguments_sha256"]: r for r in source
                   if r["event"] == "started" and r["tool"] == "peer__write_file"}
        unaudited = [name for digest, name in written.items() if digest not in started]
        assert not unaudited, f"files written without a started record in {where}: {unaudited}"
        ours = [started[digest] for digest in written]  # (the module's other tests write files too)
        assert all(r["user"] == "alice" and r["replica"] == ours[0]["replica"] and r["request_id"]
                   and r["session"] for r in ours), ours[:3]
    mine = [r for r in records if r["tool"] == "peer__write_file" and r["user"] == "alice"]
    finished = {r["call_id"]: r for r in mine if r["event"] == "call"}
    starts = {r["call_id"]: r for r in mine if r["event"] == "started"}
    assert set(finished) <= set(starts) and all(
        starts[i]["request_id"] == f["request_id"] and starts[i]["session"] == f["session"]
        for i, f in finished.items())
    assert not any(r["event"] == "answer" and r.get("approval") == held["id"] for r in stream)
    print(f"kill -9 mid-write: {len(files)} files written, {len(starts)} started records, {len(finished)} finished, "
          f"{len(starts) - len(finished)} started and never finished")

    # Redis stops while a call runs on the surviving replica; the call's end is audited once Redis is back.
    async with httpx.AsyncClient(headers=_as(ALICE), timeout=60) as http, \
            Client(streamable_http_client(f"http://127.0.0.1:{port_a}/mcp", http_client=http),
                   mode="legacy") as client:
        await client.list_tools()  # the client checks results against the listing: not a request made with Redis down
        async with anyio.create_task_group() as group:
            done: list[Any] = []

            async def long_call() -> None:
                done.append(await client.call_tool("peer__steps", {"count": 12, "delay": 0.25}))

            group.start_soon(long_call)
            with anyio.fail_after(20):
                while not any(r["event"] == "started" and r["tool"] == "peer__steps"
                              for r in _audit_file(team, port_a)):
                    await anyio.sleep(0.05)
            subprocess.run(["redis-cli", "-p", str(team["redis"]), "shutdown", "nosave"], timeout=10, check=False)
        assert not done[0].is_error, done
    start = next(r for r in _audit_file(team, port_a) if r["event"] == "started" and r["tool"] == "peer__steps")
    end = next(r for r in _audit_file(team, port_a) if r["event"] == "call" and r.get("call_id") == start["call_id"])
    assert "audit record not shared yet" in server_stderr(team["replicas"][0][0])
    with redis_server(team["tmp"], team["redis"]):
        with anyio.fail_after(30):
            while not any(r["id"] == end["id"] for r in await _stream_when_up(port_a)):
                await anyio.sleep(0.2)
        await anyio.sleep(2.5)  # more resends would come within this (the queue is retried every second)
        stream = await _stream(port_a)
        assert [r["id"] for r in stream].count(end["id"]) == 1, "sent once"
        assert len({r["id"] for r in stream}) == len(stream), "no record twice"
        assert end["outcome"] == "ok" and end["request_id"] == start["request_id"]


async def _stream_when_up(port: int) -> list[dict[str, Any]]:
    try:
        return await _stream(port)
    except AssertionError:  # 503 while the replica finds Redis again
        return []
