"""What ``serve`` and ``gateway`` print to connect a client works when pasted: the stdio command is the
absolute one unless ``codeward`` on PATH is this installation, and the HTTP line's Authorization header,
filled in by a shell, is the one the server requires (also the token ``install-client --http`` saved)."""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.process_support import free_port
from tests.test_install_client import entry_in, home_env

pytestmark = pytest.mark.anyio
VENV_BIN = Path(sys.executable).parent


def _stdio_banner(root: Path, env: dict[str, str]) -> list[str]:
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "serve", str(root)], stdin=terminal, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    os.close(terminal)
    try:
        assert proc.stderr is not None
        return [proc.stderr.readline().rstrip("\n") for _ in range(7)]
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.close(controller)


async def test_stdio_banner_prints_the_command_that_works(root: Path, tmp_path: Path) -> None:
    (root / "note.txt").write_text("banner\n", encoding="utf-8")
    if not (VENV_BIN / "codeward").exists():
        pytest.skip("codeward is not installed as a script beside this interpreter")
    off_path = {**home_env(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    banner = _stdio_banner(root, off_path)
    assert "serving" in banner[0] and "MCP server" in banner[1] and "Press Ctrl-C" in banner[6]
    assert re.fullmatch(r"listing 15 of \d+ tools, ~[\d,]+ tokens a request; the toolsets tool reaches the other "
                        r'\d+ \(\[server\] toolsets = \["all"\] lists every one\)', banner[5].strip()), banner[5]
    assert banner[4].startswith("sandbox: ") and "codeward doctor" in banner[4]
    command = str(VENV_BIN / "codeward")
    assert banner[2].strip() == f"claude mcp add codeward -- {shlex.join([command, 'serve', str(root)])}"
    assert banner[3].strip() == f"or write a client's config: {shlex.quote(command)} install-client " \
                                "claude-code|claude-desktop|cursor|vscode"
    on_path = _stdio_banner(root, {**off_path, "PATH": f"{VENV_BIN}:/usr/bin:/bin"})
    assert on_path[2].strip() == f"claude mcp add codeward -- codeward serve {shlex.quote(str(root))}"

    # After install-client wrote Claude Code's entry, `claude mcp add codeward` would be refused ("already
    # exists"): the banner says the entry is there instead of offering that line.
    written = subprocess.run([command, "install-client", "claude-code"], cwd=root, env=off_path,
                             capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr
    configured = _stdio_banner(root, off_path)
    assert configured[2].strip() == (f"Claude Code: server 'codeward' in {tmp_path / 'home' / '.claude.json'} "
                                     "already starts this one")

    # What follows `--` is what Claude Code will run: run it, from elsewhere, with a bare PATH.
    words = shlex.split(banner[2].split(" -- ", 1)[1])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(command=words[0], args=words[1:], env={"PATH": "/usr/bin:/bin"}, cwd=elsewhere)
    async with Client(params) as client:
        assert "read_file" in {tool.name for tool in (await client.list_tools()).tools}
        read = await client.call_tool("read_file", {"path": "note.txt"})
        assert not read.is_error and "banner" in read.content[0].text  # type: ignore[union-attr]


@contextmanager
def _http_server(args: list[str], port: int, env: dict[str, str],
                 program: tuple[str, ...] = (sys.executable, "-m", "codeward"),
                 ) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A ``codeward serve|gateway ... --http`` process (``program``: this checkout's, or an installed one) and its
    banner (read until the connect line)."""
    proc = subprocess.Popen([*program, *args, "--http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = _read_until(proc.stderr, "connect: ")
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(url, timeout=0.5)
                break
            except httpx.HTTPError:
                assert proc.poll() is None, "the server exited"
                time.sleep(0.1)
        yield proc, banner
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _read_until(stream: IO[str], marker: str) -> str:
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        lines.append(line)
        if marker in line:
            lines.append(stream.readline())  # the line after it, if any
            return "".join(lines)
    raise AssertionError(f"no {marker!r} in the banner:\n{''.join(lines)}")


def _header_from(banner: str, name: str, url: str, env: dict[str, str]) -> str:
    """The banner's `claude mcp add --transport http` line; its header as a shell expands it."""
    found = re.search(rf'claude mcp add --transport http {re.escape(name)} {re.escape(url)} --header "(.*)"$',
                      banner, re.M)
    assert found, banner
    expanded = subprocess.run(["bash", "-c", f'printf %s "{found.group(1)}"'], env=env, capture_output=True,
                              text=True, check=True).stdout
    assert expanded.startswith("Authorization: Bearer ") and len(expanded) > len("Authorization: Bearer ") + 8
    return expanded.split(": ", 1)[1]


async def _tools_with(url: str, authorization: str) -> set[str]:
    from mcp.client.streamable_http import streamable_http_client

    async with httpx.AsyncClient(headers={"Authorization": authorization}) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def test_http_banner_header_is_the_one_the_server_requires(root: Path, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = home_env(tmp_path / "home")
    with _http_server(["serve", str(root)], port, env) as (_proc, banner):
        authorization = _header_from(banner, "codeward", url, env)
        assert "install-client claude-code|cursor|vscode --http" in banner  # Claude Desktop's file cannot
        assert "read_file" in await _tools_with(url, authorization)
        refused = httpx.post(url, headers={"Authorization": "Bearer wrong"}, json={}, timeout=10)
        assert refused.status_code == 401
    with _http_server(["serve", str(root)], port, env) as (_proc, banner):  # a restart: the pasted line still works
        assert _header_from(banner, "codeward", url, env) == authorization
        assert "read_file" in await _tools_with(url, authorization)
    chosen = {**env, "CW_TOKEN": "the-chosen-token"}
    with _http_server(["serve", str(root), "--token-env", "CW_TOKEN"], port, chosen) as (_proc, banner):
        assert '--header "Authorization: Bearer $CW_TOKEN"' in banner
        assert _header_from(banner, "codeward", url, chosen) == "Bearer the-chosen-token"
        assert f"--http --port {port} --token-env CW_TOKEN" in banner


async def test_an_http_entry_from_install_client_connects(root: Path, tmp_path: Path) -> None:
    """install-client --http saves the port's token; `serve --http` there requires it, and the entry works."""
    home = tmp_path / "home"
    port = free_port()
    env = home_env(home)
    done = subprocess.run([sys.executable, "-m", "codeward", "install-client", "vscode", "--http", "--port",
                           str(port)], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    entry = entry_in(root / ".vscode" / "mcp.json", ("servers",), root)
    start = shlex.split(done.stdout.split("start the server it connects to: ", 1)[1].splitlines()[0])
    assert start[1:] == ["serve", str(root), "--http", "--port", str(port)]
    token_file = home / ".local" / "share" / "codeward" / "http" / f"{port}.token"
    # VS Code asks for ${input:codeward-token} once; the person pastes the token file's content.
    assert entry["headers"]["Authorization"] == "Bearer ${input:codeward-token}"
    authorization = f"Bearer {token_file.read_text(encoding='utf-8').strip()}"
    with _http_server(start[1:-3], port, env) as (_proc, banner):
        assert f"it is in {token_file}" in banner and "kept for port" in banner
        assert _header_from(banner, "codeward", entry["url"], env) == authorization
        assert "read_file" in await _tools_with(entry["url"], authorization)
    assert token_file.exists()


async def test_gateway_http_banner_header_works(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": sys.executable,
                                                          "args": ["-m", "mcp_server_time"]}}}), encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = home_env(tmp_path / "home")
    with _http_server(["gateway", "--config", str(config), "--yes"], port, env) as (_proc, banner):
        authorization = _header_from(banner, "codeward-gateway", url, env)
        assert "time__get_current_time" in await _tools_with(url, authorization)


async def test_gateway_stdio_banner_command_starts_the_gateway(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": sys.executable,
                                                          "args": ["-m", "mcp_server_time"]}}}), encoding="utf-8")
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "gateway", "--config", str(config)], stdin=terminal,
                            env={**os.environ, "PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    os.close(terminal)
    try:
        assert proc.stderr is not None
        banner = _read_until(proc.stderr, "claude mcp add codeward-gateway -- ")
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.close(controller)
    line = next(line for line in banner.splitlines() if "claude mcp add codeward-gateway -- " in line)
    words = shlex.split(line.split(" -- ", 1)[1])
    assert Path(words[0]).is_absolute() and words[-3:] == ["gateway", "--config", str(config)]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(command=words[0], args=[*words[1:], "--yes"], env={"PATH": "/usr/bin:/bin"},
                                   cwd=elsewhere)
    async with Client(params) as client:
        assert "time__get_current_time" in {tool.name for tool in (await client.list_tools()).tools}
