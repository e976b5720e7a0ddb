"""Throughput and latency of ``read_file`` over streamable HTTP with many concurrent client sessions.

In one run, against the same 1 KiB file, with the official Python client (``mcp.Client(url)``):

- codeward (``python -m codeward serve ROOT --http``), tool ``read_file``;
- the thinnest official-SDK server: an ``MCPServer`` with one read tool run as
  ``mcp.run("streamable-http")`` with the SDK's defaults — the baseline every ratio is against;
- optionally (``--only``) the same MCPServer with ``log_level="WARNING"`` (no per-request log
  lines) and a low-level SDK ``Server`` with one read tool on ``streamable_http_app``.

Each round opens ``--sessions`` client sessions per server (not timed), then every session makes
``--calls`` sequential calls at once; calls/s is all calls over the wall time from the first call
to the last answer, p50/p95 are per call. Servers take turns round by round (the order rotates),
so a burst of load on the shared machine hits each of them alike; the table gives the median
over rounds and the spread (min-max). Both protocol eras can be measured: ``auto`` (the client's
default: a 2026-07-28 server answers each POST on its own) and ``legacy`` (initialize handshake,
``Mcp-Session-Id`` sessions, SSE responses with resumable event ids).

``--only ...,replay-ceiling`` adds the most any server could reach here (auto era only): a bare
asyncio server that answers each repeated request from memory (``bench/http_ceiling.py``). The
client's own CPU per call, on the same cores, bounds every server; that row shows the bound.

What is fair about the floor: it is the SDK server as ``pip install mcp`` gives it — asyncio and
uvicorn's pure-Python h11 parser. mcp does not depend on uvloop or httptools, but uvicorn's
``"auto"`` picks them up when they are installed in the same environment (as codeward's ``fast``
extra installs them), which would quietly hand the floor a faster parser than its users get. So
every SDK row (``sdk-mcpserver``, ``-quiet``, ``sdk-lowlevel``) is started through a ``-c``
launcher that sets ``sys.modules["uvloop"] = sys.modules["httptools"] = None`` before the
script runs (their imports fail as if not installed). ``sdk-mcpserver-fast`` is the same floor
with both (uvloop's event-loop policy set before the script runs, httptools picked by uvicorn's
``"auto"``): what an SDK user gets by installing them, for the reader to compare codeward with;
``sdk-lowlevel-fast`` is the low-level server on them, the least a server costs through the SDK's
transport on codeward's stack.
``codeward`` runs as installed (with the extra: uvloop + httptools), ``codeward-plain`` with
``CODEWARD_FAST_HTTP=0`` (asyncio + h11). The ``stack`` column says what each server process
really loaded (from ``/proc/PID/maps``), not what it was asked to.

    .venv/bin/python bench/http_load.py [--sessions 16] [--calls 50] [--rounds 5] [--era auto,legacy]
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp import Client

from stdio_latency import SAMPLE_NAME, write_sample  # the file every server reads

BASELINE = "sdk-mcpserver"
CEILING = "replay-ceiling"
FAST_BASELINE = "sdk-mcpserver-fast"

RUN_SCRIPT = "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
AS_PIP_GIVES_IT = f"import runpy, sys; sys.modules['uvloop'] = sys.modules['httptools'] = None; {RUN_SCRIPT}"
"""Run a script with uvloop and httptools hidden: uvicorn's "auto" falls back to asyncio and h11."""
WITH_FAST = ("import asyncio, runpy, sys, httptools, uvloop; "
             f"asyncio.set_event_loop_policy(uvloop.EventLoopPolicy()); {RUN_SCRIPT}")
"""Run a script on uvloop (the policy anyio.run and asyncio.run use) with httptools importable."""

MCPSERVER = '''
import sys
from pathlib import Path

from mcp.server import MCPServer

ROOT, PORT, QUIET = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "quiet"
mcp = MCPServer("thin-high-level", log_level="WARNING") if QUIET else MCPServer("thin-high-level")


@mcp.tool()
def read_file(path: str) -> str:
    """Read a file."""
    return (ROOT / path).read_text()


mcp.run("streamable-http", port=PORT)
'''

LOWLEVEL = '''
import sys
from pathlib import Path

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

ROOT, PORT = Path(sys.argv[1]), int(sys.argv[2])
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="read_file", input_schema=SCHEMA)])


async def call_tool(ctx, params):
    text = (ROOT / params.arguments["path"]).read_text()
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("thin", on_list_tools=list_tools, on_call_tool=call_tool,
                get_tool_input_schema=lambda name: SCHEMA if name == "read_file" else None)
app = server.streamable_http_app()
uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
'''


