"""run_shell through a real MCP session: the official client talking to ``codeward serve``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.sandbox_support import needs_bwrap

pytestmark = [pytest.mark.anyio, needs_bwrap]


def _text(result: object) -> str:
    return "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))


async def test_run_shell_over_stdio_is_sandboxed_by_default(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("original\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    heard: list[str] = []

    async def on_log(params: object) -> None:
        heard.append(str(getattr(params, "data", "")))

    async with Client(params, logging_callback=on_log, log_level="info") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        tool = listed["run_shell"]
        assert tool.annotations is not None and tool.annotations.destructive_hint is True
        assert tool.input_schema["properties"]["shell"]["enum"] == ["bash", "sh", "pwsh"]

        made = await client.call_tool("run_shell", {"script": f"echo made > made.txt; cat made.txt; "
                                                              f"echo changed > {outside}"})
        assert not made.is_error
        assert _text(made) == "STDOUT:\nmade\n\nSTDERR:\n\nEXIT CODE: 0"  # the write went to the sandbox's /tmp
        assert (root / "made.txt").read_text() == "made\n" and outside.read_text() == "original\n"
        # the run's log message is handed over without the script's thread waiting, yet arrives before the answer
        assert len(heard) == 1 and heard[0].startswith("run_shell [bwrap] bash exit=0 status=success")
        assert heard[0].endswith(f"echo made > made.txt; cat made.txt; echo changed > {outside}")

        slow = await client.call_tool("run_shell", {"script": "echo started; sleep 20", "timeout_s": 1})
        assert slow.is_error and "timed out after 1 s" in _text(slow) and "STDOUT:\nstarted\n" in _text(slow)
        assert len(heard) == 2 and heard[1].startswith("run_shell [bwrap] bash exit=-9 status=timeout")

        empty = await client.call_tool("run_shell", {"script": "  "})
        assert empty.is_error and "the script is empty" in _text(empty)

    entries = [json.loads(line) for line in (root / ".codeward" / "logs" / "shell.jsonl").read_text().splitlines()]
    assert [(e["exit_code"], e["status"], e["sandbox"]) for e in entries] == [(0, "success", "bwrap"),
                                                                             (-9, "timeout", "bwrap")]
