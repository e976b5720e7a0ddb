"""Third-party MCP clients against codeward: the official conformance suite and the MCP Inspector."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, node22_env, node_tool
from tests.process_support import background, free_port, server_stderr

pytestmark = [pytest.mark.npm, pytest.mark.xdist_group("node-peers")]
FIXTURE = Path(__file__).parent / "conformance" / "fixture_server.py"


@pytest.fixture
def fixture_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The fixture server's URL, and its process (its stderr is kept for a failure's report)."""
    port = free_port()
    with background([sys.executable, str(FIXTURE), str(port), str(tmp_path)], port, cwd=REPO,
                    capture_stderr=True) as proc:
        yield f"http://127.0.0.1:{port}/mcp", proc


def test_conformance_suite_server_scenarios_all_pass(fixture_server: tuple[str, subprocess.Popen[bytes]],
                                                     tmp_path: Path) -> None:
    suite = node_tool("conformance")
    if suite is None:
        pytest.skip("the conformance suite is not installed (scripts/test installs it with npm)")
    url, server = fixture_server
    out = tmp_path / "results"
    done = subprocess.run([suite, "server", "--url", url, "--suite", "all", "-o", str(out)],
                          capture_output=True, text=True, timeout=300, env=node22_env())
    summary = done.stdout[done.stdout.find("=== SUMMARY ==="):]
    # An intermittent failure needs its evidence: each scenario's checks.json stays in `out`
    # (pytest keeps the last runs' temporary folders) and the server's stderr goes in the report.
    report = (f"{summary or done.stderr[-3000:]}\nresults (checks.json per scenario): {out}\n"
              f"fixture server stderr:\n{server_stderr(server, 6000) or '(empty)'}")
    assert done.returncode == 0, report
    total = re.search(r"Total: (\d+) passed, (\d+) failed", summary)
    assert total and int(total[2]) == 0 and int(total[1]) >= 44, report
    scenarios = {re.sub(r"-\d{4}-\d{2}-\d{2}T.*$", "", p.name) for p in out.iterdir()}
    assert len(scenarios) >= 32, sorted(scenarios)
    statuses = [c["status"] for p in out.iterdir() for c in json.loads((p / "checks.json").read_text())]
    assert "FAILURE" not in statuses, report


def _inspector(*args: str) -> dict[str, object]:
    inspector = node_tool("mcp-inspector")
    if inspector is None:
        pytest.skip("the MCP Inspector is not installed (scripts/test installs it with npm)")
    done = subprocess.run([inspector, "--cli", sys.executable, "-m", "codeward", "serve", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    parsed: dict[str, object] = json.loads(done.stdout)
    return parsed


def test_inspector_cli_lists_and_calls_codeward_tools(root: Path) -> None:
    (root / "hello.txt").write_text("hello from codeward\n")
    listed = _inspector(str(root), "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}  # type: ignore[union-attr, index]
    assert {"read_file", "edit_file", "get_tree"} <= names
    called = _inspector(str(root), "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=hello.txt")
    assert called["isError"] is False
    assert called["content"] == [{"type": "text", "text": "hello from codeward\n"}]


def test_inspector_cli_runs_the_gateway_with_its_config_after_a_double_dash(tmp_path: Path) -> None:
    """The Inspector claims `--config` for itself; after `--` the words are codeward's (docs/client-setup.md)."""
    inspector = node_tool("mcp-inspector")
    if inspector is None:
        pytest.skip("the MCP Inspector is not installed (scripts/test installs it with npm)")
    config = tmp_path / "servers.json"
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
    config.write_text(json.dumps({"mcpServers": {"time": time_server}}))
    gateway = [sys.executable, "-m", "codeward", "gateway", "--config", str(config), "--yes"]
    claimed = subprocess.run([inspector, "--cli", *gateway, "--method", "tools/list"], capture_output=True, text=True,
                             timeout=120)
    said = claimed.stderr + claimed.stdout
    assert claimed.returncode != 0 and "--config and --server must be provided together" in said

    def run(*method: str) -> dict[str, object]:
        done = subprocess.run([inspector, "--cli", *method, "--", *gateway], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        parsed: dict[str, object] = json.loads(done.stdout)
        return parsed

    names = {tool["name"] for tool in run("--method", "tools/list")["tools"]}  # type: ignore[attr-defined, index]
    assert {"time__get_current_time", "time__convert_time"} <= names
    # --tool-arg takes every following word up to the next option, so it goes before --method, not before `--`.
    called = run("--tool-arg", "timezone=UTC", "--method", "tools/call", "--tool-name", "time__get_current_time")
    assert called["isError"] is False and '"timezone": "UTC"' in json.dumps(called["content"]).replace('\\"', '"')
