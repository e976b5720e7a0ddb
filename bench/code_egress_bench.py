"""Does network by allowlist cost code execution anything when code has no domains? A Python hello through
``coding_execute_code`` over the official client, on three servers started side by side in the same run:

- ``no [network]``: a project without any ``[network]`` table (the baseline: the warm pool answers);
- ``[network] only``: the top-level list set (for ``run_shell``, ``run_tests``, processes) and no
  ``[network.code]``: code must take exactly the baseline's path (no namespace, warm pool);
- ``[network.code]``: code execution with a domain allowed: the run is fresh (compiled-and-run path, in
  the client's code namespace with the proxy variables), never a warm box — what that costs.

Calls are taken in turns (one per server per round, an untimed ``--gap`` before each so the pools refill,
as a model's think time would), p50 and p90 per row, and the ratio to the baseline. Target: ``[network]
only`` within noise of the baseline (≤ 1.10×).

    .venv/bin/python bench/code_egress_bench.py [--runs 30] [--gap 0.3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from latency_table import print_table

HELLO = "print('hello')"
TARGET = 1.10
CONFIGS = {
    "no [network]": "",
    "[network] only": '[network]\nallowed_domains = ["pypi.org"]\n',
    "[network.code]": '[network.code]\nallowed_domains = ["pypi.org"]\n',
}


async def measure(runs: int, gap: float) -> None:
    with tempfile.TemporaryDirectory() as folder, open(os.devnull, "w") as quiet:
        from mcp.client.stdio import stdio_client

        async with contextlib.AsyncExitStack() as stack:
            clients: dict[str, Client] = {}
            for name, config in CONFIGS.items():
                root = Path(folder) / name.strip("[]").replace(" ", "-").replace(".", "-")
                root.mkdir()
                (root / "codeward.toml").write_text(config)
                params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                               cwd=str(root), env={**os.environ})
                clients[name] = await stack.enter_async_context(Client(stdio_client(params, errlog=quiet)))
            rows: dict[str, list[float]] = {name: [] for name in clients}
            warm: dict[str, int] = dict.fromkeys(clients, 0)
            for round_ in range(runs + 3):  # three untimed rounds first: the pools, the caches
                for name, client in clients.items():
                    await anyio.sleep(gap)
                    began = time.perf_counter()
                    result = await client.call_tool("coding_execute_code", {"language": "python", "code": HELLO})
                    spent = (time.perf_counter() - began) * 1000
                    data = result.structured_content or {}
                    assert not result.is_error and data.get("stdout") == "hello\n", data
                    if round_ >= 3:
                        rows[name].append(spent)
                        warm[name] += bool(data.get("warm"))
    base = statistics.median(rows["no [network]"])
    print(f"{runs} calls per server, {gap:.2f} s untimed gap before each; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print_table(rows, base, "server", "ratio", {name: f"{warm[name]}/{len(times)}" for name, times in rows.items()})
    ratio = statistics.median(rows["[network] only"]) / base
    print(f"\n[network] only / no [network]: {ratio:.2f}x (target <= {TARGET}x: {'ok' if ratio <= TARGET else 'OVER'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=30, help="timed calls per server")
    parser.add_argument("--gap", type=float, default=0.3, help="untimed seconds before each call")
    args = parser.parse_args()
    anyio.run(measure, args.runs, args.gap)


if __name__ == "__main__":
    main()
