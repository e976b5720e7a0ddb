"""A gateway served with the control plane: its upstream servers and calls are visible over the
Hook API, and calls needing approval are decided in the console when the MCP client cannot ask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.control_support import ANNOUNCE, Lines, client_from
from tests.gateway_support import PEER
from tests.process_support import free_port, wait_for_port

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("gateway")]

SERVE = """
import sys
from codeward.apps.control.plane import ControlOptions
from codeward.apps.cli.gateway import run_gateway_cli
sys.exit(run_gateway_cli(sys.argv[1], transport="http", port=int(sys.argv[2]),
                         control=ControlOptions(serve=True, port=0, approval_timeout=30)))
"""


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_gateway_calls_servers_and_console_approvals(tmp_path: Path) -> None:
    config = tmp_path / "codeward.toml"
    config.write_text(f"""
[mcp]
auto_approve = ["peer__echo"]

[mcp.servers.peer]
command = {json.dumps(sys.executable)}
args = [{json.dumps(PEER)}, "stdio"]
""")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(config), str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "CODEWARD_HOME": str(tmp_path / "h")},
                            start_new_session=True)
    stderr = Lines(proc.stderr)
    try:
        control = client_from(stderr.wait_for(ANNOUNCE))
        wait_for_port(port, proc)  # type: ignore[arg-type]  # a text-mode Popen: only poll() is used
        assert control.wait_for_value("servers.0.state", "ready", timeout=10)
        [peer] = control.get_servers()
        assert peer["alias"] == "peer" and peer["tools"] >= 5 and peer["transport"] == "stdio"
        assert control.get_project()["label"] == "gateway"

        async with Client(f"http://127.0.0.1:{port}/mcp") as client:  # no elicitation support
            assert _text(await client.call_tool("peer__echo", {"text": "watched"})) == "watched"
            echo = next(c for c in control.get_calls() if c["name"] == "peer__echo")
            assert echo["status"] == "ok" and echo["source"] == "peer" and echo["arguments"] == {"text": "watched"}

            async def approve_in_console() -> None:
                event = await anyio.to_thread.run_sync(
                    lambda: control.wait_for_event("ask_received", timeout=20))
                assert event is not None and event["data"]["tool"] == "peer__count"
                assert await anyio.to_thread.run_sync(control.approve, event["request_id"])

            async with anyio.create_task_group() as group:
                group.start_soon(approve_in_console)
                approved = await client.call_tool("peer__count", {})
            assert not approved.is_error and _text(approved) == "1"

            async def deny_in_console() -> None:
                event = await anyio.to_thread.run_sync(
                    lambda: control.wait_for_event("ask_received", timeout=20))
                assert event is not None
                assert await anyio.to_thread.run_sync(control.deny, event["request_id"])

            async with anyio.create_task_group() as group:
                group.start_soon(deny_in_console)
                denied = await client.call_tool("peer__count", {})
            assert denied.is_error and "not approved" in _text(denied)
        statuses = {c["name"] + ":" + c["status"] for c in control.get_calls()}
        assert {"peer__echo:ok", "peer__count:ok", "peer__count:denied"} <= statuses
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = stderr.text()
    assert "peer__count: approved in the console" in text and "peer__count: denied in the console" in text
    [logs] = list((tmp_path / "h" / "logs").iterdir())
    logged = [json.loads(line)["tool"] for line in (logs / "toolcalls.log").read_text().splitlines()]
    assert logged == ["peer__echo", "peer__count", "peer__count"]
