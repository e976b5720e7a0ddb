"""An upstream the gateway starts gets the environment a real machine needs (TLS trust, proxies,
locale, tool caches) and nothing more unless configured; one that fails or misses its start limit
is never a silent empty tool list: ``codeward gateway`` says why on stderr and, with every
``tools/list``, in an MCP log message. Manual Slop's ``mcp_config.json`` in the project is found
without ``--config``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from codeward.gateway.gateway import Gateway
from codeward.gateway.upstream import ServerState
from codeward.kernel.context import ToolContext
from tests.gateway_support import PEER, config

pytestmark = pytest.mark.anyio

CODEWARD = str(Path(sys.executable).parent / "codeward")
DUMP_AND_HANG = "import json, os, sys, time; json.dump(dict(os.environ), open(sys.argv[1], 'w')); time.sleep(600)"


async def test_an_upstream_inherits_the_machine_settings_and_only_those(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SSL_CERT_FILE": "/etc/corp-ca.pem",
               "HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "localhost", "UV_CACHE_DIR": "/cache/uv",
               "LC_ALL": "C.UTF-8", "npm_config_cache": "/cache/npm", "XDG_CACHE_HOME": "/cache",
               "OPENAI_API_KEY": "sk-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret", "GITHUB_TOKEN": "gh-secret"}
    servers = {"hung": {"command": sys.executable, "args": ["-c", DUMP_AND_HANG, str(dump)], "timeout": 1,
                        "env": {"GITHUB_TOKEN": "configured-token"}}}
    async with Gateway(config(servers), environ=environ) as gateway:
        assert await gateway.wait_settled(60)
        hung = gateway.upstream("hung")
        assert hung is not None and hung.state == ServerState.FAILED
        notes = gateway.unavailable()
    seen = json.loads(dump.read_text(encoding="utf-8"))
    for name in ("SSL_CERT_FILE", "HTTPS_PROXY", "no_proxy", "UV_CACHE_DIR", "LC_ALL", "npm_config_cache",
                 "XDG_CACHE_HOME", "HOME", "PATH"):
        assert seen.get(name) == environ[name], name
    assert "OPENAI_API_KEY" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert seen["GITHUB_TOKEN"] == "configured-token"  # the configured env wins over anything inherited
    assert len(notes) == 1 and notes[0].startswith("server 'hung' is unavailable and offers no tools: ")
    assert "within 1s" in notes[0] and "codeward servers" in notes[0]


async def test_a_call_waits_for_its_server_still_starting(ctx: ToolContext) -> None:
    """``codeward call git__git_log`` right after start: a server whose first start outlasts the gateway's
    ``startup_wait`` (a first ``uvx`` download) is waited for, within its own ``timeout``."""
    late = f"import runpy, sys, time; time.sleep(2); sys.argv = [{PEER!r}, 'stdio']; runpy.run_path({PEER!r}, " \
           "run_name='__main__')"
    async with Gateway(config({"late": {"command": sys.executable, "args": ["-c", late], "timeout": 120}})) as gateway:
        outcome = await gateway.call("late__echo", {"text": "here"}, ctx)
        assert not outcome.is_error and outcome.text == "here", outcome.text


async def test_the_gateway_says_why_a_server_offers_no_tools(tmp_path: Path) -> None:
    """Through the real command and the SDK client, from a project whose only configuration is Manual
    Slop's ``mcp_config.json``: stderr names the failure, and so does a log message with ``tools/list``."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()  # the project's root: the search for configuration stops here
    hang = ["-c", "import time; time.sleep(600)"]
    (project / "mcp_config.json").write_text(json.dumps(
        {"servers": [{"name": "slow", "command": [sys.executable, *hang], "timeout": 1}]}), encoding="utf-8")
    env = {**os.environ, "CODEWARD_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}

    listed = subprocess.run([CODEWARD, "servers", "--json"], cwd=project, env=env, capture_output=True, text=True,
                            timeout=120)
    rows = json.loads(listed.stdout)
    assert listed.returncode == 1 and [(r["alias"], r["state"]) for r in rows] == [("slow", "failed")]
    assert "within 1s" in rows[0]["error"]
    assert "gateway: server 'slow' is unavailable and offers no tools" in listed.stderr

    heard: list[tuple[str, str | None, str]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.append((str(params.level), params.logger, str(params.data)))

    params = StdioServerParameters(command=CODEWARD, args=["gateway"], cwd=project, env=env)
    with anyio.fail_after(120):
        async with Client(params, logging_callback=on_log, log_level="info") as client:
            tools = (await client.list_tools()).tools
            assert not [tool for tool in tools if tool.name.startswith("slow__")]
            with anyio.fail_after(10):
                while not heard:
                    await anyio.sleep(0.05)
    assert heard[0][0] == "warning" and heard[0][1] == "codeward.gateway"
    assert heard[0][2].startswith("server 'slow' is unavailable and offers no tools: no answer to initialize")


def test_mcp_config_json_beside_codeward_toml_adds_servers_and_a_foreign_one_is_only_noted(tmp_path: Path) -> None:
    from codeward.config import load_config

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "codeward.toml").write_text('[mcp.servers.git]\ncommand = "mine"\n', encoding="utf-8")
    (project / "mcp_config.json").write_text(json.dumps({"servers": [
        {"name": "git", "command": ["theirs"]}, {"name": "docs", "command": ["docs-server", "--stdio"]}]}),
        encoding="utf-8")
    notes: list[str] = []
    servers = {s.alias: s for s in load_config(cwd=project, user=False, notify=notes.append).mcp.servers}
    assert servers["git"].command == "mine" and servers["docs"].command == "docs-server"
    assert servers["docs"].args == ("--stdio",) and not notes

    (project / "mcp_config.json").write_text('{"editor": {"theme": "dark"}}', encoding="utf-8")
    before = (project / "mcp_config.json").read_bytes()
    config = load_config(cwd=project, user=False, notify=notes.append)
    assert [s.alias for s in config.mcp.servers] == ["git"]
    assert len(notes) == 1 and "mcp_config.json was not read as MCP servers" in notes[0]
    assert '"servers" list' in notes[0]
    assert (project / "mcp_config.json").read_bytes() == before
