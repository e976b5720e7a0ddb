"""Per-round-trip overhead of the agent's tool loop, excluding the model.

A local OpenAI-protocol server answers instantly with scripted chunks. In one run we time:

* baseline — the same streaming requests made directly with the ``openai`` SDK (chunks
  consumed, nothing else), plus the same tool call made directly through the catalog;
* loop — ``ToolLoop.run`` doing the same rounds (request → tool call → request → answer).

The difference per model round trip is what the loop itself costs (conversation building,
delta accumulation, schema assembly, dispatch). Target: ≤ 5 ms.

    .venv/bin/python bench/agent_bench.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_openai import FakeOpenAI, text, tool_calls

from codeward.apps.agent.conversation import Conversation
from codeward.apps.agent.loop import ToolLoop
from codeward.config.model_profile import ModelProfile
from codeward.engines.llm.client import ModelClient
from codeward.kernel.context import ToolContext
from codeward.kernel.surface import CatalogSurface
from codeward.kernel.workspace import Workspace
from codeward.tools import default_catalog


class Silent:
    def text(self, delta: str) -> None: ...
    def notice(self, message: str) -> None: ...
    def error(self, message: str) -> None: ...
    def tool_begin(self, call: object) -> None: ...
    def tool_end(self, call: object, content: str, is_error: bool) -> None: ...
    def response_end(self) -> None: ...


async def measure(rounds: int, root: Path) -> tuple[list[float], list[float]]:
    catalog = default_catalog()
    workspace = Workspace.create([root])
    call_reply = tool_calls(("read_file", '{"path": "a.txt"}'))
    answer = text("It says alpha.")
    baseline: list[float] = []
    looped: list[float] = []
    with FakeOpenAI([call_reply, answer] * (2 * rounds + 20)) as fake:
        client = ModelClient(ModelProfile(name="bench", base_url=fake.base_url, model="bench"), environ={})
        tools = CatalogSurface(catalog)
        schema = [{"type": "function", "function": {"name": i.name, "description": i.description,
                                                    "parameters": i.input_schema}} for i in tools.tool_infos()]
        messages = [{"role": "user", "content": "what is in a.txt?"}]
        for i in range(rounds + 5):  # interleaved, so drift on a noisy machine hits both alike
            started = time.perf_counter()
            for _ in range(2):
                async for _event in client.stream(messages, schema):
                    pass
            await catalog.acall("read_file", {"path": "a.txt"}, ToolContext(workspace))
            direct = time.perf_counter() - started
            loop = ToolLoop(client, tools, Conversation("bench"), Silent(), lambda: ToolContext(workspace))
            started = time.perf_counter()
            result = await loop.run("what is in a.txt?")
            through_loop = time.perf_counter() - started
            assert result.ok and result.tool_calls == 1
            if i >= 5:
                baseline.append(direct)
                looped.append(through_loop)
        await client.close()
    return baseline, looped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a.txt").write_text("alpha\n")
        baseline, looped = anyio.run(measure, args.rounds, root)
    base_p50, loop_p50 = statistics.median(baseline), statistics.median(looped)
    per_round_trip = (loop_p50 - base_p50) / 2 * 1000
    print(f"{args.rounds} loop runs, each 2 model round trips + 1 tool call (read_file)")
    print(f"  baseline (SDK streams + direct catalog call)  p50 {base_p50 * 1000:7.2f} ms")
    print(f"  ToolLoop.run                                   p50 {loop_p50 * 1000:7.2f} ms  "
          f"ratio {loop_p50 / base_p50:.2f}x")
    print(f"  loop overhead per model round trip             {per_round_trip:7.2f} ms  (target <= 5 ms)")


if __name__ == "__main__":
    main()
