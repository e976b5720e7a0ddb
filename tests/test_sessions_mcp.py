"""Python sessions and the warm pool through real MCP sessions: state kept between a client's
calls, runs warm after the first, and one client's session out of another client's reach."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.process_support import codeward_http

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("sandbox")]
TOKEN = "sessions-test-token"


async def _run(client: Client, code: str, session_id: str | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"language": "python", "code": code}
    if session_id is not None:
        arguments["session_id"] = session_id
    result = await client.call_tool("coding_execute_code", arguments)
    assert result.structured_content is not None, result.content
    return result.structured_content


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_session_keeps_its_state_and_runs_are_warm_over_stdio(root: Path, mode: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        first = await _run(client, "x = 42", "s")
        assert first["status"] == "success" and first["session_id"] == "s"
        second = await _run(client, "print(x)", "s")
        assert second["stdout"] == "42\n" and second["session_id"] == "s"
        await _run(client, "print('cold')")  # starts the pool
        warm = [await _run(client, "print('hello')") for _ in range(3)]
    assert all(run["stdout"] == "hello\n" for run in warm)
    assert any(run["warm"] for run in warm), "runs after the first come from the warm pool"


async def test_two_clients_of_one_http_server_cannot_reach_each_others_sessions(root: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    with codeward_http(str(root), "--token-env", "CW_SESSIONS_TOKEN", env={"CW_SESSIONS_TOKEN": TOKEN}) as url:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http_a, \
                httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http_b, \
                Client(streamable_http_client(url, http_client=http_a), mode="legacy") as alice, \
                Client(streamable_http_client(url, http_client=http_b), mode="legacy") as bob:
            assert (await _run(alice, "secret = 'alice'", "s"))["status"] == "success"
            intruder = await _run(bob, "print(secret)", "s")  # bob's own "s": a fresh interpreter
            assert intruder["status"] == "error" and "NameError" in intruder["stderr"]
            await _run(bob, "secret = 'bob'", "s")
            assert (await _run(alice, "print(secret)", "s"))["stdout"] == "alice\n"
            assert (await _run(bob, "print(secret)", "s"))["stdout"] == "bob\n"


async def test_a_2026_client_over_http_continues_its_session_by_handle(root: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    with codeward_http(str(root), "--token-env", "CW_SESSIONS_TOKEN", env={"CW_SESSIONS_TOKEN": TOKEN}) as url:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http_a, \
                httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http_b, \
                Client(streamable_http_client(url, http_client=http_a)) as alice, \
                Client(streamable_http_client(url, http_client=http_b)) as bob:
            assert alice.protocol_version == "2026-07-28"
            started = await _run(alice, "secret = 'alice'", "s")
            handle = started["session_id"]
            assert handle != "s" and handle.startswith("s.")
            assert any(handle in note for note in started["notes"])
            assert (await _run(alice, "print(secret)", handle))["stdout"] == "alice\n"
            guess = await _run(bob, "print(secret)", "s")  # the name alone reaches nothing of alice's
            assert "NameError" in guess["stderr"] and guess["session_id"] != handle
            assert (await _run(alice, "print(secret)", handle))["stdout"] == "alice\n"
