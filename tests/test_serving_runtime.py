"""The serving runtime is put together once (``codeward.serving.runtime``), so what one serving command
has, every one has. Two copies had drifted apart before it:

* a plain ``serve --http`` had no audit log, so an approval answered through its ``/approvals``
  endpoint (one waiting on another replica) left no record of who answered;
* ``gateway --http`` bound beyond loopback had no DNS-rebinding protection: a request naming another
  ``Host`` was served.

Real servers as subprocesses, the official client, real Redis for the replicas.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway_support import PEER
from tests.process_support import free_port, start, stop
from tests.replica_support import ALICE, TOKEN, gateway_config, have, redis_server, start_replica

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def _pending(port: int, tool: str) -> dict[str, Any]:
    async with httpx.AsyncClient(headers=AUTH, timeout=10) as http:
        while True:
            listed = (await http.get(f"http://127.0.0.1:{port}/approvals")).json()["approvals"]
            waiting = [a for a in listed if a["tool"] == tool]
            if waiting:
                return dict(waiting[0])
            await anyio.sleep(0.1)


@pytest.mark.anyio
@pytest.mark.services
@pytest.mark.xdist_group("replicas")
@pytest.mark.skipif(have("redis-server") is not None, reason="redis-server is not installed (scripts/test installs it)")
async def test_an_approval_answered_through_a_plain_serve_replica_is_audited_with_who_answered(
        tmp_path: Path) -> None:
    with redis_server(tmp_path) as redis_port:
        config = gateway_config(tmp_path, redis_port)
        gateway, gateway_port = start_replica(config)
        serve_port = free_port()
        serve = start([sys.executable, "-m", "codeward", "serve", "--config", str(config), "--http", "--port",
                       str(serve_port), "--token-env", "REPLICA_TOKEN"], serve_port,
                      {"REPLICA_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}, cwd=config.parent, timeout=60,
                      capture_stderr=True)
        try:
            results: list[Any] = []
            gateway_url = f"http://127.0.0.1:{gateway_port}/mcp"
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=60) as http, \
                    Client(streamable_http_client(gateway_url, http_client=http), mode="legacy") as client, \
                    anyio.create_task_group() as group:
                async def call() -> None:
                    results.append(await client.call_tool("peer__count", {}))

                group.start_soon(call)
                with anyio.fail_after(30):
                    pending = await _pending(serve_port, "peer__count")  # the plain serve sees it too
                async with httpx.AsyncClient(headers=AUTH, timeout=10) as operator:
                    answered = await operator.post(f"http://127.0.0.1:{serve_port}/approvals/{pending['id']}",
                                                   json={"approved": True})
                    assert answered.status_code == 200, answered.text
        finally:
            stop(serve)
            stop(gateway)
    (approved,) = results
    assert not approved.is_error and approved.content[0].text == "1", approved
    records = [json.loads(line) for path in sorted((tmp_path / "audit").glob("audit-*.jsonl"))
               for line in path.read_text(encoding="utf-8").splitlines()]
    answers = [r for r in records if r["event"] == "answer" and r["tool"] == "peer__count"]
    assert len(answers) == 1, records
    (answer,) = answers
    assert answer["user"] == "operator" and answer["caller"] == "alice" and answer["outcome"] == "approved", answer
    assert answer["held_by"] == pending["replica"] and answer["replica"] != pending["replica"], answer
    (serve_log,) = (tmp_path / "audit").glob(f"audit-127.0.0.1-{serve_port}*.jsonl")  # the serve replica's own file
    assert "answer" in serve_log.read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_a_gateway_bound_beyond_loopback_refuses_another_host(tmp_path: Path) -> None:
    """127.0.0.2 is not one of the loopback names: the gateway binds it only with --allow-remote and a token,
    and then accepts only requests naming it — the official client's — never a rebound ``Host``."""
    host, port = "127.0.0.2", free_port()
    config = tmp_path / "codeward.toml"
    config.write_text(f'[mcp]\nnative = "cw"\n\n[mcp.servers.peer]\ncommand = {sys.executable!r}\n'
                      f'args = [{PEER!r}, "stdio"]\n', encoding="utf-8")
    gateway = start([sys.executable, "-m", "codeward", "gateway", "--config", str(config), "--root", str(tmp_path),
                     "--http", "--host", host, "--port", str(port), "--allow-remote", "--token-env", "GW_TOKEN"],
                    port, {"GW_TOKEN": TOKEN}, cwd=tmp_path, timeout=60, capture_stderr=True, host=host)
    url = f"http://{host}:{port}/mcp"
    try:
        async with httpx.AsyncClient(headers=AUTH, timeout=30) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "cw__read_file" in names and "peer__echo" in names
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {**AUTH, "Accept": "application/json, text/event-stream"}
        rebound = httpx.post(url, json=body, headers={**headers, "Host": f"evil.example:{port}"}, timeout=10)
        assert rebound.status_code == 421, rebound.text
        foreign = httpx.post(url, json=body, headers={**headers, "Origin": "http://evil.example"}, timeout=10)
        assert foreign.status_code == 403, foreign.text
    finally:
        stop(gateway)


