"""``codeward install-client`` against temporary config homes: each client's file, idempotence, backups,
malformed files refused untouched, HTTP with its token — and the written entries started for real."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.apps.client_setup.clients import CLIENTS, ClientSetupError, HttpEntry, StdioEntry, render, target
from tests.conftest import snapshot

HOME_VARS = ("HOME", "USERPROFILE", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "APPDATA", "CODEWARD_HOME",
             "CLAUDE_CONFIG_DIR")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def home_env(home: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in HOME_VARS}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local" / "share"))
    env.update(extra)
    return env


def install(home: Path, cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeward", "install-client", *args], cwd=cwd,
                          env=home_env(home, **extra), capture_output=True, text=True, timeout=60)


# client, scope, the file (relative to home or project), where the servers are in it
WHERE: list[tuple[str, str | None, str, str, tuple[str, ...]]] = [
    ("claude-code", None, "home", ".claude.json", ("projects", "<root>", "mcpServers")),
    ("claude-code", "user", "home", ".claude.json", ("mcpServers",)),
    ("claude-code", "project", "root", ".mcp.json", ("mcpServers",)),
    ("claude-desktop", None, "home", ".config/Claude/claude_desktop_config.json", ("mcpServers",)),
    ("cursor", None, "root", ".cursor/mcp.json", ("mcpServers",)),
    ("cursor", "user", "home", ".cursor/mcp.json", ("mcpServers",)),
    ("vscode", None, "root", ".vscode/mcp.json", ("servers",)),
    ("vscode", "user", "home", ".config/Code/User/mcp.json", ("servers",)),
]


def entry_in(path: Path, servers_at: tuple[str, ...], root: Path, name: str = "codeward") -> dict[str, Any]:
    node: Any = json.loads(path.read_text(encoding="utf-8"))
    for key in servers_at:
        node = node[str(root) if key == "<root>" else key]
    return dict(node[name])


@pytest.mark.parametrize(("client", "scope", "base", "relative", "servers_at"), WHERE,
                         ids=[f"{c}-{s or 'default'}" for c, s, *_ in WHERE])
def test_each_client_gets_its_file_once(home: Path, root: Path, client: str, scope: str | None, base: str,
                                        relative: str, servers_at: tuple[str, ...]) -> None:
    scope_args = ["--scope", scope] if scope else []
    first = install(home, root, client, *scope_args)
    assert first.returncode == 0, first.stderr
    path = (home if base == "home" else root) / relative
    assert f"{path}: added server 'codeward'" in first.stdout
    entry = entry_in(path, servers_at, root)
    assert Path(entry["command"]).is_absolute() and os.access(entry["command"], os.X_OK)
    assert entry["args"][-2:] == ["serve", str(root)]
    if client in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"
    else:
        assert "type" not in entry
    before = snapshot(path.parent)
    mtime = path.stat().st_mtime_ns
    again = install(home, root, client, *scope_args)
    assert again.returncode == 0 and "already up to date" in again.stdout
    assert snapshot(path.parent) == before and path.stat().st_mtime_ns == mtime
    assert not list(path.parent.glob("*.bak-*"))


def test_other_servers_and_unknown_keys_stay_and_a_change_is_backed_up(home: Path, root: Path, tmp_path: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    original = {"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"], "disabled": True},
                               "codeward": {"command": "/old/codeward", "args": ["serve", "/old"]}},
                "someFutureKey": {"keep": [1, 2, 3]}}
    path.write_text(json.dumps(original, indent=4) + "\n", encoding="utf-8")
    path.chmod(0o640)
    original_bytes = path.read_bytes()

    done = install(home, root, "cursor", "--scope", "user")
    assert done.returncode == 0 and "updated server 'codeward'" in done.stdout
    backups = list(path.parent.glob("mcp.json.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == original_bytes and f"backup: {backups[0]}" in done.stdout
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["mcpServers"]["git"] == original["mcpServers"]["git"]
    assert written["someFutureKey"] == original["someFutureKey"]
    assert written["mcpServers"]["codeward"]["args"] == ["serve", str(root)]
    assert list(written) == ["mcpServers", "someFutureKey"] and list(written["mcpServers"]) == ["git", "codeward"]
    assert path.read_text(encoding="utf-8").startswith('{\n    "mcpServers"')  # the file's own indentation
    assert stat.S_IMODE(path.stat().st_mode) == 0o640

    other = tmp_path / "other"
    other.mkdir()
    moved = install(home, other, "cursor", "--scope", "user")
    assert moved.returncode == 0 and "updated" in moved.stdout
    assert len(list(path.parent.glob("mcp.json.bak-*"))) == 2
    assert entry_in(path, ("mcpServers",), other)["args"] == ["serve", str(other)]


@pytest.mark.parametrize(("content", "expected"), [
    ('{"mcpServers": {"git": {"command": "uvx"}', "is not valid JSON: Expecting ',' delimiter at line 1"),
    ('{\n  // my servers\n  "servers": {}\n}\n', "comments and trailing commas are not JSON"),
    ('["not", "an", "object"]', "holds a JSON list, not an object"),
    ('{"servers": ["codeward"]}', "'servers' is a JSON list, expected an object of servers"),
    (b"\xff\xfe{}".decode("latin-1"), "is not UTF-8 text"),
])
def test_a_malformed_file_is_refused_and_left_untouched(home: Path, root: Path, content: str, expected: str) -> None:
    path = root / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(content, encoding="latin-1")
    before = snapshot(root)
    done = install(home, root, "vscode")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"codeward: error: {path}") and expected in done.stderr
    assert "nothing was changed" in done.stderr
    assert snapshot(root) == before


def test_wrong_requests_are_refused_before_any_file_is_made(home: Path, root: Path) -> None:
    before_home, before_root = snapshot(home), snapshot(root)
    desktop = install(home, root, "claude-desktop", "--http")
    assert desktop.returncode == 2 and "starts local servers only; drop --http" in desktop.stderr
    scope = install(home, root, "cursor", "--scope", "local")
    assert scope.returncode == 2 and "Cursor has no 'local' scope; choose one of project, user" in scope.stderr
    unknown = install(home, root, "zed")
    assert unknown.returncode == 2 and "invalid choice: 'zed'" in unknown.stderr
    missing = install(home, root, "vscode", "--root", str(root / "nope"))
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    unset = install(home, root, "vscode", "--http", "--token-env", "CW_UNSET_TOKEN")
    assert unset.returncode == 2 and "CW_UNSET_TOKEN: that environment variable is empty or unset" in unset.stderr
    remote = install(home, root, "vscode", "--http", "--host", "10.1.2.3")
    assert remote.returncode == 2 and "loopback" in remote.stderr
    assert snapshot(home) == before_home and snapshot(root) == before_root


def test_print_writes_no_file(home: Path, root: Path) -> None:
    done = install(home, root, "claude-code", "--print")
    assert done.returncode == 0
    printed = json.loads(done.stdout)
    entry = printed["projects"][str(root)]["mcpServers"]["codeward"]
    assert entry["type"] == "stdio" and entry["args"] == ["serve", str(root)]
    assert f"claude mcp add codeward -- {shlex.join([entry['command'], 'serve', str(root)])}" in done.stderr
    assert not (home / ".claude.json").exists() and snapshot(root) == {}


@pytest.mark.parametrize(("client", "relative", "servers_at", "typed"), [
    ("claude-code", ".mcp.json", ("mcpServers",), True),
    ("cursor", ".cursor/mcp.json", ("mcpServers",), False),
    ("vscode", ".vscode/mcp.json", ("servers",), True),
])
def test_http_entries_carry_the_url_and_the_saved_token(home: Path, root: Path, client: str, relative: str,
                                                        servers_at: tuple[str, ...], typed: bool) -> None:
    scope = ["--scope", "project"] if client == "claude-code" else []
    done = install(home, root, client, "--http", "--port", "8799", *scope)
    assert done.returncode == 0, done.stderr
    assert "--http --port 8799" in done.stdout and "keep it out of version control" in done.stderr
    path = root / relative
    entry = entry_in(path, servers_at, root)
    token_file = home / ".local" / "share" / "codeward" / "http" / "8799.client-token"
    token = token_file.read_text(encoding="utf-8").strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert entry["url"] == "http://127.0.0.1:8799/mcp" and entry["headers"] == {"Authorization": f"Bearer {token}"}
    assert (entry.get("type") == "http") is typed
    again = install(home, root, client, "--http", "--port", "8799", *scope)
    assert "already up to date" in again.stdout and token_file.read_text(encoding="utf-8").strip() == token
    chosen = install(home, root, client, "--http", "--port", "8799", "--token-env", "CW_TOKEN", *scope,
                     CW_TOKEN="chosen-token")
    assert "updated" in chosen.stdout and "--token-env CW_TOKEN" in chosen.stdout
    assert entry_in(path, servers_at, root)["headers"] == {"Authorization": "Bearer chosen-token"}


def test_desktop_and_vscode_user_files_per_system(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "APPDATA": str(tmp_path / "Roaming")}
    desktop, vscode = CLIENTS["claude-desktop"], CLIENTS["vscode"]
    assert target(desktop, None, tmp_path, env, "darwin").path == (
        tmp_path / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json")
    assert target(desktop, None, tmp_path, env, "win32").path == tmp_path / "Roaming" / "Claude" / \
        "claude_desktop_config.json"
    assert target(vscode, "user", tmp_path, env, "win32").path == tmp_path / "Roaming" / "Code" / "User" / "mcp.json"
    assert target(vscode, "user", tmp_path, env, "darwin").path == (
        tmp_path / "Library" / "Application Support" / "Code" / "User" / "mcp.json")
    moved = target(CLIENTS["claude-code"], "user", tmp_path, {**env, "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")},
                   "linux")
    assert moved.path == tmp_path / "cc" / ".claude.json"
    with pytest.raises(ClientSetupError, match="starts local servers only"):
        render(desktop, HttpEntry("http://127.0.0.1:1/mcp"))
    assert render(desktop, StdioEntry("/x/codeward", ("serve",), {"A": "1"})) == {
        "command": "/x/codeward", "args": ["serve"], "env": {"A": "1"}}


def _stdio_params(entry: dict[str, Any], elsewhere: Path) -> StdioServerParameters:
    """Exactly what the entry says, started as a client would: its own cwd, a PATH without codeward."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(elsewhere), **entry.get("env", {})}
    return StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=elsewhere)


