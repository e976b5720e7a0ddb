"""Every tool's example calls, through every real client: each answer must be accepted.

The official clients validate a structured result against the tool's ``outputSchema`` and refuse
one that breaks it, so a tool is done only when they accept its answers. One session per client
path runs every example call of every listed tool (``@tool(examples=...)``, written for
``tests/fixtures/contract_project``): the Python SDK over stdio and streamable HTTP in both
protocol eras, the TypeScript SDK, the gateway (``alias__tool``), and a sample through the MCP
Inspector CLI. A listed tool without an example fails every path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from codeward.kernel.catalog import Catalog
from codeward.tools import CORE_TOOLS, DISCOVERY_TOOLSET
from tests.conftest import node_tool
from tests.contract_support import (
    CallRecord,
    ContractWorld,
    contract_world,
    planned_calls,
    problems_of,
    sdk_installed,
    typescript_run,
)
from tests.process_support import codeward_http

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


class ListChanged:
    """Heard ``notifications/tools/list_changed`` (a handshake-era session's message handler)."""

    def __init__(self) -> None:
        self.heard = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.heard.set()


async def _discover_everything(client: Client, prefix: str, told: ListChanged | None) -> None:
    """A lean server lists its core: enable every toolset through ``toolsets`` and hear of it (on the
    handshake-era notification, or the 2026-07-28 listen stream), as a client reaching the rest would."""
    lean = [tool.name for tool in (await client.list_tools()).tools if tool.name.startswith(prefix)]
    assert f"{prefix}toolsets" in lean and len(lean) < 30, f"a lean server lists its core tools: {lean}"
    if told is not None:
        answer = await client.call_tool(f"{prefix}toolsets", {"action": "enable", "names": ["all"]})
        assert not answer.is_error, _text(answer)
        with anyio.fail_after(60):
            await told.heard.wait()
        return
    async with client.listen(tools_list_changed=True) as stream:
        answer = await client.call_tool(f"{prefix}toolsets", {"action": "enable", "names": ["all"]})
        assert not answer.is_error, _text(answer)
        with anyio.fail_after(60):
            await stream.__anext__()


async def _python_session(client: Client, world: ContractWorld, catalog: Catalog, prefix: str = "",
                          told: ListChanged | None = None) -> tuple[list[str], list[str]]:
    """Start lean, enable every toolset, list again, then run every example call in one session; the
    names listed and the problems found."""
    await _discover_everything(client, prefix, told)
    return await _run_examples(client, world, catalog, prefix)


async def _run_examples(client: Client, world: ContractWorld, catalog: Catalog,
                        prefix: str = "") -> tuple[list[str], list[str]]:
    """List, then run every listed tool's example calls; the names listed and the problems found."""
    listed = (await client.list_tools()).tools
    names = [tool.name for tool in listed]
    with_schema = {tool.name for tool in listed if tool.output_schema}
    calls, missing = planned_calls(world, catalog, names, prefix)
    records: list[CallRecord] = []
    for name, arguments in calls:
        try:
            result = await client.call_tool(name, arguments)
        except Exception as exc:  # the client refused the answer (or the session broke): record it, go on
            records.append(CallRecord(name, accepted=False, detail=f"{type(exc).__name__}: {exc}"[:1500]))
            continue
        records.append(CallRecord(name, True, bool(result.is_error), result.structured_content is not None,
                                  _text(result)[:500]))
    problems = [f"{name}: listed without an example call (add @tool(examples=[...]))" for name in missing]
    return names, problems + problems_of(records, with_schema)


@pytest.mark.parametrize(("transport", "mode"), [("stdio", "auto"), ("stdio", "legacy"), ("http", "auto"),
                                                 ("http", "legacy")])
async def test_the_python_client_accepts_every_example(tmp_path: Path, catalog: Catalog, transport: str,
                                                       mode: str) -> None:
    told = ListChanged() if mode == "legacy" else None
    with contract_world(tmp_path) as world:
        if transport == "stdio":
            async with Client(world.serve_params(), mode=mode, message_handler=told) as client:  # type: ignore[arg-type]
                era = client.protocol_version
                names, problems = await _python_session(client, world, catalog, told=told)
        else:
            # a 2026-07-28 request over HTTP names no session, so nothing enables toolsets for it: the operator
            # lists every tool for this path (tests/test_lean_listing.py shows such a client using call_tool)
            if mode == "auto":
                config = world.project / "codeward.toml"
                settings = config.read_text(encoding="utf-8")
                config.write_text(settings.replace('toolsets = ["core", "lsp"]', 'toolsets = ["all"]'),
                                  encoding="utf-8")
                catalog = Catalog(spec for spec in catalog if spec.toolset != DISCOVERY_TOOLSET)
            with codeward_http(str(world.project), cwd=world.project, env=world.env) as url:
                async with Client(url, mode=mode, message_handler=told) as client:  # type: ignore[arg-type]
                    era = client.protocol_version
                    if mode == "auto":
                        names, problems = await _run_examples(client, world, catalog)
                        # nor does a long-running process: it belongs to a client, and this request names none;
                        # each process tool must say so (tests/test_processes_mcp.py runs them in sessions)
                        stateless = [p for p in problems if p.startswith("process_") and "names no client" in p]
                        assert len(stateless) == 5, problems  # process_list answers: this client has none
                        problems = [p for p in problems if p not in stateless]
                    else:
                        names, problems = await _python_session(client, world, catalog, told=told)
    assert (era == MODERN) == (mode == "auto"), era
    assert sorted(names) == sorted(catalog.names())
    assert not problems, "\n".join(problems)


async def test_through_the_gateway_every_example_is_accepted(tmp_path: Path, catalog: Catalog) -> None:
    """The same calls as ``cw__tool`` through ``codeward gateway`` (upstream: ``codeward serve``)."""
    with contract_world(tmp_path) as world:
        env = {key: world.env[key] for key in ("DOCKER_HOST", "CODEWARD_USER_AI_DIR", "PYTHONUNBUFFERED")}
        config = tmp_path / "gateway.toml"
        config.write_text(
            "[mcp]\nnative = false\nstartup_wait = 120\n\n[mcp.servers.cw]\n"
            f"command = {json.dumps(sys.executable)}\n"
            f"args = {json.dumps(['-m', 'codeward', 'serve', str(world.project)])}\n"
            f"cwd = {json.dumps(str(world.project))}\n"
            f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in env.items())} }}\n"
            "timeout = 60\ncall_timeout = 600\n", encoding="utf-8")
        gateway = StdioServerParameters(command=sys.executable,
                                        args=["-m", "codeward", "gateway", "--config", str(config), "--yes"],
                                        cwd=str(tmp_path), env=world.env)
        async with Client(gateway) as client:
            names, problems = await _python_session(client, world, catalog, prefix="cw__")
    assert sorted(names) == sorted(f"cw__{name}" for name in catalog.names())
    assert not problems, "\n".join(problems)


