"""Roles on a team deployment: two gateway replicas behind nginx sharing a real Redis, the official
client with each user's own token.

An agent cannot answer the approval its own call waits on (403, and the call does not run); only an
approver lists held calls, and sees their arguments with the secrets redacted — Redis never holds
them raw; only an auditor reads the audit and the figures; a token without the agent role cannot call
tools. Every refusal is a 403 naming the role needed. SIGHUP reloads the users file; a broken one is
refused and the users stay as they were.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import server_stderr
from tests.replica_support import (
    BOB,
    CAROL,
    DAVE,
    TOKEN,
    USERS,
    have,
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


@pytest.fixture
def team(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with team_deployment(tmp_path) as deployment:
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
