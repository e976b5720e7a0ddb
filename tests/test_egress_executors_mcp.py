"""Network by allowlist per executor, through the official client on a real ``codeward serve``: code
execution and a registry tool reach the names their own ``[network.code]`` / ``[network.registry]``
tables allow (served by a local server on loopback, mapped by ``[network] hosts`` for the proxy only)
and are refused the others — the top-level list included; with only the top-level list set they have no
network at all (code runs in the warm pool as before). Two runs of one client at once each see only
their own refusals: the proxy knows a connection's run by the credential in its proxy variables, not by
when it came. Every packet stays on this machine's loopback or in the box's namespace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.egress_support import build_index, serve_directory
from tests.registry_support import python_tool
from tests.sandbox_support import needs_bwrap

pytestmark = [pytest.mark.anyio, needs_bwrap]

HOSTS = """
[network.hosts]
"shell.test" = "127.0.0.1"
"code.test" = "127.0.0.1"
"tool.test" = "127.0.0.1"
"noise.test" = "127.0.0.1"
"mine.test" = "127.0.0.1"
"""
PER_EXECUTOR = f"""
[network]
allowed_domains = ["shell.test"]
allowed_addresses = ["127.0.0.1"]
{HOSTS}
[network.code]
allowed_domains = ["code.test"]
allowed_addresses = ["127.0.0.1"]

[network.registry]
allowed_domains = ["tool.test"]
allowed_addresses = ["127.0.0.1"]
"""
TOP_LEVEL_ONLY = f"""
[network]
allowed_domains = ["shell.test", "code.test", "tool.test"]
allowed_addresses = ["127.0.0.1"]
{HOSTS}"""
FETCH = """\
import os, socket, urllib.error, urllib.request
print('proxy variable:', 'set' if os.environ.get('HTTP_PROXY') else 'none')
for url in URLS:
    try:
        print(url, 'GOT', urllib.request.urlopen(url, timeout=20).read().decode().strip())
    except urllib.error.HTTPError as exc:
        print(url, 'HTTP', exc.code)
    except OSError as exc:
        print(url, 'FAILED', type(exc).__name__)
try:
    socket.create_connection(('127.0.0.1', 3128), timeout=3).close()
    print('proxy port: open')
except OSError as exc:
    print('proxy port: closed', type(exc).__name__)
