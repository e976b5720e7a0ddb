"""The gateway's command-line entry points, and the gateway served to a real MCP client."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.apps.cli.call import call_gateway_tool as call_cli
from codeward.apps.cli.servers import list_servers_cli
from codeward.config import ConfigError
from tests.conftest import snapshot
from tests.gateway_support import PEER
from tests.process_support import background, free_port, wait_for_port

pytestmark = pytest.mark.xdist_group("gateway")

SERVE = """
import sys
from codeward.apps.cli.gateway import run_gateway_cli
options = dict(arg.split("=", 1) for arg in sys.argv[2:])
sys.exit(run_gateway_cli(sys.argv[1], transport=options.get("transport", "stdio"), port=int(options.get("port", 0)),
                         roots=[options["roots"]] if "roots" in options else []))
"""


def _write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "codeward.toml"
    path.write_text(body.replace("PYTHON", json.dumps(sys.executable)).replace("PEER", json.dumps(PEER)))
    return path


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def test_servers_lists_state_tool_count_and_latency(tmp_path: Path) -> None:
    closed = free_port()
    config = _write_config(tmp_path, f"""
[mcp.servers.peer]
command = PYTHON
args = [PEER, "stdio"]

[mcp.servers.down]
url = "http://127.0.0.1:{closed}/mcp"
timeout = 5
""")
    out = io.StringIO()
    assert list_servers_cli(config, show_tools=True, out=out) == 1, "a failed server makes the exit code 1"
    text = out.getvalue()
    peer_line = next(line for line in text.splitlines() if line.startswith("peer"))
    assert "ready" in peer_line and " ms" in peer_line and "stdio" in peer_line
    assert "- peer__echo" in text
    down_line = next(line for line in text.splitlines() if line.startswith("down"))
    assert "failed" in down_line
    assert f"cannot connect to http://127.0.0.1:{closed}/mcp" in text

    out = io.StringIO()
    list_servers_cli(config, as_json=True, out=out)
    rows = {row["alias"]: row for row in json.loads(out.getvalue())}
    assert rows["peer"]["state"] == "ready" and rows["peer"]["tools"] >= 8
    assert rows["peer"]["latency_ms"] > 0 and "peer__echo" in rows["peer"]["exposed_tools"]
    assert rows["down"]["state"] == "failed" and rows["down"]["latency_ms"] is None


def test_call_through_the_gateway(tmp_path: Path) -> None:
    config = _write_config(tmp_path, """
[mcp]
auto_approve = ["peer__echo"]

[mcp.servers.peer]
command = PYTHON
args = [PEER, "stdio"]
""")
    out, err = io.StringIO(), io.StringIO()
    assert call_cli(config, "peer__echo", ["text=hello there"], out=out, err=err) == 0
    assert out.getvalue().strip() == "hello there"

    out, err = io.StringIO(), io.StringIO()
    assert call_cli(config, "peer__count", [], out=out, err=err) == 1, "no terminal to ask: the call is denied"
    assert "not approved" in err.getvalue() and "auto_approve" in err.getvalue()

    out, err = io.StringIO(), io.StringIO()
    assert call_cli(config, "peer__count", [], yes=True, as_json=True, out=out, err=err) == 0
    assert json.loads(out.getvalue())["text"] == "1"

    with pytest.raises(ConfigError, match=r"not a gateway tool.*configured servers \(peer\)"):
        call_cli(config, "nosuch__tool", [])


def test_config_mistakes_surface_as_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no MCP servers to connect"):
        list_servers_cli(_write_config(tmp_path, "[mcp]\n"))
    with pytest.raises(ConfigError, match="contains '__'"):
        list_servers_cli(_write_config(tmp_path, '[mcp.servers.a__b]\ncommand = "x"\n'))


@pytest.mark.anyio
async def test_gateway_served_over_stdio_with_native_tools_and_approval_by_elicitation(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("hello from the workspace\n")
    config = _write_config(tmp_path, """
[mcp]
auto_approve = ["peer__echo"]
native = "cw"

