"""``codeward serve`` starts with the garbage collector paused and serves with it on.

Collecting among the ~100k objects start-up allocates (the SDK's models, the catalog) took about
a tenth of spawn -> first ``tools/list``; they live as long as the server, so the collector
waits until it serves, then freezes them and runs as usual. A probe wraps ``python -m codeward``
(the command a client starts) and reports, at exit, every collection the collector ran once
codeward's command line began to import, before the server froze its start-up heap and after.
"""

from __future__ import annotations

import gc
import json
import textwrap
from pathlib import Path

import pytest
from mcp import Client

from codeward.apps.cli import main
from tests.serve_probe import RUN_AS_PYTHON_M_CODEWARD, probed_serve

PROBE = textwrap.dedent("""
    import atexit, gc, json, os, runpy, sys

    seen = {"before": 0, "after": 0}

    def count(phase, info):
        if phase == "start" and "codeward.apps.cli" in sys.modules:  # from codeward's own start on
            seen["after" if gc.get_freeze_count() else "before"] += 1

    def report():
        seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count())
        with open(os.environ["PROBE_REPORT"], "w") as out:
            json.dump(seen, out)

    gc.callbacks.append(count)
    atexit.register(report)
""") + RUN_AS_PYTHON_M_CODEWARD

@pytest.mark.anyio
async def test_a_served_session_starts_without_collections_and_serves_with_the_collector_on(tmp_path: Path) -> None:
    params, report = probed_serve(tmp_path, PROBE, notes="alpha\n" * 200)
    async with Client(params) as client:
        assert {"read_file", "search_text"} <= {tool.name for tool in (await client.list_tools()).tools}
        for _ in range(40):  # enough allocation for the collector's own first pass
            read = await client.call_tool("read_file", {"path": "notes.txt"})
            assert not read.is_error
            assert not (await client.call_tool("search_text", {"pattern": "alpha"})).is_error
    seen = json.loads(report.read_text())
    assert seen["before"] == 0, seen  # no collection while the server started
    assert seen["frozen"] > 10_000, seen  # start-up's objects are frozen out of the collector's way
    assert seen["enabled"] is True, seen
    assert seen["after"] > 0, seen  # and it collects while serving


def test_serve_that_fails_before_serving_leaves_the_collector_on(capsys: pytest.CaptureFixture[str]) -> None:
    assert gc.isenabled()
    assert main(["serve", "--approvals", "none"]) == 2  # --approvals needs --control: exits before serving
    assert "--approvals needs --control" in capsys.readouterr().err
    assert gc.isenabled()


def test_other_commands_run_with_the_collector_on_even_after_python_m_codeward_paused_it() -> None:
    gc.disable()  # as ``python -m codeward`` does while the command line's modules import
    try:
        assert main(["--version"]) == 0  # argparse's own exit is turned into the command's status
        assert gc.isenabled()
        gc.disable()
        assert main(["tools", "--json"]) == 0
        assert gc.isenabled()
    finally:
        gc.enable()