"""
TOOL_BODY = """\
    import os, urllib.error, urllib.request
    seen = {'proxy': bool(os.environ.get('HTTP_PROXY'))}
    for url in urls:
        try:
            seen[url] = urllib.request.urlopen(url, timeout=20).read().decode().strip()
        except urllib.error.HTTPError as exc:
            seen[url] = f'HTTP {exc.code}'
        except OSError as exc:
            seen[url] = type(exc).__name__
    return seen"""


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _server(root: Path, home: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)], cwd=str(root),
                                 env={**os.environ, "HOME": str(home), "PYTHONUNBUFFERED": "1"})


def _signed_fetch_tool(root: Path, home: Path) -> None:
    """A registry tool fetching URLs, signed by the person at the terminal (``codeward sign``)."""
    tool = root / ".ai/tools/utility/fetch.py"
    tool.parent.mkdir(parents=True)
    tool.write_text(python_tool(TOOL_BODY, params="urls", description="Fetch some URLs."))
    done = subprocess.run([sys.executable, "-m", "codeward", "sign", "fetch"], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HOME": str(home)})
    assert done.returncode == 0, done.stdout + done.stderr


async def _code(client: Client, urls: list[str], **extra: Any) -> dict[str, Any]:
    result = await client.call_tool("coding_execute_code", {
        "language": "python", "code": f"URLS = {urls!r}\n{FETCH}", "timeout": 60, **extra})
    assert not result.is_error, _text(result)
    return result.structured_content or {}


async def test_code_and_registry_tools_reach_their_own_tables_only(root: Path, tmp_path: Path) -> None:
    index = build_index(tmp_path / "index")
    home = tmp_path / "home"
    home.mkdir()
    _signed_fetch_tool(root, home)
    (root / "codeward.toml").write_text(PER_EXECUTOR)
    with serve_directory(index) as upstream:
        port = upstream.port
        code_url, shell_url, tool_url = (f"http://{name}.test:{port}/hello.txt" for name in ("code", "shell", "tool"))
        async with Client(_server(root, home)) as client:
            # code execution: its own list, not the top-level one (nor the registry's)
            ran = await _code(client, [code_url, shell_url, tool_url])
            out = ran["stdout"]
            assert "proxy variable: set" in out and f"{code_url} GOT hello through the proxy" in out, ran
            assert f"{shell_url} HTTP 403" in out and f"{tool_url} HTTP 403" in out, ran
            notes = "\n".join(ran["notes"])
            assert (f"network: REFUSED GET shell.test:{port}: shell.test is not in [network.code] allowed_domains; "
                    'an operator can allow it by adding "shell.test" to [network.code] allowed_domains') in notes, notes
            assert f"REFUSED GET tool.test:{port}" in notes and "1 connection(s) allowed" in notes, notes
            assert ran["warm"] is False  # fresh, in the client's namespace: not a box of the warm pool
            # a session's interpreter was started without the proxy: the call runs fresh, and says so
            ran = await _code(client, [code_url], session_id="s1")
            assert f"{code_url} GOT hello" in ran["stdout"], ran
            assert any("session_id is ignored" in note for note in ran["notes"]), ran

            # a registry tool: [network.registry]'s list
            result = await client.call_tool("registry_execute", {"name": "fetch", "params": {
                "urls": [tool_url, code_url]}})
            text = _text(result)
            assert not result.is_error, text
            assert '"proxy": true' in text and f'"{tool_url}": "hello through the proxy"' in text, text
            assert f'"{code_url}": "HTTP 403"' in text, text
            assert f"REFUSED GET code.test:{port}: code.test is not in [network.registry] allowed_domains" in text

            # run_shell in the same namespace keeps [network]'s list: code's name is refused to it
            result = await client.call_tool("run_shell", {"script": f"curl -sS {shell_url}; curl -sS -o /dev/null "
                                                                    f"-w '%{{http_code}}' {code_url}"})
            text = _text(result)
            assert "hello through the proxy" in text and "403" in text, text
            assert f"REFUSED GET code.test:{port}: code.test is not in [network] allowed_domains" in text, text

            # two runs at once in one client: each result lists its own refusals only
            started = await client.call_tool("process_start", {"name": "noise", "command": (
                "python3 -m http.server 18080 --bind 127.0.0.1 >/dev/null 2>&1 & echo started; "
                f"while true; do curl -s -o /dev/null http://noise.test:{port}/; sleep 0.05; done")})
            assert not started.is_error, _text(started)
            await client.call_tool("process_read", {"name": "noise", "wait_s": 30, "until": "started"})
            result = await client.call_tool("run_shell", {"script": (
                f"for i in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null http://mine.test:{port}/; sleep 0.2; done; "
                "for i in $(seq 100); do curl -s -o /dev/null 127.0.0.1:18080 && echo dev server up && break; "
                "sleep 0.1; done")})
            shell_text = _text(result)
            assert "dev server up" in shell_text, shell_text  # the client's namespace: its dev server, directly
            # ... which code execution, in a namespace of its own, does not reach
            ran = await _code(client, ["http://127.0.0.1:18080/"])
            assert "http://127.0.0.1:18080/ FAILED" in ran["stdout"], ran
            read = await client.call_tool("process_stop", {"name": "noise"})
            process_notes = "\n".join((read.structured_content or {}).get("notes", []))
            assert f"REFUSED GET mine.test:{port}" in shell_text, shell_text
            assert "noise.test" not in shell_text, shell_text  # the process's refusals, made meanwhile
            assert f"REFUSED GET noise.test:{port}" in process_notes and "mine.test" not in process_notes, read

    logged = [json.loads(line) for line in (root / ".codeward/logs/network.jsonl").read_text().splitlines()]
    assert {(e["host"], e["allowed"], e["run"]) for e in logged} >= {
        ("code.test", True, "code python"), ("tool.test", True, "registry fetch"), ("shell.test", False, "code python"),
        ("code.test", False, "run_shell"), ("noise.test", False, "process noise"), ("mine.test", False, "run_shell")}

    # with only the top-level list (a configuration written before executors had tables of their own), code
    # execution and registry tools have no network at all, whatever that list allows
    (root / "codeward.toml").write_text(TOP_LEVEL_ONLY)
    with serve_directory(index) as upstream:
        code_url = f"http://code.test:{upstream.port}/hello.txt"
        async with Client(_server(root, home)) as client:
            # a process makes the client's namespace (and the proxy's listener in it) first
            started = await client.call_tool("process_start", {"name": "idle", "command": "echo up; sleep 60"})
            assert not started.is_error, _text(started)
            ran = await _code(client, [code_url])
            out = ran["stdout"]
            assert "proxy variable: none" in out and f"{code_url} FAILED" in out, ran
            assert "proxy port: closed" in out, ran  # its own empty namespace, not the client's
            assert not any("network:" in note for note in ran["notes"]), ran
            result = await client.call_tool("registry_execute", {"name": "fetch", "params": {"urls": [code_url]}})
            text = _text(result)
            assert not result.is_error and '"proxy": false' in text and "hello through" not in text, text
            await client.call_tool("process_stop", {"name": "idle"})
    assert upstream.connections == []
