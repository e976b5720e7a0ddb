"""What the gateway adds per call: p50 direct to an upstream, through codeward's gateway and
through FastMCP's proxy, same run.

One stdio upstream (the node ``@modelcontextprotocol/server-everything``, tool ``echo``, when
installed under tests/node/node_modules; else codeward's test peer) is measured these ways:

- ``direct``: the official Python client talks to the upstream itself — the baseline;
- ``gateway-inproc``: :meth:`Gateway.call` in this process (naming, policy, the upstream
  client, result conversion) — the gateway's own logic;
- ``server-hop``: the official client talks to codeward's MCP server answering an echo tool
  itself (no upstream) — what the extra hop through codeward's server costs on its own;
- ``gateway-stdio``: the official client talks to ``codeward gateway`` over stdio, which
  forwards to the upstream over stdio — the real two-hop set-up;
- ``gateway-modern``: the same, the client speaking 2026-07-28 (the official client's default);
- ``fastmcp-stdio``: the official client talks to FastMCP's proxy (``fastmcp.server.create_proxy``
  over the same upstream, served over stdio) — the same two hops through the best-known Python
  gateway. Measured when ``fastmcp`` is installed: ``pip install -e '.[bench]'`` (an extra, not a
  dependency of codeward).

Every client speaks the handshake era but ``gateway-modern``'s (FastMCP's proxy lists no tools to a
2026-07-28 client). Each path gets ``--warmup`` untimed calls, then ``--calls`` timed ones, one at a
time, the paths taking turns in ``--rounds`` rounds. The targets: at most 0.5 ms added at p50 for
``gateway-stdio`` over ``direct``, and at most half of what FastMCP's proxy adds.

    .venv/bin/python bench/gateway_bench.py [--calls 2000] [--warmup 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / "tests/node/node_modules/.bin/mcp-server-everything"
PEER = REPO / "tests/gateway_peer.py"
TARGET_MS = 0.5
TARGET_RATIO = 0.5
"""codeward's gateway adds at most this share of what FastMCP's proxy adds (p50, same run)."""

SERVE = """
import sys
from codeward.apps.cli.gateway import run_gateway_cli
sys.exit(run_gateway_cli(sys.argv[1]))
"""

ECHO_SERVER = """
import sys, tempfile
import anyio
from codeward.kernel.outcome import ToolOutcome
from codeward.serving.server import CodewardServer
from codeward.kernel.surface import ToolInfo
from codeward.kernel.workspace import Workspace

class Echo:
    infos = [ToolInfo("echo", "Echo the message.", {"type": "object", "properties": {"message": {"type": "string"}}})]
    def tool_infos(self): return self.infos
    def has(self, name): return name == "echo"
    async def call(self, name, arguments, ctx):
        return ToolOutcome(name=name, text="Echo: " + str((arguments or {}).get("message")), is_error=False)

with tempfile.TemporaryDirectory() as root:
    anyio.run(CodewardServer(Echo(), Workspace.create([root])).run_stdio)
"""


def upstream() -> tuple[list[str], str, dict[str, Any]]:
    """The upstream command line, its tool and the tool's arguments."""
    if EVERYTHING.exists():
        return [str(EVERYTHING), "stdio"], "echo", {"message": "ping"}
    return [sys.executable, str(PEER), "stdio"], "echo", {"text": "ping"}


Call = Callable[[], Awaitable[Any]]


async def direct(stack: AsyncExitStack, command: list[str], tool: str, args: dict[str, Any]) -> Call:
    params = StdioServerParameters(command=command[0], args=command[1:])
    client = await stack.enter_async_context(Client(params, mode="legacy"))
    return lambda: client.call_tool(tool, args)


async def gateway_inproc(stack: AsyncExitStack, command: list[str], tool: str, args: dict[str, Any]) -> Call:
    from codeward.gateway import Gateway, parse_gateway_table
    from codeward.kernel.context import ToolContext
    from codeward.kernel.workspace import Workspace

    config = parse_gateway_table({"servers": {"up": {"command": command[0], "args": command[1:]}},
                                  "auto_approve": ["up__*"]})
    scratch = stack.enter_context(tempfile.TemporaryDirectory())
    ctx = ToolContext(Workspace.create([Path(scratch)]))
    gateway = await stack.enter_async_context(Gateway(config))
    await gateway.wait_settled(30)
    name = f"up__{tool}"

    async def call() -> None:
        outcome = await gateway.call(name, args, ctx)
        if outcome.is_error:
            raise RuntimeError(outcome.text)

    return call