@dataclass(frozen=True)
class Target:
    name: str
    argv: list[str]
    token: bool = False
    """The server requires the bench's bearer token (given in ``CODEWARD_BENCH_TOKEN``)."""
    modern_only: bool = False
    """Measured in the 2026-07-28 era only (the replaying ceiling keeps no sessions)."""
    env: dict[str, str] = field(default_factory=dict)
    """Added to the server's environment."""
    needs_fast: bool = False
    """Needs uvloop and httptools installed (the ``fast`` extra)."""


@dataclass
class Round:
    """One round of one server: every session's calls at once."""

    calls_per_s: float
    p50_ms: float
    p95_ms: float
    server_cpu_ms_per_call: float
    client_cpu_ms_per_call: float


@dataclass
class Tally:
    target: Target
    era: str
    rounds: list[Round] = field(default_factory=list)
    protocol: str = "?"
    stack: str = "?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def targets(work: Path, root: Path) -> dict[str, Target]:
    (work / "mcpserver.py").write_text(textwrap.dedent(MCPSERVER))
    (work / "lowlevel.py").write_text(textwrap.dedent(LOWLEVEL))
    py = sys.executable
    plain = [py, "-c", AS_PIP_GIVES_IT]
    codeward = [py, "-m", "codeward", "serve", str(root), "--http", "--port", "{port}"]
    return {
        "codeward": Target("codeward", [*codeward, "--token-env", "CODEWARD_BENCH_TOKEN"], token=True),
        "codeward-plain": Target("codeward-plain", [*codeward, "--token-env", "CODEWARD_BENCH_TOKEN"], token=True,
                                 env={"CODEWARD_FAST_HTTP": "0"}),
        "codeward-noauth": Target("codeward-noauth", [*codeward, "--no-auth"]),
        BASELINE: Target(BASELINE, [*plain, str(work / "mcpserver.py"), str(root), "{port}", "default"]),
        FAST_BASELINE: Target(FAST_BASELINE, [py, "-c", WITH_FAST, str(work / "mcpserver.py"), str(root), "{port}",
                                              "default"], needs_fast=True),
        "sdk-mcpserver-quiet": Target("sdk-mcpserver-quiet",
                                      [*plain, str(work / "mcpserver.py"), str(root), "{port}", "quiet"]),
        "sdk-lowlevel": Target("sdk-lowlevel", [*plain, str(work / "lowlevel.py"), str(root), "{port}"]),
        "sdk-lowlevel-fast": Target("sdk-lowlevel-fast", [py, "-c", WITH_FAST, str(work / "lowlevel.py"), str(root),
                                                          "{port}"], needs_fast=True),
        CEILING: Target(CEILING, [py, str(Path(__file__).with_name("http_ceiling.py")), str(root), "{port}",
                                  str(work / "lowlevel.py")], modern_only=True),
    }


@dataclass
class Running:
    target: Target
    url: str
    process: subprocess.Popen[bytes]


def start(target: Target, root: Path, log: Path, token: str) -> Running:
    port = free_port()
    argv = [a.replace("{port}", str(port)) for a in target.argv]
    with log.open("ab") as sink:
        process = subprocess.Popen(argv, cwd=root, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
                                   env={**os.environ, "CODEWARD_BENCH_TOKEN": token, **target.env})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{target.name} exited with {process.returncode}; its output is in {log}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return Running(target, f"http://127.0.0.1:{port}/mcp", process)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit(f"{target.name} did not listen on port {port} within 60 s; see {log}")


