"""Per-user tokens and the audit log of ``codeward serve --http`` (one process, no Redis): the
official client with a user's own token; every call is recorded with that user, a hash of the
arguments and the outcome; unknown tokens are refused; a broken users file stops the start with
its problem."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import codeward_http

BOB = "bob-secret-token"


def _project(tmp_path: Path, users: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("hello\n", encoding="utf-8")
    (tmp_path / "users.toml").write_text(users, encoding="utf-8")
    (project / "codeward.toml").write_text(f'[audit]\nusers_file = "{tmp_path / "users.toml"}"\n'
                                           f'log_dir = "{tmp_path / "audit"}"\n', encoding="utf-8")
    return project


@pytest.mark.anyio
async def test_calls_are_audited_with_the_users_own_token(tmp_path: Path) -> None:
    project = _project(tmp_path, f'[users.bob]\ntoken_sha256 = "{hashlib.sha256(BOB.encode()).hexdigest()}"\n')
    with codeward_http(str(project), "--token-env", "SERVER_TOKEN", env={"SERVER_TOKEN": "operator-token"},
                       cwd=project) as url:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            assert not (await client.call_tool("read_file", {"path": "notes.txt"})).is_error
            assert (await client.call_tool("read_file", {"path": "missing.txt"})).is_error
        refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                             headers={"Authorization": "Bearer guessed"}, timeout=10)
        assert refused.status_code == 401 and "users file" in refused.json()["message"]
    (log,) = (tmp_path / "audit").glob("audit-127.0.0.1-*.jsonl")
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    reads = [r for r in records if r["tool"] == "read_file" and r["event"] == "call"]
    assert [(r["user"], r["outcome"]) for r in reads] == [("bob", "ok"), ("bob", "error")]
    starts = [r for r in records if r["tool"] == "read_file" and r["event"] == "started"]
    assert [(r["call_id"], r["request_id"]) for r in starts] == [(r["call_id"], r["request_id"]) for r in reads]
    expected = hashlib.sha256(json.dumps({"path": "notes.txt"}, separators=(",", ":")).encode()).hexdigest()
    assert reads[0]["arguments_sha256"] == expected and "notes.txt" not in log.read_text(encoding="utf-8")
    assert log.stat().st_mode & 0o777 == 0o600


def _reads(log: Path) -> list[str]:
    """The outcomes of the ``read_file`` records in one audit file."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [r["outcome"] for r in records if r["tool"] == "read_file" and r["event"] == "call"]


@pytest.mark.anyio
async def test_a_rotated_or_deleted_audit_log_is_followed_with_a_new_private_file(tmp_path: Path) -> None:
    """The log stays open between records; moved away (logrotate) or deleted while the server runs,
    the next record goes to a new file at the path, 0600, and the moved file keeps what it had."""
    project = _project(tmp_path, f'[users.bob]\ntoken_sha256 = "{hashlib.sha256(BOB.encode()).hexdigest()}"\n')
    with codeward_http(str(project), "--token-env", "SERVER_TOKEN", env={"SERVER_TOKEN": "operator-token"},
                       cwd=project) as url:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            assert not (await client.call_tool("read_file", {"path": "notes.txt"})).is_error
            (log,) = (tmp_path / "audit").glob("audit-127.0.0.1-*.jsonl")
            rotated = log.with_name(log.name + ".1")
            log.rename(rotated)
            assert (await client.call_tool("read_file", {"path": "missing.txt"})).is_error
            assert _reads(rotated) == ["ok"] and _reads(log) == ["error"]
            assert log.stat().st_mode & 0o777 == 0o600
            log.unlink()
            assert not (await client.call_tool("read_file", {"path": "notes.txt"})).is_error
            assert not (await client.call_tool("read_file", {"path": "notes.txt"})).is_error
    assert _reads(log) == ["ok", "ok"] and _reads(rotated) == ["ok"]
    assert log.stat().st_mode & 0o777 == 0o600


CAROL = "carol-approves-token"