@pytest.mark.anyio
@pytest.mark.parametrize(("client", "relative", "servers_at"), [
    ("claude-code", ".claude.json", ("projects", "<root>", "mcpServers")),
    ("claude-desktop", ".config/Claude/claude_desktop_config.json", ("mcpServers",)),
    ("vscode", ".vscode/mcp.json", ("servers",)),
])
async def test_the_written_stdio_entry_starts_a_working_server(home: Path, root: Path, tmp_path: Path, client: str,
                                                               relative: str, servers_at: tuple[str, ...]) -> None:
    (root / "hello.txt").write_text("hello from the project\n", encoding="utf-8")
    assert install(home, root, client).returncode == 0
    path = (root if relative.startswith(".vscode") else home) / relative
    entry = entry_in(path, servers_at, root)
    elsewhere = tmp_path / "client-cwd"
    elsewhere.mkdir()
    async with Client(_stdio_params(entry, elsewhere)) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"read_file", "search_text"} <= names
        read = await session.call_tool("read_file", {"path": "hello.txt"})
        assert not read.is_error and "hello from the project" in read.content[0].text  # type: ignore[union-attr]


def test_a_config_given_to_codeward_goes_into_the_entry_as_an_absolute_path(home: Path, root: Path) -> None:
    (root / "team.toml").write_text('[server]\nblacklist = ["private/"]\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "codeward", "--config", "team.toml", "install-client", "cursor",
                           "--print"], cwd=root, env=home_env(home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["codeward"]
    assert entry["args"] == ["--config", str(root / "team.toml"), "serve", str(root)]
    missing = subprocess.run([sys.executable, "-m", "codeward", "--config", "nope.toml", "install-client", "cursor"],
                             cwd=root, env=home_env(home), capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "--config nope.toml: no such file" in missing.stderr
    assert not (root / ".cursor").exists()
