"""What a server leaves for the first call that needs it stays out of its start-up.

Start-up is what an agent waits for before its first turn, and a gateway waits for it once per
upstream; each of these modules was imported at start once and was moved to first use (each
measured in ``docs/performance.md``). A probe wraps ``python -m codeward serve`` (the command a
client starts), a session through the official client does what every client does first
(``initialize``, ``tools/list``), and the probe reports at exit every module the process imported:
a start after the first, which saved the tool listing.
A change that imports one of them at start again fails here, not only in a bench.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest
from mcp import Client

from tests.serve_probe import RUN_AS_PYTHON_M_CODEWARD, probed_serve

PROBE = textwrap.dedent("""
    import atexit, json, os, runpy, sys

    def report():
        with open(os.environ["PROBE_REPORT"], "w") as out:
            json.dump(sorted(sys.modules), out)

    atexit.register(report)
""") + RUN_AS_PYTHON_M_CODEWARD

LEFT_FOR_FIRST_USE = {
    "codeward.kernel.providers": "the resource and prompt records: the first resource or prompt listed",
    "codeward.engines.registry.documents": "the registry's documents: the first registry prompt or resource",
    "codeward.engines.registry.items": "the registry's items: the first registry prompt or resource",
    "codeward.engines.registry.signing": "signatures: the first registry tool checked",
    "codeward.engines.registry.index": "the registry's index: the first search",
    "codeward.engines.registry.service": "the registry service: its first use",
    "codeward.engines.checkpoints.journal": "the checkpoint journal: the first call that may write",
    "codeward.approval.policy": "the approval policy: only a stack with an approver builds one",
    "codeward.apps.client_setup.banner": "a client's launch line: only a banner prints it, over a pipe there is none",
    "codeward.apps.control.plane": "the control plane: only --control",
    "anyio.from_thread": "the first call that reports progress or asks the client",
    "pathspec": "the first blacklist check or .gitignore read",
    "tomllib": "the first configuration file read (this project has none)",
    "uvloop": "the fast HTTP stack: only --http",
    "httptools": "the fast HTTP stack: only --http",
    "tree_sitter": "the first C/C++ or other tree-sitter tool call",
    "sqlite3": "the first index or registry query",
    "rich": "the terminal's rendering: the agent shell, never a server",
}


@pytest.mark.anyio
async def test_a_stdio_serve_answers_tools_list_without_what_it_leaves_for_first_use(tmp_path: Path) -> None:
    named = [name for name in LEFT_FOR_FIRST_USE if importlib.util.find_spec(name) is None]
    assert named == [], "a module named here does not exist (renamed?): the check would pass for nothing"
    params, report = probed_serve(tmp_path, PROBE)
    for _ in range(2):  # the first start saves the listing (a cold start imports every tool module)
        async with Client(params) as client:
            assert "read_file" in {tool.name for tool in (await client.list_tools()).tools}
    imported = set(json.loads(report.read_text()))
    assert "codeward.serving.server" in imported and "codeward.kernel.catalog" in imported  # the probe saw the serve
    at_start = {name: why for name, why in LEFT_FOR_FIRST_USE.items() if name in imported}
    assert at_start == {}, f"imported at start-up, meant for first use: {at_start}"
    tool_modules = sorted(name for name in imported if name.startswith("codeward.tools."))
    assert tool_modules == [], "a tool module imports with its first call, not at start (the saved listing)"
