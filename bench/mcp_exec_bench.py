"""What running code costs an MCP client: a warm ``coding_execute_code`` Python hello through
the official Python client over stdio, against bare ``python3 -c`` measured in the same run.

Rows (median of ``--runs`` each, taken in turns so a busy machine slows all of them alike):

- ``bare python3 -c``: ``/usr/bin/python3 -c "print('hello')"`` as a plain subprocess (the baseline;
  the interpreter the sandbox runs);
- ``mcp execute``: ``coding_execute_code(language="python", code="print('hello')")`` through
  ``mcp.Client`` to ``codeward serve`` over stdio — the whole round trip a client sees (JSON-RPC,
  the server, the sandbox). The server's warm pool keeps an interpreter started in a sandbox
  ahead of time; between timed calls the bench pauses ``--gap`` seconds (untimed), as a model's
  think time would, so the pool has refilled;
- ``mcp session``: the same call with a ``session_id`` (a persistent interpreter; its state
  is kept between calls);
- ``mcp read_file``: a small ``read_file`` call, the floor of any tool call on this path.

Target: ``mcp execute`` ≤ 1.3× bare.

    .venv/bin/python bench/mcp_exec_bench.py [--runs 40] [--gap 0.3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from latency_table import print_table

PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else shutil.which("python3") or sys.executable
"""The interpreter the sandbox runs for Python (the system's), so both rows start the same program."""
HELLO = "print('hello')"
TARGET = 1.3


def bare() -> None:
    done = subprocess.run([PYTHON, "-c", HELLO], capture_output=True, check=True)
    assert done.stdout == b"hello\n", done.stdout


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def measure(runs: int, gap: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "notes.txt").write_text("hello\n")
        params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                       env={**os.environ, "CODEWARD_USER_AI_DIR": str(root / ".user-ai")})
        with open(os.devnull, "w") as quiet:
            from mcp.client.stdio import stdio_client

            async with Client(stdio_client(params, errlog=quiet)) as client:
                await report(client, runs, gap)


async def report(client: Client, runs: int, gap: float) -> None:
    async def execute() -> None:
        result = await client.call_tool("coding_execute_code", {"language": "python", "code": HELLO})
        assert not result.is_error and result.structured_content is not None, _text(result)
        assert result.structured_content["stdout"] == "hello\n", result.structured_content

    async def session() -> None:
        result = await client.call_tool("coding_execute_code", {"language": "python", "code": HELLO,
                                                                "session_id": "bench"})
        assert not result.is_error and result.structured_content is not None, _text(result)
        assert result.structured_content["stdout"] == "hello\n", result.structured_content

    async def read() -> None:
        result = await client.call_tool("read_file", {"path": "notes.txt"})
        assert not result.is_error and _text(result) == "hello\n"

    probe = await client.call_tool("coding_execute_code", {"language": "python", "code": HELLO})
    facts = probe.structured_content or {}
    state = await client.call_tool("coding_execute_code", {"language": "python", "code": "x = 42",
                                                           "session_id": "state"})
    kept = await client.call_tool("coding_execute_code", {"language": "python", "code": "print(x)",
                                                          "session_id": "state"})
    kept_ok = not state.is_error and (kept.structured_content or {}).get("stdout") == "42\n"
    rows: dict[str, list[float]] = {"bare python3 -c": [], "mcp execute": [], "mcp session": [],
                                    "mcp read_file": []}
    steps: dict[str, Callable[[], Awaitable[None]]] = {"mcp execute": execute, "mcp session": session,
                                                      "mcp read_file": read}
    for _ in range(3):  # warm-up: the pool, the session, the caches
        for step in steps.values():
            await step()
            await anyio.sleep(gap)
    warm_flags: list[bool] = []
    for _ in range(runs):
        started = time.perf_counter()
        bare()
        rows["bare python3 -c"].append((time.perf_counter() - started) * 1000)
        for name, step in steps.items():
            await anyio.sleep(gap)  # untimed: the pool refills, as it would while a model thinks
            started = time.perf_counter()
            await step()
            rows[name].append((time.perf_counter() - started) * 1000)
        last = await client.call_tool("coding_execute_code", {"language": "python", "code": "pass"})
        warm_flags.append(bool((last.structured_content or {}).get("warm")))
        await anyio.sleep(gap)
    base = statistics.median(rows["bare python3 -c"])
    print(f"python: {PYTHON}; backend: {facts.get('backend')}, isolated: {facts.get('isolated')}; "
          f"{runs} runs, {gap:.2f} s untimed gap before each call; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"state kept between calls of one session (x = 42, then print(x)): {'yes' if kept_ok else 'NO'}; "
          f"warm pool answered {sum(warm_flags)}/{len(warm_flags)} untimed check calls\n")
    print_table(rows, base, "path", "× bare")
    ratio = statistics.median(rows["mcp execute"]) / base
    print(f"\nmcp execute / bare python3 -c: {ratio:.2f}x (target <= {TARGET}x: {'ok' if ratio <= TARGET else 'OVER'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=40, help="timed calls per path")
    parser.add_argument("--gap", type=float, default=0.3, help="untimed seconds before each call")
    args = parser.parse_args()
    anyio.run(measure, args.runs, args.gap)


if __name__ == "__main__":
    main()
