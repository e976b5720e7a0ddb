"""What screening a JSON-RPC message costs, against parsing it as the SDK does.

codeward screens each incoming message (``codeward.engines.jsonrpc.guard.screen``) before
the SDK sees it: a cheap count of brackets and commas for almost every message, a scan of the
tokens when those counts are high, and the SDK's own parse. The baseline is that parse alone
(``mcp_types.jsonrpc_message_adapter.validate_json``), measured in the same run on the same
bytes; the ratio is screen / parse. A refused message (too many values) is measured too: its
baseline is the parse it is spared.

    .venv/bin/python bench/jsonrpc_guard_bench.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import mcp_types as types

from codeward.engines.jsonrpc.guard import Rejection, screen


def call(arguments: object, request_id: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "write_file", "arguments": arguments}}).encode()


MESSAGES: dict[str, bytes] = {
    "read_file call (100 B)": call({"path": "src/app.py"}),
    "edit list, 500 edits": call({"path": "a.py", "edits": [{"old_text": f"x{i}", "new_text": f"y{i}"}
                                                          for i in range(500)]}),
    "1 MiB of Python source": call({"path": "a.py", "content": "def f(a, b):\n    return [a, {b: (1, 2)}]\n" * 25_000}),
    "16 MiB plain text": call({"path": "a.txt", "content": "abcdefgh\n" * 1_800_000}),
    "16 MiB CSV (3M commas)": call({"path": "a.csv", "content": "1,2,3,4\n" * 1_000_000}),
    "a million keys (refused)": call({f"k{i}": i for i in range(1_000_000)}),
}


def best(function: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'message':<28} {'parse (baseline)':>17} {'screen':>10} {'ratio':>7}")
    for name, data in MESSAGES.items():
        repeat = args.repeat if len(data) > 1_000_000 else args.repeat * 200
        parse = best(lambda data=data: types.jsonrpc_message_adapter.validate_json(data, by_name=False), repeat)
        screened = best(lambda data=data: screen(data), repeat)
        refused = " refused" if isinstance(screen(data), Rejection) else ""
        print(f"{name:<28} {parse * 1000:>14.3f} ms {screened * 1000:>7.3f} ms {screened / parse:>6.2f}x{refused}")


if __name__ == "__main__":
    main()