def loaded_stack(pid: int) -> str:
    """The event loop and HTTP parser a server process has loaded (read from ``/proc/PID/maps``)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return "?"
    loop = "uvloop" if "uvloop/loop." in maps else "asyncio"
    parser = "httptools" if "httptools/parser/" in maps else "h11"
    return f"{loop}+{parser}"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (and its reaped children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


async def drive(url: str, era: str, sessions: int, calls: int, expected: str, auth: str | None) -> None:
    """A client process: open ``sessions`` sessions, say ``ready``, wait for ``go``, call, report JSON."""
    import json

    import httpx2

    samples: list[float] = []
    headers = {"Authorization": f"Bearer {auth}"} if auth else {}
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(sessions):
            if headers:
                from mcp.client.streamable_http import streamable_http_client

                http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=60))
                client = Client(streamable_http_client(url, http_client=http), mode=era)
            else:
                client = Client(url, mode=era)
            client = await stack.enter_async_context(client)
            first = await client.call_tool("read_file", {"path": SAMPLE_NAME})
            text = first.content[0].text if first.content else ""  # type: ignore[union-attr]
            if first.is_error or text != expected:
                raise SystemExit(f"unexpected answer: {text[:200]!r}")
            clients.append(client)
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        clock = time.monotonic

        async def one(client: Client) -> None:
            for _ in range(calls):
                t0 = clock()
                await client.call_tool("read_file", {"path": SAMPLE_NAME})
                samples.append(clock() - t0)

        cpu0 = time.process_time()
        started = clock()
        async with anyio.create_task_group() as group:
            for client in clients:
                group.start_soon(one, client)
        ended = clock()
        cpu = time.process_time() - cpu0
        print(json.dumps({"started": started, "ended": ended, "cpu": cpu, "protocol": clients[0].protocol_version,
                          "samples": samples}), flush=True)


def one_round(server: Running, era: str, sessions: int, calls: int, procs: int, expected_file: Path,
              auth: str | None) -> tuple[Round, str]:
    """Every session's calls at once, the sessions spread over ``procs`` client processes."""
    import json

    shares = [sessions // procs + (1 if i < sessions % procs else 0) for i in range(procs)]
    drivers = []
    for share in (s for s in shares if s):
        argv = [sys.executable, __file__, "--driver", server.url, era, str(share), str(calls), str(expected_file)]
        env = {**os.environ, "CODEWARD_BENCH_TOKEN": auth or ""}
        drivers.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
    try:
        for driver in drivers:
            assert driver.stdout is not None
            if driver.stdout.readline().strip() != "ready":
                raise SystemExit(f"a client process for {server.target.name} failed (exit {driver.wait()})")
        cpu0 = cpu_seconds(server.process.pid)
        for driver in drivers:
            assert driver.stdin is not None
            driver.stdin.write("go\n")
            driver.stdin.flush()
        reports = []
        for driver in drivers:
            assert driver.stdout is not None
            line = driver.stdout.readline()
            if not line:
                raise SystemExit(f"a client process for {server.target.name} failed (exit {driver.wait()})")
            reports.append(json.loads(line))
        cpu = cpu_seconds(server.process.pid) - cpu0
    finally:
        for driver in drivers:
            driver.wait(30)
    samples = sorted(s for r in reports for s in r["samples"])
    wall = max(r["ended"] for r in reports) - min(r["started"] for r in reports)
    total = len(samples)
    client_cpu = sum(r["cpu"] for r in reports)
    return Round(
        calls_per_s=total / wall,
        p50_ms=statistics.median(samples) * 1000,
        p95_ms=samples[max(0, int(total * 0.95) - 1)] * 1000,
        server_cpu_ms_per_call=cpu / total * 1000,
        client_cpu_ms_per_call=client_cpu / total * 1000,
    ), reports[0]["protocol"]


def spread(values: list[float], digits: int) -> str:
    if len(values) < 2:
        return ""
    return f" ({min(values):.{digits}f}-{max(values):.{digits}f})"


def table(tallies: list[Tally], era: str) -> str:
    rows = [t for t in tallies if t.era == era]
    base = next((t for t in rows if t.target.name == BASELINE), None)
    header = (f"{'server':<22}{'stack':<19}{'protocol':<12}{'calls/s':>18}{'p50 ms':>20}{'p95 ms':>20}"
              f"{'server cpu':>12}{'client cpu':>12}{'calls/s ×':>11}{'p95 ×':>8}")
    out = [header, "-" * len(header)]
    for t in rows:
        cps = [r.calls_per_s for r in t.rounds]
        p50 = [r.p50_ms for r in t.rounds]
        p95 = [r.p95_ms for r in t.rounds]
        if base is not None and len(base.rounds) == len(t.rounds):
            pairs = list(zip(t.rounds, base.rounds, strict=True))
            ratio_cps = statistics.median(r.calls_per_s / b.calls_per_s for r, b in pairs)
            ratio_p95 = statistics.median(r.p95_ms / b.p95_ms for r, b in pairs)
            ratios = f"{ratio_cps:>11.2f}{ratio_p95:>8.2f}"
        else:
            ratios = f"{'-':>11}{'-':>8}"
        out.append(
            f"{t.target.name:<22}{t.stack:<19}{t.protocol:<12}"
            f"{statistics.median(cps):>6.0f}{spread(cps, 0):<12}"
            f"{statistics.median(p50):>7.1f}{spread(p50, 1):<13}"
            f"{statistics.median(p95):>7.1f}{spread(p95, 1):<13}"
            f"{statistics.median(r.server_cpu_ms_per_call for r in t.rounds):>12.2f}"
            f"{statistics.median(r.client_cpu_ms_per_call for r in t.rounds):>12.2f}{ratios}"
        )
    out.append(f"(medians over rounds, min-max in brackets; cpu: ms of CPU per call; ratios: per round against "
               f"{BASELINE}, median; calls/s × higher is faster, p95 × lower is better)")
    return "\n".join(out)


def fast_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("uvloop", "httptools"))


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split(" ")[:3])