@pytest.mark.anyio
async def test_serve_control_audits_calls_and_console_decisions_with_the_user(tmp_path: Path) -> None:
    """``serve --http --control``: the users file holds (unknown tokens 401), bob's write waits for the
    console; bob (an agent) cannot sign in to the console, carol (an approver) signs in with her own token
    and her yes lets it run; the audit has bob's call — started, approved by carol, finished."""
    import anyio

    from tests.process_support import free_port

    project = _project(tmp_path, f'[users.bob]\ntoken_sha256 = "{hashlib.sha256(BOB.encode()).hexdigest()}"\n'
                       f'[users.carol]\ntoken_sha256 = "{hashlib.sha256(CAROL.encode()).hexdigest()}"\n'
                       'roles = ["approver"]\n')
    console, home = free_port(), tmp_path / "home"
    with codeward_http(str(project), "--token-env", "SERVER_TOKEN", "--control", "--control-port", str(console),
                       env={"SERVER_TOKEN": "operator-token", "CODEWARD_HOME": str(home)}, cwd=project) as url:
        refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                             headers={"Authorization": "Bearer guessed"}, timeout=10)
        assert refused.status_code == 401 and "users file" in refused.json()["message"]
        token = (home / "control" / f"{console}.token").read_text().strip()
        results = []
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{console}", timeout=10,
                                  headers={"Authorization": f"Bearer {token}"}) as hooks, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{console}", timeout=10,
                                  headers={"Authorization": f"Bearer {CAROL}"}) as carol, \
                anyio.create_task_group() as group:
            async def write() -> None:
                results.append(await client.call_tool("write_file", {"path": "out.txt", "content": "yes"}))

            async def write_again() -> None:
                results.append(await client.call_tool("write_file", {"path": "again.txt", "content": "yes"}))

            group.start_soon(write)
            with anyio.fail_after(60):
                while not (asks := (await hooks.get("/api/asks")).json()["asks"]):
                    await anyio.sleep(0.1)
            assert (await hooks.get("/api/replicas/approvals")).json() == {"replica": None, "approvals": []}
            # bob's own token does not open the console: not by header, not by the sign-in URL
            as_bob = {"Authorization": f"Bearer {BOB}"}
            for path in ("/api/asks", "/api/calls", "/api/replicas/approvals"):
                refused = await hooks.get(path, headers=as_bob)
                assert refused.status_code == 403 and "approver role" in refused.json()["message"], refused.text
            entry = await hooks.get(f"/?token={BOB}", headers={"Authorization": ""})
            assert entry.status_code == 403 and "set-cookie" not in entry.headers, entry.text
            assert (await hooks.post("/api/ask/respond", headers=as_bob, json={
                "request_id": asks[0]["request_id"], "response": {"approved": True}})).status_code == 403
            signed_in = await carol.get(f"/?token={CAROL}", headers={"Authorization": ""})
            assert signed_in.status_code == 303 and "set-cookie" in signed_in.headers, signed_in.text
            assert [a["data"]["user"] for a in (await carol.get("/api/asks")).json()["asks"]] == ["bob"]
            answered = await carol.post("/api/ask/respond", json={"request_id": asks[0]["request_id"],
                                                                  "response": {"approved": True}})
            assert answered.status_code == 200, answered.text
            with anyio.fail_after(60):
                while not results:
                    await anyio.sleep(0.1)
            # the seed's GUI surface: carol's click on the Approve button is hers in the audit too
            group.start_soon(write_again)
            with anyio.fail_after(60):
                while not (asks := (await carol.get("/api/asks")).json()["asks"]):
                    await anyio.sleep(0.1)
            clicked = await carol.post("/api/gui", json={"action": "click", "item": "btn_approve_tool",
                                                         "user_data": asks[0]["request_id"]})
            assert clicked.status_code == 200, clicked.text
    assert not results[0].is_error and (project / "out.txt").read_text() == "yes"
    assert not results[1].is_error and (project / "again.txt").read_text() == "yes"
    (log,) = (tmp_path / "audit").glob("audit-127.0.0.1-*.jsonl")
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    written = [r for r in records if r["tool"] == "write_file"]
    assert [(r["event"], r["user"], r["outcome"]) for r in written] == [
        ("started", "bob", "running"), ("approval", "bob", "approved"), ("call", "bob", "ok")] * 2, records
    assert written[1]["by"] == "carol" and written[4]["by"] == "carol", written
    assert written[0]["call_id"] == written[2]["call_id"] and written[0]["request_id"] == written[2]["request_id"]


@pytest.mark.parametrize("control", [[], ["--control", "--control-port", "0"]], ids=["plain", "control"])
def test_a_bad_users_file_stops_the_start_with_its_problem(tmp_path: Path, control: list[str]) -> None:
    project = _project(tmp_path, '[users.bob]\ntoken_sha256 = "not-a-hash"\n')
    done = subprocess.run([sys.executable, "-m", "codeward", "serve", str(project), "--http", "--port", "1",
                           "--no-auth", *control], cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "[users.bob] needs token_sha256 = 64 lowercase hex digits" in done.stderr, done.stderr
    assert not (tmp_path / "audit").exists()


@pytest.mark.anyio
async def test_json_log_lines_and_the_access_log_carry_the_request_id_the_audit_has(tmp_path: Path) -> None:
    """``[server] log_format = "json"`` and ``access_log = true``: every log line on stderr is one JSON
    object with a timestamp, level, logger and replica; each HTTP request has an access line (status,
    user, session, the JSON-RPC method and id) — the tools/call's id is the one its audit records carry —
    refused and probe requests included."""
    from tests.process_support import background, free_port, server_stderr

    project = _project(tmp_path, f'[users.bob]\ntoken_sha256 = "{hashlib.sha256(BOB.encode()).hexdigest()}"\n')
    with (project / "codeward.toml").open("a", encoding="utf-8") as config:
        config.write('[server]\nlog_format = "json"\naccess_log = true\n')
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with background([sys.executable, "-m", "codeward", "serve", str(project), "--http", "--port", str(port),
                     "--token-env", "SERVER_TOKEN"], port, {"SERVER_TOKEN": "operator-token"}, cwd=project,
                    timeout=60, capture_stderr=True) as proc:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            assert not (await client.call_tool("read_file", {"path": "notes.txt"})).is_error
        assert httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          headers={"Authorization": "Bearer guessed"}, timeout=10).status_code == 401
        assert httpx.get(url.removesuffix("/mcp") + "/healthz", timeout=10).status_code == 200
        stderr = server_stderr(proc, limit=1_000_000)
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert all({"time", "level", "logger", "message", "replica"} <= set(line) for line in lines), lines
    access = [line for line in lines if line["logger"] == "codeward.access"]
    (call,) = [line for line in access if line.get("rpc") == "tools/call"]
    assert call["status"] == 200 and call["user"] == "bob" and call["method"] == "POST" and call["session"], call
    assert call["time"].endswith("Z") and call["ms"] >= 0 and call["bytes"] > 0
    assert [(line["path"], line["user"]) for line in access if line["status"] == 401] == [("/mcp", "-")], access
    assert any(line["path"] == "/healthz" and line["status"] == 200 for line in access), access
    (log,) = (tmp_path / "audit").glob("audit-127.0.0.1-*.jsonl")
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert {r["request_id"] for r in records if r["tool"] == "read_file"} == {call["request_id"]}, records
    assert {r["session"] for r in records if r["tool"] == "read_file"} == {call["session"]}