@pytest.mark.anyio
async def test_resource_reads_and_prompt_gets_are_audited_measured_and_shown_in_the_console(tmp_path: Path) -> None:
    """They pass the chain as tool calls do: the audit records each with its user, ``GET /metrics`` counts
    them, the control plane lists them; a read refused by the gate is an error there too."""
    import hashlib

    from tests.process_support import codeward_http

    bob = "bob-own-token"
    project, home, console = tmp_path / "project", tmp_path / "home", free_port()
    (project / ".ai" / "directives").mkdir(parents=True)
    (project / "notes.txt").write_text("hello\n", encoding="utf-8")
    (project / ".ai" / "directives" / "review.md").write_text("---\ndescription: Review a file\n---\nReview it.\n",
                                                             encoding="utf-8")
    (tmp_path / "users.toml").write_text(f'[users.bob]\ntoken_sha256 = "{hashlib.sha256(bob.encode()).hexdigest()}"\n',
                                         encoding="utf-8")
    (project / "codeward.toml").write_text(f'[audit]\nusers_file = "{tmp_path / "users.toml"}"\n'
                                           f'log_dir = "{tmp_path / "audit"}"\n', encoding="utf-8")
    with codeward_http(str(project), "--token-env", "SERVER_TOKEN", "--control", "--control-port", str(console),
                       "--approvals", "none", env={"SERVER_TOKEN": TOKEN, "CODEWARD_HOME": str(home)},
                       cwd=project) as url:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {bob}"}, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            read = await client.read_resource((project / "notes.txt").resolve().as_uri())
            assert read.contents[0].text == "hello\n"  # type: ignore[union-attr]
            prompt = await client.get_prompt("review", {})
            assert "Review it." in prompt.messages[0].content.text  # type: ignore[union-attr]
            with pytest.raises(Exception, match="is outside the workspace"):
                await client.read_resource("file:///etc/passwd")
        figures = httpx.get(url.removesuffix("/mcp") + "/metrics", headers=AUTH, timeout=10).json()
        counted = {row["name"]: row for row in figures["tool_calls"]["by_name"]}
        assert counted["resources/read"]["calls"] == 2 and counted["resources/read"]["errors"] == 1, counted
        assert counted["prompts/get"]["calls"] == 1, counted
        token = (home / "control" / f"{console}.token").read_text().strip()
        calls = httpx.get(f"http://127.0.0.1:{console}/api/calls", headers={"Authorization": f"Bearer {token}"},
                          timeout=10).json()["calls"]
        shown = [(c["name"], c["source"], c["status"]) for c in calls]
        assert shown == [("resources/read", "resources", "ok"), ("prompts/get", "prompts", "ok"),
                         ("resources/read", "resources", "error")], shown
    records = [json.loads(line) for path in (tmp_path / "audit").glob("audit-*.jsonl")
               for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(r["event"], r["tool"], r["user"], r["outcome"]) for r in records] == [
        ("started", "resources/read", "bob", "running"), ("read", "resources/read", "bob", "ok"),
        ("started", "prompts/get", "bob", "running"), ("prompt", "prompts/get", "bob", "ok"),
        ("started", "resources/read", "bob", "running"), ("read", "resources/read", "bob", "error")], records