def run(args: argparse.Namespace) -> None:
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="codeward-http-bench-") as tmp:
        work = Path(tmp)
        root = work / "root"
        root.mkdir()
        expected = write_sample(root, args.size)
        expected_file = work / "expected.txt"
        expected_file.write_text(expected)
        known = targets(work, root)
        names = args.only.split(",") if args.only else ["codeward", BASELINE]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SystemExit(f"unknown server {', '.join(unknown)}; choose from {', '.join(known)}")
        if any(known[n].needs_fast for n in names) and not fast_installed():
            raise SystemExit(f"{FAST_BASELINE} needs uvloop and httptools: pip install -e '.[fast]'")
        eras = args.era.split(",")
        running: list[Running] = []
        try:
            for name in names:
                print(f"starting {name} ...", file=sys.stderr, flush=True)
                running.append(start(known[name], root, work / f"{name}.log", token))
            tallies = {(s.target.name, era): Tally(s.target, era) for s in running for era in eras}
            load_before = loadavg()
            for number in range(args.rounds):
                for era in eras:
                    order = running[number % len(running):] + running[: number % len(running)]
                    for server in order:
                        if server.target.modern_only and era != "auto":
                            continue
                        auth = token if server.target.token else None
                        result, protocol = one_round(server, era, args.sessions, args.calls, args.client_procs,
                                                     expected_file, auth)
                        tally = tallies[(server.target.name, era)]
                        tally.rounds.append(result)
                        tally.protocol = protocol
                        tally.stack = loaded_stack(server.process.pid)
                        print(f"round {number + 1}/{args.rounds} {era:<6} {server.target.name:<22} "
                              f"{result.calls_per_s:6.0f} calls/s  p50 {result.p50_ms:6.1f} ms  "
                              f"p95 {result.p95_ms:6.1f} ms  server cpu {result.server_cpu_ms_per_call:5.2f} ms/call",
                              file=sys.stderr, flush=True)
            load_after = loadavg()
        finally:
            for server in running:
                server.process.terminate()
            for server in running:
                try:
                    server.process.wait(10)
                except subprocess.TimeoutExpired:
                    server.process.kill()
        print(f"\n{args.sessions} concurrent sessions (in {args.client_procs} client processes) × {args.calls} "
              f"sequential read_file calls ({args.size}-byte file) per server and round, {args.rounds} rounds; "
              f"load average {load_before} before, {load_after} after (python {sys.version.split()[0]}, "
              f"official mcp client, {os.cpu_count()} cores)")
        for era in eras:
            print(f"\nclient mode {era!r}:")
            print(table([t for t in tallies.values() if t.rounds], era))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--driver":
        url, era, sessions, calls, expected = sys.argv[2:7]
        anyio.run(drive, url, era, int(sessions), int(calls), Path(expected).read_text(),
                  os.environ.get("CODEWARD_BENCH_TOKEN") or None)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=16, help="concurrent client sessions (default 16)")
    parser.add_argument("--calls", type=int, default=50, help="sequential calls per session and round (default 50)")
    parser.add_argument("--client-procs", type=int, default=4,
                        help="client processes the sessions are spread over (default 4)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; servers take turns (default 5)")
    parser.add_argument("--era", default="auto,legacy",
                        help="client modes, comma-separated: auto (2026-07-28) and/or legacy (default both)")
    parser.add_argument("--size", type=int, default=1024, help="bytes in the file read (default 1024)")
    parser.add_argument("--only", help=f"comma-separated servers (default codeward,{BASELINE}; also "
                        f"codeward-plain (CODEWARD_FAST_HTTP=0), codeward-noauth, {FAST_BASELINE} (the floor on uvloop "
                        "+ httptools), sdk-mcpserver-quiet, sdk-lowlevel, sdk-lowlevel-fast (on uvloop + httptools), "
                        "and replay-ceiling: no MCP server but the most any server could reach, in the auto era only; "
                        "see bench/http_ceiling.py)")
    args = parser.parse_args()
    if args.sessions < 1 or args.calls < 1 or args.rounds < 1 or args.client_procs < 1:
        parser.error("--sessions, --calls, --rounds and --client-procs must be at least 1")
    run(args)


if __name__ == "__main__":
    main()
