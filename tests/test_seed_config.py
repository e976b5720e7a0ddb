"""The seed's configuration shapes: Manual Slop's ``[mcp]`` keys and its ``mcp_config.json``
``servers`` list, read as codeward's keys (with a notice naming the key to write instead)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.apps.cli.servers import list_servers_cli
from codeward.config import ConfigError, load_config
from tests.gateway_support import PEER

pytestmark = pytest.mark.xdist_group("gateway")


def _load(directory: Path, text: str) -> tuple[object, list[str]]:
    (directory / "codeward.toml").write_text(text)
    notices: list[str] = []
    config = load_config(cwd=directory, user=False, environ={}, notify=notices.append)
    return config, notices


def test_manual_slops_mcp_keys_are_read_as_codewards_with_a_notice_each(tmp_path: Path) -> None:
    config, notices = _load(tmp_path, '[mcp]\nenabled = true\nblacklist = ["*.pem", "*.key"]\nallow_symlinks = false\n'
                                      '[server]\nblacklist = ["secrets/**"]\n')
    assert config.server.blacklist == ("secrets/**", "*.pem", "*.key")  # type: ignore[attr-defined]
    assert config.server.toolsets is None  # type: ignore[attr-defined]
    assert len(notices) == 3
    blacklist, enabled, symlinks = notices
    assert "[mcp] blacklist" in blacklist and "[server] blacklist" in blacklist
    assert "[mcp] enabled = true" in enabled and "remove it" in enabled
    assert "allow_symlinks = false" in symlinks and "remove it" in symlinks


def test_mcp_enabled_false_serves_no_tools(tmp_path: Path) -> None:
    config, notices = _load(tmp_path, "[mcp]\nenabled = false\n")
    assert config.server.toolsets == ()  # type: ignore[attr-defined]
    assert notices and "[server] toolsets = []" in notices[0]


@pytest.mark.parametrize(("text", "fragment"), [
    ("[mcp]\nallow_symlinks = true\n", "[server] roots"),
    ("[mcp]\nallow_symlinks = \"yes\"\n", "allow_symlinks"),
    ("[mcp]\nblacklist = \"*.pem\"\n", "list of glob strings"),
    ("[mcp]\nenabled = \"no\"\n", "true or false"),
    ("[mcp]\nenabled = false\n[server]\ntoolsets = [\"files\"]\n", "keep [server] toolsets"),
])
def test_seed_keys_that_cannot_be_honoured_are_refused_with_the_fix(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    assert fragment in str(caught.value) and "codeward.toml" in str(caught.value)


def test_the_blacklist_from_mcp_protects_files_through_a_real_call(tmp_path: Path) -> None:
    (tmp_path / "codeward.toml").write_text('[mcp]\nblacklist = ["*.secret"]\n')
    (tmp_path / "token.secret").write_text("hunter2\n")
    (tmp_path / "notes.md").write_text("fine\n")
    env = {**os.environ, "CODEWARD_HOME": str(tmp_path.parent / "home")}
    refused = subprocess.run([sys.executable, "-m", "codeward", "call", "read_file", "path=token.secret"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "hunter2" not in refused.stdout + refused.stderr
    assert "[mcp] blacklist is read as [server] blacklist" in refused.stderr
    allowed = subprocess.run([sys.executable, "-m", "codeward", "call", "read_file", "path=notes.md"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert allowed.returncode == 0 and "fine" in allowed.stdout


def _mcp_config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps({"servers": [
        {"name": "peer", "command": [sys.executable, PEER, "stdio"], "env": {"PEER_NOTE": "x"}},
    ]}))
    return path


def test_mcp_config_json_servers_list_reads_like_mcp_servers(tmp_path: Path) -> None:
    path = _mcp_config(tmp_path)
    config = load_config(str(path), cwd=tmp_path, user=False, environ={})
    (server,) = config.mcp.servers
    assert (server.alias, server.command, tuple(server.args)) == ("peer", sys.executable, (PEER, "stdio"))
    assert dict(server.env) == {"PEER_NOTE": "x"}
    (tmp_path / "codeward.toml").write_text('[mcp]\nimport = "mcp_config.json"\n')
    imported = load_config(cwd=tmp_path, user=False, environ={})
    assert [s.alias for s in imported.mcp.servers] == ["peer"]


def test_a_server_from_mcp_config_json_really_connects(tmp_path: Path) -> None:
    out = io.StringIO()
    assert list_servers_cli(_mcp_config(tmp_path), show_tools=True, out=out) == 0, out.getvalue()
    assert "- peer__echo" in out.getvalue()


@pytest.mark.parametrize(("servers", "fragment"), [
    ([{"command": ["x"]}], 'needs a "name"'),
    ([{"name": "a", "command": []}], "non-empty list"),
    ([{"name": "a", "command": ["x"]}, {"name": "a", "command": ["y"]}], "used twice"),
    (["a"], "must be an object"),
])
def test_bad_servers_lists_are_refused_by_entry(tmp_path: Path, servers: list[object], fragment: str) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps({"servers": servers}))
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), cwd=tmp_path, user=False, environ={})
    assert fragment in str(caught.value) and "mcp_config.json" in str(caught.value)
