"""Start-up: from starting a server to its first ``tools/list`` answer over stdio, and its RSS then.

An agent starts its MCP servers when it launches, and a gateway starts many; every one of them
is waited for before the first turn. In one run, through the official Python client over stdio
(``mcp.client.stdio.stdio_client`` + ``ClientSession``: spawn, ``initialize``, ``tools/list``):

- codeward (``python -m codeward serve ROOT``);
- the thinnest official-SDK server: an ``MCPServer`` with one read tool on stdio (the baseline
  every ratio is against);
- the node ``@modelcontextprotocol/server-everything`` (skipped when tests/node is not installed).

Servers take turns start by start (the order rotates), so a burst of load on the shared machine
hits each alike; the table gives medians, the spread (min-max) and the ratio to the baseline
(per round, median). RSS is the server process's resident set right after ``tools/list``, and
CPU its user + system time until then (what start-up cost the machine; it moves less with the
load than the wall-clock time does). The first tool call after the listing is timed on its own
(``first call ms``): work a server leaves for later, such as importing a tool's module or
building a message model's validator, is paid there. The servers run with bytecode caching on whatever
``PYTHONDONTWRITEBYTECODE`` says, so the warm-up start writes the ``.pyc`` files of a freshly
edited checkout as an installed package has them: otherwise each timed start would compile the
edited modules again.

    .venv/bin/python bench/startup_bench.py [--runs 10] [--only codeward,sdk-mcpserver] [--against PYTHON]

``--against PYTHON`` adds ``codeward-against``: the codeward another interpreter imports (another
checkout's virtual environment, say ``../main/.venv/bin/python``), so a change is measured before and
after in one run, under the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import psutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from stdio_latency import MCPSERVER  # the same thin SDK server as the latency bench

REPO = Path(__file__).resolve().parent.parent
NODE_EVERYTHING = REPO / "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
BASELINE = "sdk-mcpserver"
FIRST_CALL = {"codeward": ("read_file", {"path": "sample.txt"}),
              "codeward-against": ("read_file", {"path": "sample.txt"}),
              BASELINE: ("read_file", {"path": "sample.txt"}),
              "node-everything": ("echo", {"message": "hello"})}
"""The call timed after ``tools/list``: what a server built lazily for its first call shows up there."""


@dataclass
class Tally:
    name: str
    seconds: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    first_call_ms: list[float] = field(default_factory=list)
    tools: int = 0


def servers(work: Path, root: Path, against: str | None = None) -> dict[str, StdioServerParameters]:
    script = work / "mcpserver.py"
    script.write_text(textwrap.dedent(MCPSERVER))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONUNBUFFERED"] = "1"
    found = {
        "codeward": StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                          env=env, cwd=str(root)),
        BASELINE: StdioServerParameters(command=sys.executable, args=[str(script), str(root)], env=env,
                                        cwd=str(root)),
    }
    if against:
        found["codeward-against"] = StdioServerParameters(command=against, args=["-m", "codeward", "serve", str(root)],
                                                          env=env, cwd=str(root))
    if NODE_EVERYTHING.is_file():
        found["node-everything"] = StdioServerParameters(command="node", args=[str(NODE_EVERYTHING), "stdio"],
                                                         env=env, cwd=str(root))
    return found


def _new_child(before: set[int]) -> psutil.Process | None:
    children = [c for c in psutil.Process().children(recursive=False) if c.pid not in before]
    return children[0] if children else None


async def one_start(name: str, params: StdioServerParameters) -> tuple[float, float, float, int, float]:
    """Seconds from spawn to the ``tools/list`` answer, the server's RSS in MB and CPU ms then, tools listed,
    and the milliseconds of the first tool call after it."""
    before = {c.pid for c in psutil.Process().children(recursive=False)}
    with open(os.devnull, "w") as sink:
        started = time.perf_counter()
        async with stdio_client(params, errlog=sink) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            elapsed = time.perf_counter() - started
            child = _new_child(before)
            rss = cpu = float("nan")
            if child is not None:
                rss = child.memory_info().rss / 2**20
                times = child.cpu_times()
                cpu = (times.user + times.system) * 1000
            tool, arguments = FIRST_CALL[name]
            called = time.perf_counter()
            result = await session.call_tool(tool, arguments)
            first_call = (time.perf_counter() - called) * 1000
            if result.is_error:
                raise SystemExit(f"{name}: the first call ({tool}) failed: {result.content}")
    return elapsed, rss, cpu, len(listed.tools), first_call


def spread(values: list[float], digits: int) -> str:
    return f" ({min(values):.{digits}f}-{max(values):.{digits}f})" if len(values) > 1 else ""


def table(tallies: list[Tally]) -> str:
    base = next((t for t in tallies if t.name == BASELINE), None)
    header = (f"{'server':<18}{'tools':>6}{'start → tools/list ms':>30}{'RSS MB':>22}{'CPU ms':>20}"
              f"{'time ×':>9}{'RSS ×':>8}{'CPU ×':>8}{'first call ms':>20}")
    out = [header, "-" * len(header)]
    for t in tallies:
        ms = [s * 1000 for s in t.seconds]
        if base is not None and len(base.seconds) == len(t.seconds):
            time_ratio = statistics.median(a / b for a, b in zip(t.seconds, base.seconds, strict=True))
            rss_ratio = statistics.median(t.rss_mb) / statistics.median(base.rss_mb)
            cpu_ratio = statistics.median(a / b for a, b in zip(t.cpu_ms, base.cpu_ms, strict=True))
            ratios = f"{time_ratio:>9.2f}{rss_ratio:>8.2f}{cpu_ratio:>8.2f}"
        else:
            ratios = f"{'-':>9}{'-':>8}{'-':>8}"
        out.append(f"{t.name:<18}{t.tools:>6}{statistics.median(ms):>13.0f}{spread(ms, 0):<17}"
                   f"{statistics.median(t.rss_mb):>9.1f}{spread(t.rss_mb, 1):<13}"
                   f"{statistics.median(t.cpu_ms):>7.0f}{spread(t.cpu_ms, 0):<13}{ratios}"
                   f"{statistics.median(t.first_call_ms):>8.1f}{spread(t.first_call_ms, 1):<12}")
    out.append(f"(medians over runs, min-max in brackets; time × and CPU × per run against {BASELINE}, median)")
    return "\n".join(out)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split(" ")[:3])


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="codeward-startup-bench-") as tmp:
        work = Path(tmp)
        root = work / "root"
        root.mkdir()
        (root / "sample.txt").write_text("hello\n")
        known = servers(work, root, args.against)
        names = args.only.split(",") if args.only else list(known)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SystemExit(f"unknown or unavailable server {', '.join(unknown)}; choose from {', '.join(known)}")
        tallies = {name: Tally(name) for name in names}
        load_before = loadavg()
        for _ in range(args.warmup):  # fill the page cache and bytecode caches for every server
            for name in names:
                await one_start(name, known[name])
        for number in range(args.runs):
            order = names[number % len(names):] + names[: number % len(names)]
            for name in order:
                seconds, rss, cpu, count, first_call = await one_start(name, known[name])
                tally = tallies[name]
                tally.seconds.append(seconds)
                tally.rss_mb.append(rss)
                tally.cpu_ms.append(cpu)
                tally.first_call_ms.append(first_call)
                tally.tools = count
                print(f"run {number + 1}/{args.runs} {name:<18} {seconds * 1000:7.0f} ms  {rss:6.1f} MB  "
                      f"{cpu:6.0f} ms CPU  first call {first_call:6.1f} ms",
                      file=sys.stderr, flush=True)
        print(f"\nstart → first tools/list over stdio, official Python client, {args.runs} runs "
              f"(+{args.warmup} warm-up); load average {load_before} before, {loadavg()} after "
              f"(python {sys.version.split()[0]}, {os.cpu_count()} cores)")
        print(table(list(tallies.values())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed starts per server (default 10)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed starts per server first (default 1)")
    parser.add_argument("--only", help=f"comma-separated servers (default all: codeward, {BASELINE}, "
                        "node-everything)")
    parser.add_argument("--against", metavar="PYTHON", help="also start the codeward this interpreter imports "
                        "(another checkout's .venv/bin/python), as codeward-against")
    args = parser.parse_args()
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    anyio.run(run, args)


if __name__ == "__main__":
    main()