async def gateway_stdio(stack: AsyncExitStack, command: list[str], tool: str, args: dict[str, Any],
                        mode: str = "legacy") -> Call:
    scratch = stack.enter_context(tempfile.TemporaryDirectory())
    config = Path(scratch) / "codeward.toml"
    config.write_text(f'[mcp]\nauto_approve = ["up__*"]\n[mcp.servers.up]\ncommand = {json.dumps(command[0])}\n'
                      f"args = {json.dumps(command[1:])}\n")
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVE, str(config)], cwd=scratch)
    client = await stack.enter_async_context(Client(params, mode=mode))
    return lambda: client.call_tool(f"up__{tool}", args)


async def gateway_modern(stack: AsyncExitStack, command: list[str], tool: str, args: dict[str, Any]) -> Call:
    return await gateway_stdio(stack, command, tool, args, mode="2026-07-28")


FASTMCP_PROXY = """
import json, sys, warnings
warnings.simplefilter("ignore")
from fastmcp.server import create_proxy
command = json.loads(sys.argv[1])
create_proxy({"mcpServers": {"up": {"command": command[0], "args": command[1:]}}}).run(show_banner=False)
"""


async def fastmcp_stdio(stack: AsyncExitStack, command: list[str], tool: str, args: dict[str, Any]) -> Call:
    """FastMCP's proxy over the same upstream: a single server is mounted without a prefix."""
    params = StdioServerParameters(command=sys.executable, args=["-c", FASTMCP_PROXY, json.dumps(command)])
    client = await stack.enter_async_context(Client(params, mode="legacy"))
    return lambda: client.call_tool(tool, args)


def fastmcp_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("fastmcp") is not None


async def server_hop(stack: AsyncExitStack, command: list[str], tool: str, args: dict[str, Any]) -> Call:
    """codeward's MCP server answering in-process, no upstream: the cost of the extra hop alone."""
    params = StdioServerParameters(command=sys.executable, args=["-c", ECHO_SERVER])
    client = await stack.enter_async_context(Client(params, mode="legacy"))
    return lambda: client.call_tool("echo", {"message": "ping"})


async def measure(calls: dict[str, Call], warmup: int, total: int, rounds: int) -> dict[str, list[float]]:
    """Every path in turn, round after round, so background load hits them all alike."""
    samples: dict[str, list[float]] = {label: [] for label in calls}
    for call in calls.values():
        for _ in range(warmup):
            await call()
    per_round = max(1, total // rounds)
    for _ in range(rounds):
        for label, call in calls.items():
            for _ in range(per_round):
                started = time.perf_counter()
                await call()
                samples[label].append((time.perf_counter() - started) * 1000)
    return samples


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    options = parser.parse_args()
    command, tool, args = upstream()
    print(f"upstream: {' '.join(Path(c).name for c in command)} (tool {tool}); {options.calls} calls per path "
          f"in {options.rounds} rounds taking turns, after {options.warmup} warm-up calls each\n")
    paths: list[tuple[str, Callable[..., Awaitable[Call]]]] = [
        ("direct", direct), ("gateway-inproc", gateway_inproc), ("server-hop", server_hop),
        ("gateway-stdio", gateway_stdio), ("gateway-modern", gateway_modern)]
    if fastmcp_installed():
        paths.append(("fastmcp-stdio", fastmcp_stdio))
    else:
        print("fastmcp is not installed (pip install -e '.[bench]'): FastMCP's proxy is not measured\n")
    async with AsyncExitStack() as stack:
        calls = {label: await open_path(stack, command, tool, args) for label, open_path in paths}
        results = await measure(calls, options.warmup, options.calls, options.rounds)
    base = statistics.median(results["direct"])
    print(f"{'path':<16} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'added p50':>10} {'x direct':>9}")
    for label, samples in results.items():
        p50 = statistics.median(samples)
        print(f"{label:<16} {p50:>8.3f} {percentile(samples, 0.9):>8.3f} {percentile(samples, 0.99):>8.3f} "
              f"{p50 - base:>+10.3f} {p50 / base:>9.2f}")
    added = statistics.median(results["gateway-stdio"]) - base
    verdict = "meets" if added <= TARGET_MS else "misses"
    print(f"\ngateway over stdio adds {added:.3f} ms at p50 ({verdict} the {TARGET_MS} ms target)")
    if "fastmcp-stdio" in results:
        theirs = statistics.median(results["fastmcp-stdio"]) - base
        ratio = added / theirs if theirs > 0 else float("inf")
        verdict = "meets" if ratio <= TARGET_RATIO else "misses"
        print(f"FastMCP's proxy adds {theirs:.3f} ms: codeward's gateway adds {ratio:.2f}x that "
              f"({verdict} the {TARGET_RATIO}x target)")


if __name__ == "__main__":
    anyio.run(main)
