"""Latency of one stdio ``tools/call`` that reads a 1 KiB file, through the official Python client.

In one run, against the same file and the same client, it measures:

- codeward (``python -m codeward serve ROOT``), tool ``read_file``;
- the thinnest official-SDK server (a low-level ``Server`` with one read tool on the SDK's
  stdio transport) — the baseline every ratio is against;
- the same thin server on codeward's event-loop stdio transport (isolates the transport);
- a minimal ``MCPServer`` (the SDK's high-level API);
- the node ``@modelcontextprotocol/server-filesystem`` (``read_text_file``), when installed
  under tests/node/node_modules;
- a bare JSON-RPC loop in plain Python over the same pipe: the floor.

Each server gets ``--warmup`` untimed calls, then ``--calls`` timed ones, one at a time.

    .venv/bin/python bench/stdio_latency.py [--calls 2000] [--warmup 200] [--only codeward,sdk-lowlevel] \
        [--against PYTHON]

``--against PYTHON`` adds ``codeward-against``: the codeward another interpreter imports (another
checkout's virtual environment), so a change is measured before and after in one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
NODE_FILESYSTEM = REPO / "tests/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
SAMPLE_NAME = "sample.txt"
BASELINE = "sdk-lowlevel"

THIN_SDK_SERVER = '''
import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

ROOT = Path(sys.argv[1])
TRANSPORT = sys.argv[2]


async def list_tools(ctx, params):
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    return types.ListToolsResult(tools=[types.Tool(name="read_file", input_schema=schema)])


async def call_tool(ctx, params):
    text = (ROOT / params.arguments["path"]).read_text()
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("thin", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    if TRANSPORT == "codeward":
        from codeward.serving.transport.stdio import fast_stdio_server as transport
    else:
        from mcp.server.stdio import stdio_server as transport
    async with transport() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
'''

MCPSERVER = '''
import sys
from pathlib import Path

from mcp.server import MCPServer

ROOT = Path(sys.argv[1])
mcp = MCPServer("thin-high-level")


@mcp.tool()
def read_file(path: str) -> str:
    """Read a file."""
    return (ROOT / path).read_text()


mcp.run()
'''

BARE_LOOP = '''
import json
import sys
from pathlib import Path

ROOT = Path(sys.argv[1])
read, write = sys.stdin.buffer.readline, sys.stdout.buffer.write
TOOL = {"name": "read_file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}


def answer(msg):
    method = msg.get("method")
    if method == "initialize":
        return {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare", "version": "0"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        text = (ROOT / msg["params"]["arguments"]["path"]).read_text()
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "ping":
        return {}
    return None


while line := read():
    msg = json.loads(line)
    if "id" not in msg:
        continue
    result = answer(msg)
    if result is None:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
    write(json.dumps(reply).encode() + b"\\n")
    sys.stdout.buffer.flush()
'''


@dataclass(frozen=True)
class Target:
    name: str
    command: str
    args: list[str]
    tool: str
    path_argument: str


@dataclass(frozen=True)
class Measurement:
    name: str
    era: str
    p50_ms: float
    p95_ms: float
    calls_per_s: float


def targets(work: Path, root: Path, against: str | None = None) -> tuple[list[Target], list[str]]:
    scripts = {"thin_sdk.py": THIN_SDK_SERVER, "mcpserver.py": MCPSERVER, "bare.py": BARE_LOOP}
    for name, source in scripts.items():
        (work / name).write_text(textwrap.dedent(source))
    py = sys.executable
    found = [
        Target("codeward", py, ["-m", "codeward", "serve", str(root)], "read_file", SAMPLE_NAME),
        Target(BASELINE, py, [str(work / "thin_sdk.py"), str(root), "sdk"], "read_file", SAMPLE_NAME),
        Target("sdk-lowlevel+fast-stdio", py, [str(work / "thin_sdk.py"), str(root), "codeward"], "read_file",
               SAMPLE_NAME),
        Target("sdk-mcpserver", py, [str(work / "mcpserver.py"), str(root)], "read_file", SAMPLE_NAME),
    ]
    if against:
        found.insert(1, Target("codeward-against", against, ["-m", "codeward", "serve", str(root)], "read_file",
                               SAMPLE_NAME))
    skipped: list[str] = []
    if NODE_FILESYSTEM.is_file():
        found.append(Target("node-filesystem", "node", [str(NODE_FILESYSTEM), str(root)], "read_text_file",
                            str(root / SAMPLE_NAME)))
    else:
        skipped.append("node-filesystem: not installed (run scripts/test, or npm install in tests/node)")
    found.append(Target("bare-jsonrpc-loop", py, [str(work / "bare.py"), str(root)], "read_file", SAMPLE_NAME))
    return found, skipped


@dataclass
class Session:
    target: Target
    client: Client
    arguments: dict[str, Any]
    samples: list[float]
    busy_seconds: float = 0.0


async def connect(stack: AsyncExitStack, target: Target, root: Path, warmup: int, expected: str) -> Session:
    params = StdioServerParameters(command=target.command, args=target.args, cwd=str(root))
    client = await stack.enter_async_context(Client(params))
    session = Session(target, client, {"path": target.path_argument}, [])
    first = await client.call_tool(target.tool, session.arguments)
    text = first.content[0].text if first.content else ""  # type: ignore[union-attr]
    if first.is_error or text != expected:
        raise SystemExit(f"{target.name}: unexpected answer: {text[:200]!r}")
    for _ in range(warmup):
        await client.call_tool(target.tool, session.arguments)
    return session


async def measure_block(session: Session, calls: int) -> None:
    clock = time.perf_counter
    call, name, arguments = session.client.call_tool, session.target.tool, session.arguments
    started = clock()
    for _ in range(calls):
        t0 = clock()
        await call(name, arguments)
        session.samples.append(clock() - t0)
    session.busy_seconds += clock() - started


def summarize(session: Session) -> Measurement:
    samples = sorted(session.samples)
    return Measurement(
        name=session.target.name,
        era=session.client.protocol_version,
        p50_ms=statistics.median(samples) * 1000,
        p95_ms=samples[int(len(samples) * 0.95) - 1] * 1000,
        calls_per_s=len(samples) / session.busy_seconds,
    )


def table(results: list[Measurement]) -> str:
    base = next((r for r in results if r.name == BASELINE), None)
    header = f"{'server':<26}{'protocol':<12}{'p50 ms':>9}{'p95 ms':>9}{'calls/s':>10}{'p50 ×':>8}{'p95 ×':>8}"
    rows = [header, "-" * len(header)]
    for r in results:
        p50_ratio = f"{r.p50_ms / base.p50_ms:.2f}" if base else "-"
        p95_ratio = f"{r.p95_ms / base.p95_ms:.2f}" if base else "-"
        rows.append(f"{r.name:<26}{r.era:<12}{r.p50_ms:>9.3f}{r.p95_ms:>9.3f}{r.calls_per_s:>10.0f}"
                    f"{p50_ratio:>8}{p95_ratio:>8}")
    rows.append(f"(ratios: server / {BASELINE}; lower is faster)")
    return "\n".join(rows)


def write_sample(root: Path, size: int) -> str:
    """The file every server reads (``SAMPLE_NAME`` in ``root``, ``size`` bytes of text); its text."""
    line = "The quick brown fox jumps over the lazy dog; 0123456789.\n"
    text = (line * (size // len(line) + 1))[: size - 1] + "\n"
    (root / SAMPLE_NAME).write_text(text)
    return text


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="codeward-bench-") as tmp:
        work = Path(tmp)
        root = work / "root"
        root.mkdir()
        expected = write_sample(root, args.size)
        found, skipped = targets(work, root, args.against)
        only = set(args.only.split(",")) if args.only else None
        chosen = [t for t in found if not only or t.name in only]
        async with AsyncExitStack() as stack:
            sessions = []
            for target in chosen:
                print(f"starting {target.name} ...", file=sys.stderr, flush=True)
                sessions.append(await connect(stack, target, root, args.warmup, expected))
            # Blocks of calls in turn, so a burst of load on the machine hits every server alike.
            block = max(1, args.calls // args.rounds)
            for _ in range(args.rounds):
                for session in sessions:
                    await measure_block(session, block)
            results = [summarize(session) for session in sessions]
        calls = block * args.rounds
        print(f"\n{calls} sequential tools/call of a {args.size}-byte file per server, in {args.rounds} rounds of "
              f"{block} taking turns, after {args.warmup} warm-up calls (python {sys.version.split()[0]}, "
              f"official mcp client)\n")
        print(table(results))
        for note in skipped:
            print(f"skipped {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per server (default 2000)")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first (default 200)")
    parser.add_argument("--rounds", type=int, default=20, help="servers take turns this many times (default 20)")
    parser.add_argument("--size", type=int, default=1024, help="bytes in the file read (default 1024)")
    parser.add_argument("--only", help="comma-separated server names to measure")
    parser.add_argument("--against", metavar="PYTHON", help="also measure the codeward this interpreter imports "
                        "(another checkout's .venv/bin/python), as codeward-against")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
