"""Throughput through nginx: 2 codeward replicas against 1, sharing state in Redis.

In one run: Debian's redis-server, two ``codeward serve --http`` replicas with ``[state] url``
on that Redis, and two nginx instances from ``deploy/nginx.conf`` — one balancing across both
replicas, one in front of the first replica only (the baseline). Each round opens ``--sessions``
client sessions (the official Python client, 2025 handshake era: resumable streams, so every
event goes through Redis) through one nginx and makes ``--calls`` sequential ``read_file`` calls
per session at once; the two set-ups take turns round by round. Prints calls/s (median over
rounds), errors, and the ratio 2 replicas / 1 replica.

    .venv/bin/python bench/replica_bench.py [--sessions 16] [--calls 40] [--rounds 3]

On one machine the client, nginx, Redis and the replicas share the cores: the ratio is what a
second replica buys here, an upper bound of nothing and a lower bound of what separate machines give.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.process_support import free_port, start, stop  # noqa: E402
from tests.replica_support import nginx_config  # noqa: E402

TOKEN = "bench-token"


async def _round(url: str, sessions: int, calls: int) -> tuple[float, int]:
    errors = 0

    async def one(client: Client) -> None:
        nonlocal errors
        for _ in range(calls):
            try:
                result = await client.call_tool("read_file", {"path": "data.txt"})
                errors += result.is_error
            except Exception:
                errors += 1

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120,
                                 limits=httpx.Limits(max_connections=sessions * 2)) as http, \
            AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(streamable_http_client(url, http_client=http),
                                                          mode="legacy")) for _ in range(sessions)]
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for client in clients:
                group.start_soon(one, client)
        elapsed = time.perf_counter() - started
    return sessions * calls / elapsed, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "project"
        project.mkdir()
        (project / "data.txt").write_text("x" * 1024, encoding="utf-8")
        redis_port = free_port()
        procs = [start(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no", "--dir", tmp], redis_port)]
        try:
            env = {"CODEWARD_STATE_URL": f"redis://127.0.0.1:{redis_port}/0", "BENCH_TOKEN": TOKEN}
            ports = []
            for _ in range(2):
                port = free_port()
                procs.append(start([sys.executable, "-m", "codeward", "serve", str(project), "--http", "--port",
                                    str(port), "--token-env", "BENCH_TOKEN"], port, env, cwd=project, timeout=120))
                ports.append(port)
            fronts = {}
            for name, upstream in (("1 replica", ports[:1]), ("2 replicas", ports)):
                folder = base / name.replace(" ", "-")
                folder.mkdir()
                front = free_port()
                config = nginx_config(folder, front, upstream)
                nginx = os.environ.get("NGINX", "/usr/sbin/nginx")
                procs.append(start([nginx, "-p", str(folder), "-c", str(config), "-e", str(folder / "error.log")],
                                   front))
                fronts[name] = f"http://127.0.0.1:{front}/mcp"
            rates: dict[str, list[float]] = {name: [] for name in fronts}
            errors = dict.fromkeys(fronts, 0)
            order = list(fronts)
            for number in range(args.rounds):
                for name in order if number % 2 == 0 else reversed(order):
                    rate, failed = anyio.run(_round, fronts[name], args.sessions, args.calls)
                    rates[name].append(rate)
                    errors[name] += failed
            print(f"{args.sessions} sessions x {args.calls} read_file calls, {args.rounds} rounds, through nginx, "
                  "state in Redis (2025 era: resumable streams)")
            for name in fronts:
                print(f"  {name:10}  {statistics.median(rates[name]):7.1f} calls/s  "
                      f"(min {min(rates[name]):.1f}, max {max(rates[name]):.1f})  errors {errors[name]}")
            ratio = statistics.median(rates["2 replicas"]) / statistics.median(rates["1 replica"])
            print(f"  ratio 2 replicas / 1 replica: {ratio:.2f}x   (machine: {os.cpu_count()} cores, "
                  f"load {os.getloadavg()[0]:.2f})")
        finally:
            for proc in reversed(procs):
                stop(proc)


if __name__ == "__main__":
    main()