@pytest.mark.npm
def test_the_typescript_client_accepts_every_example(tmp_path: Path, catalog: Catalog) -> None:
    if not sdk_installed():
        pytest.skip("the TypeScript SDK is not installed (scripts/test installs tests/node with npm)")
    with contract_world(tmp_path) as world:
        calls, missing = planned_calls(world, catalog, catalog.names())
        params = world.serve_params()
        plan = {"server": {"command": params.command, "args": params.args, "cwd": params.cwd, "env": params.env},
                "enable": ["all"], "calls": [{"name": name, "arguments": arguments} for name, arguments in calls]}
        answer = typescript_run(plan)
    assert set(CORE_TOOLS) <= set(answer["lean"]) and len(answer["lean"]) < 30, answer["lean"]
    assert answer["told"], "told of the toolsets it enabled"
    listed = {tool["name"]: tool for tool in answer["tools"]}
    assert sorted(listed) == sorted(catalog.names())
    records = [CallRecord(r["name"], r["accepted"], r.get("isError", False), r.get("structured", False),
                          r.get("error") or r.get("text", "")) for r in answer["results"]]
    assert len(records) == len(calls)
    problems = [f"{name}: no example call" for name in missing]
    problems += problems_of(records, {name for name, tool in listed.items() if tool["hasOutputSchema"]})
    assert not problems, "\n".join(problems)


INSPECTOR_SAMPLE = ("py_check_syntax", "get_file_slice", "coding_execute_code", "find_symbol")
"""Tools with structured results (nullable fields among them), integer and multi-line arguments."""


@pytest.mark.npm
def test_the_inspector_cli_accepts_a_sample(tmp_path: Path, catalog: Catalog) -> None:
    inspector = node_tool("mcp-inspector")
    if inspector is None:
        pytest.skip("the MCP Inspector is not installed (scripts/test installs it with npm)")
    with contract_world(tmp_path) as world:
        server = [sys.executable, "-m", "codeward", "serve", str(world.project)]

        def inspect(*args: str) -> dict[str, Any]:
            done = subprocess.run([inspector, "--cli", *server, *args], capture_output=True, text=True,
                                  timeout=300, cwd=world.project, env=world.env)
            assert done.returncode == 0, done.stderr[-2000:]
            answer: dict[str, Any] = json.loads(done.stdout)
            return answer

        listed = inspect("--method", "tools/list")  # one request per run: it never lists again, so lean
        lean = {tool["name"] for tool in listed["tools"]}
        assert set(CORE_TOOLS) <= lean and len(lean) < 30, lean
        schemas = {spec.name: spec.output_schema for spec in catalog}  # unlisted tools are called by name
        for name in INSPECTOR_SAMPLE:
            spec = catalog.get(name)
            assert spec is not None and spec.examples
            example = world.arguments(catalog, name, spec.examples[0])
            pairs = [f"{key}={value if isinstance(value, str) else json.dumps(value)}"
                     for key, value in example.items()]
            answer = inspect("--method", "tools/call", "--tool-name", name, "--tool-arg", *pairs)
            assert answer.get("isError") is False, (name, answer)
            assert (answer.get("structuredContent") is not None) == (schemas[name] is not None), (name, answer)
