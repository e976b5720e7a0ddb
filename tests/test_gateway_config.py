"""Gateway configuration: codeward.toml [mcp] tables and Claude-Desktop mcpServers JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeward.config import ConfigError
from codeward.gateway.config import alias_for_url, check_alias, load_gateway_config, parse_mcp_servers_json
from codeward.gateway.transports import bearer_token, request_headers


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "codeward.toml"
    path.write_text(text)
    return path


def test_toml_servers_with_every_transport(tmp_path: Path) -> None:
    (tmp_path / "srv").mkdir()
    config = load_gateway_config(_toml(tmp_path, """
[mcp]
auto_approve = ["fs__read_text_file", "time__*"]
read_only_auto_approve = true
max_tool_depth = 5
pin = "refuse"
max_name_length = 64

[mcp.servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
env = { DEBUG = "1" }
cwd = "srv"
allow = ["read_*", "list_*"]
deny = ["read_media_file"]
timeout = 5

[mcp.servers.remote]
url = "http://127.0.0.1:3001/mcp"
auth_env = "REMOTE_TOKEN"
call_timeout = 30

[mcp.servers.legacy]
url = "http://127.0.0.1:3002/sse"
"""))
    fs, remote, legacy = config.servers
    assert (fs.alias, fs.transport, fs.command, fs.args) == (
        "fs", "stdio", "npx", ("-y", "@modelcontextprotocol/server-filesystem", "."))
    assert fs.env == {"DEBUG": "1"} and fs.cwd == str((tmp_path / "srv").resolve())
    assert fs.allow == ("read_*", "list_*") and fs.deny == ("read_media_file",) and fs.timeout == 5
    assert (remote.transport, remote.auth_env, remote.call_timeout) == ("http", "REMOTE_TOKEN", 30)
    assert legacy.transport == "sse"
    assert config.auto_approve == ("fs__read_text_file", "time__*")
    assert config.read_only_auto_approve and config.max_tool_depth == 5
    assert config.pin == "refuse" and config.max_name_length == 64
    assert config.pin_file == (tmp_path / ".codeward" / "gateway-pins.json").resolve()


def test_alias_with_double_underscore_is_refused_at_load(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[mcp.servers.my__fs]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match=r"my__fs.*contains '__'.*rename it"):
        load_gateway_config(path)


@pytest.mark.parametrize(("alias", "problem"), [
    ("a__b", "contains '__'"),
    ("fs_", "ends with '_'"),
    ("my server", "may only use letters"),
    ("", "must not be empty"),
])
def test_check_alias_explains_each_bad_alias(alias: str, problem: str) -> None:
    reason = check_alias(alias)
    assert reason is not None and problem in reason


def test_every_problem_is_reported_at_once_with_a_fix(tmp_path: Path) -> None:
    path = _toml(tmp_path, """
[mcp]
auto_aprove = ["x"]
pin = "sometimes"

[mcp.servers.both]
command = "x"
url = "http://127.0.0.1:1/mcp"

[mcp.servers.badurl]
url = "ftp://example.org/mcp"

[mcp.servers.typo]
comand = "x"

[mcp.servers.slow]
command = "x"
timeout = -1
""")
    with pytest.raises(ConfigError) as caught:
        load_gateway_config(path)
    text = str(caught.value)
    assert "problems" in text
    assert "did you mean 'auto_approve'" in text
    assert "pin must be 'off', 'warn' or 'refuse'" in text
    assert "exactly one of 'command'" in text
    assert "http:// or https://" in text
    assert "did you mean 'command'" in text
    assert "timeout must be a number of seconds above 0" in text


def test_claude_desktop_json_is_imported_unchanged(tmp_path: Path) -> None:
    document = {"mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                       "env": {"A": "1"}},
        "remote": {"type": "sse", "url": "http://127.0.0.1:9/events", "headers": {"X-Team": "a"}},
        "off": {"command": "x", "disabled": True},
        "cline-style": {"command": "y", "autoApprove": ["read"], "timeout": 60, "someOtherClientKey": 1},
    }}
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(document))
    config = load_gateway_config(path)
    by_alias = {s.alias: s for s in config.servers}
    assert by_alias["filesystem"].args == ("-y", "@modelcontextprotocol/server-filesystem", "/tmp")
    assert by_alias["filesystem"].env == {"A": "1"}
    assert by_alias["remote"].transport == "sse" and by_alias["remote"].headers == {"X-Team": "a"}
    assert not by_alias["off"].enabled
    assert by_alias["cline-style"].auto_approve == ("read",) and by_alias["cline-style"].timeout == 60


def test_json_without_mcp_servers_says_what_shape_is_expected() -> None:
    with pytest.raises(ConfigError, match="mcpServers"):
        parse_mcp_servers_json({"servers": "not a list"})


def test_json_alias_with_double_underscore_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"a__b": {"command": "x"}}}))
    with pytest.raises(ConfigError, match="contains '__'"):
        load_gateway_config(path)


def test_toml_can_import_a_claude_desktop_file(tmp_path: Path) -> None:
    (tmp_path / "desktop.json").write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    config = load_gateway_config(_toml(tmp_path, """
[mcp]
import = "desktop.json"
[mcp.servers.local]
command = "x"
"""))
    assert [s.alias for s in config.servers] == ["local", "time"]


def test_urls_get_readable_host_derived_aliases(tmp_path: Path) -> None:
    config = load_gateway_config(_toml(tmp_path, """
[mcp]
urls = ["http://boltzmann.fritz.box:8080/mcp", "https://mcp.example.com/mcp", "http://127.0.0.1:3001/mcp",
        "http://boltzmann.lan:9/mcp"]
"""))
    assert [s.alias for s in config.servers] == ["boltzmann", "example", "local-3001", "boltzmann-2"]
    assert alias_for_url("http://[::1]:7/mcp") == "local-7"
    assert check_alias(alias_for_url("http://weird__host.example/mcp")) is None


def test_auto_approve_accepts_the_seed_table_form(tmp_path: Path) -> None:
    config = load_gateway_config(_toml(tmp_path, """
[mcp.auto_approve]
"boltzmann__read_file" = true
"broglie__*" = true
"risky__delete" = false
"""))
    assert config.auto_approve == ("boltzmann__read_file", "broglie__*")


def test_auth_token_literal_wins_over_auth_env(tmp_path: Path) -> None:
    config = load_gateway_config(_toml(tmp_path, """
[mcp.servers.a]
url = "http://127.0.0.1:1/mcp"
auth_token = "literal"
auth_env = "A_TOKEN"
[mcp.servers.b]
url = "http://127.0.0.1:1/mcp"
auth_env = "B_TOKEN"
[mcp.servers.c]
url = "http://127.0.0.1:1/mcp"
"""))
    a, b, c = config.servers
    env = {"A_TOKEN": "from-env", "B_TOKEN": "b-env"}
    assert request_headers(a, env)["Authorization"] == "Bearer literal"
    assert request_headers(b, env)["Authorization"] == "Bearer b-env"
    assert bearer_token(b, {}) is None, "auth_env is read at connect time; unset means no header"
    assert "Authorization" not in request_headers(c, env)


def test_stdio_server_refuses_auth_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="apply to url servers only"):
        load_gateway_config(_toml(tmp_path, '[mcp.servers.s]\ncommand = "x"\nauth_token = "t"\n'))


def test_missing_and_malformed_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_gateway_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_gateway_config(_toml(tmp_path, "[mcp\n"))
    broken = tmp_path / "x.json"
    broken.write_text('{"mcpServers": {')
    with pytest.raises(ConfigError, match="invalid JSON at line 1"):
        load_gateway_config(broken)


def test_environment_references_are_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEER_PORT", "4321")
    config = load_gateway_config(_toml(tmp_path, '[mcp.servers.p]\nurl = "http://127.0.0.1:${PEER_PORT}/mcp"\n'))
    assert config.servers[0].url == "http://127.0.0.1:4321/mcp"


def test_what_a_server_passes_on_is_switched_per_server(tmp_path: Path) -> None:
    config = load_gateway_config(_toml(tmp_path, """
[mcp.servers.quiet]
command = "quiet-server"
sampling = false
resources = false

[mcp.servers.open]
command = "open-server"
"""))
    quiet, open_ = config.servers
    assert (quiet.sampling, quiet.resources, quiet.prompts) == (False, False, True)
    assert (open_.sampling, open_.resources, open_.prompts) == (True, True, True)
    with pytest.raises(ConfigError, match=r"sampling.*(bool|true or false)"):
        load_gateway_config(_toml(tmp_path, '[mcp.servers.x]\ncommand = "x"\nsampling = "sometimes"\n'))
    with pytest.raises(ConfigError, match=r"promts.*did you mean 'prompts'"):
        load_gateway_config(_toml(tmp_path, '[mcp.servers.x]\ncommand = "x"\npromts = false\n'))
