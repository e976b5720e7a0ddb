"""What the stack's middleware chain costs per call, in process, against a direct catalog call.

One run, the same 1 KiB file, ``read_file`` called through:

- ``catalog``: ``Catalog.acall`` directly — the baseline every ratio is against;
- ``serve``: the stack ``codeward serve`` builds (metrics recorded, no approval);
- ``gateway``: the gateway's shape — native tools renamed ``cw__…`` and the approval policy in
  the chain (``read_file`` is read-only, so it is approved without asking);
- ``agent+observe``: the agent's shape with the control plane's observer outermost (its state
  and logs off, so only the chain's bookkeeping is timed).

Rounds are interleaved (each round times every shape in turn) so load on the machine affects
them alike; the median of the per-round medians is reported.

    .venv/bin/python bench/chain_bench.py [--calls 300] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from codeward.approval.policy import deny_unlisted
from codeward.apps.control.observe import Observe, SessionObserver
from codeward.config import Config
from codeward.serving.stack import Approver, build_stack

Call = Callable[[], Awaitable[object]]


async def _time(call: Call, calls: int) -> float:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def main(calls: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "sample.txt").write_text("x" * 1023 + "\n")
        config = Config()
        serve = build_stack(config, [root])
        gateway = build_stack(config, [root], native="cw", approver=Approver(deny_unlisted))
        agent = build_stack(config, [root], approver=Approver(deny_unlisted),
                            observers=[Observe(SessionObserver(None, None))])
        arguments = {"path": "sample.txt"}
        shapes: dict[str, Call] = {
            "catalog": lambda: serve.catalog.acall("read_file", arguments, serve.context()),
            "serve": lambda: serve.acall("read_file", arguments),
            "gateway": lambda: gateway.acall("cw__read_file", arguments),
            "agent+observe": lambda: agent.acall("read_file", arguments),
        }
        for shape, call in shapes.items():  # warm up, and check each shape really reads the file
            outcome = await call()
            assert not getattr(outcome, "is_error", True), (shape, getattr(outcome, "text", outcome))
        medians: dict[str, list[float]] = {shape: [] for shape in shapes}
        for _ in range(rounds):
            for shape, call in shapes.items():
                medians[shape].append(await _time(call, calls))
        base = statistics.median(medians["catalog"])
        print(f"read_file of 1 KiB, {calls} calls x {rounds} interleaved rounds (median of round medians)")
        for shape, values in medians.items():
            value = statistics.median(values)
            print(f"  {shape:<14} {value * 1e6:8.1f} us   x{value / base:5.2f}   (+{(value - base) * 1e6:6.1f} us)")
        for stack in (serve, gateway, agent):
            stack.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    anyio.run(main, options.calls, options.rounds)