[mcp.servers.peer]
command = PYTHON
args = [PEER, "stdio"]
""")
    answers = iter([("accept", True), ("decline", None)])
    prompts: list[str] = []

    async def elicitation(context: Any, params: Any) -> Any:
        import mcp_types as types

        prompts.append(params.message)
        action, approve = next(answers)
        return types.ElicitResult(action=action, content={"approve": approve} if approve is not None else None)

    params = StdioServerParameters(command=sys.executable, args=["-c", SERVE, str(config), f"roots={project}"],
                                   env={**os.environ}, cwd=str(tmp_path))
    before = snapshot(project)
    # handshake era: the server asks the client back over the same connection (elicitation/create)
    async with Client(params, elicitation_callback=elicitation, mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"peer__echo", "peer__count", "cw__read_file"} <= names
        assert _text(await client.call_tool("peer__echo", {"text": "via gateway"})) == "via gateway"
        native = await client.call_tool("cw__read_file", {"path": "notes.md"})
        assert "hello from the workspace" in _text(native)
        approved = await client.call_tool("peer__count", {})
        assert not approved.is_error and _text(approved) == "1"
        denied = await client.call_tool("peer__count", {})
        assert denied.is_error and "not approved" in _text(denied)
    assert len(prompts) == 2 and "peer__count" in prompts[0]
    assert snapshot(project) == before


@pytest.mark.anyio
async def test_gateway_served_over_http(tmp_path: Path) -> None:
    upstream_port, port = free_port(), free_port()
    config = _write_config(tmp_path, f"""
[mcp]
auto_approve = ["up__*"]

[mcp.servers.up]
url = "http://127.0.0.1:{upstream_port}/mcp"
""")
    with background([sys.executable, PEER, "http", "--port", str(upstream_port)], upstream_port), \
            background([sys.executable, "-c", SERVE, str(config), "transport=http", f"port={port}"], port) as proc:
        wait_for_port(port, proc)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "up__echo" in names
            assert _text(await client.call_tool("up__echo", {"text": "two hops"})) == "two hops"
        # A handshake-era client over HTTP hears of an upstream's new tool on its standalone stream.
        import anyio
        import mcp_types as types

        heard = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                heard.set()

        async with Client(f"http://127.0.0.1:{port}/mcp", message_handler=on_message, mode="legacy") as client:
            assert "up__late" not in {tool.name for tool in (await client.list_tools()).tools}
            assert not (await client.call_tool("up__add_tool", {"name": "late"})).is_error
            with anyio.fail_after(20):
                await heard.wait()
            assert "up__late" in {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.anyio
async def test_an_upstream_tool_added_at_run_time_reaches_the_gateways_clients(tmp_path: Path) -> None:
    import anyio
    import mcp_types as types

    config = _write_config(tmp_path, """
[mcp]
auto_approve = ["peer__*"]
native = false

[mcp.servers.peer]
command = PYTHON
args = [PEER, "stdio"]
""")
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVE, str(config)], env={**os.environ},
                                   cwd=str(tmp_path))
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    # Handshake era: the notification comes on the session, which the capability announces.
    async with Client(params, message_handler=on_message, mode="legacy") as client:
        tools = client.server_capabilities.tools
        assert tools is not None and tools.list_changed is True
        assert "peer__fresh" not in {tool.name for tool in (await client.list_tools()).tools}
        assert not (await client.call_tool("peer__add_tool", {"name": "fresh"})).is_error
        with anyio.fail_after(20):
            await heard.wait()
        assert "peer__fresh" in {tool.name for tool in (await client.list_tools()).tools}
        assert _text(await client.call_tool("peer__fresh", {})) == "I am fresh"
    # 2026-07-28: the client listens on a subscriptions/listen stream.
    async with Client(params, mode="2026-07-28") as client, client.listen(tools_list_changed=True) as events:
        assert not (await client.call_tool("peer__add_tool", {"name": "newer"})).is_error
        with anyio.fail_after(20):
            event = await events.__anext__()
        assert type(event).__name__ == "ToolsListChanged"
        assert "peer__newer" in {tool.name for tool in (await client.list_tools()).tools}
