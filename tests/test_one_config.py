"""One ``codeward.toml``, every surface: the same secret refused and the same native tools offered.

The configuration blacklists ``secret.txt``, keeps only the ``files`` toolset and serves the
native tools on the gateway under the alias ``cw``. Each surface is driven from outside, as
its users drive it: ``serve`` over stdio and streamable HTTP and ``gateway`` through the
official MCP Python client, ``codeward call`` (native and ``cw__…``) as a subprocess, and
``codeward ask`` against a real HTTP server speaking the OpenAI streaming protocol.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from codeward.tools import default_catalog
from tests.fake_openai import FakeOpenAI, text, tool_calls
from tests.gateway_support import PEER
from tests.process_support import background, free_port

pytestmark = pytest.mark.xdist_group("gateway")

SECRET = "TOP-SECRET-7f3a"
CONFIG = f"""
[server]
blacklist = ["secret.txt"]
toolsets = ["files"]

[mcp]
native = "cw"
startup_wait = 120

[mcp.servers.peer]
command = {json.dumps(sys.executable)}
args = [{json.dumps(PEER)}, "stdio"]
timeout = 120
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "codeward.toml").write_text(CONFIG, encoding="utf-8")
    (root / "secret.txt").write_text(f"the password is {SECRET}\n", encoding="utf-8")
    (root / "notes.txt").write_text("hello from the notes\n", encoding="utf-8")
    return root


def native_names() -> set[str]:
    """What the ``files`` toolset holds: the native list every surface must offer (and nothing else)."""
    names = set(default_catalog(["files"]).names())
    assert "read_file" in names and "find_symbol" not in names
    return names


def codeward(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeward", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _probe(client: Client, prefix: str = "") -> tuple[set[str], Any, Any]:
    """The listed names, then a read of the secret and of the notes, through one client session."""
    names = {tool.name for tool in (await client.list_tools()).tools}
    secret = await client.call_tool(f"{prefix}read_file", {"path": "secret.txt"})
    notes = await client.call_tool(f"{prefix}read_file", {"path": "notes.txt"})
    return names, secret, notes


def _assert_refused(secret: Any, notes: Any) -> None:
    assert secret.is_error and "blacklisted" in _text(secret), _text(secret)
    assert SECRET not in _text(secret)
    assert not notes.is_error and "hello from the notes" in _text(notes)


def test_serve_over_stdio(project: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve"], cwd=str(project),
                                    env=dict(os.environ))

    async def session() -> tuple[set[str], Any, Any]:
        async with Client(params) as client:
            return await _probe(client)

    names, secret, notes = anyio.run(session)
    assert names == native_names()
    _assert_refused(secret, notes)


@pytest.fixture
def serve_http(project: Path) -> Iterator[str]:
    port = free_port()
    with background([sys.executable, "-m", "codeward", "serve", "--http", "--port", str(port), "--no-auth"], port,
                    cwd=project, timeout=90):
        yield f"http://127.0.0.1:{port}/mcp"


def test_serve_over_http(serve_http: str) -> None:
    async def session() -> tuple[set[str], Any, Any]:
        async with Client(serve_http) as client:
            return await _probe(client)

    names, secret, notes = anyio.run(session)
    assert names == native_names()
    _assert_refused(secret, notes)


def test_gateway(project: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "gateway"], cwd=str(project),
                                    env=dict(os.environ))

    async def session() -> tuple[set[str], Any, Any]:
        async with Client(params) as client:
            return await _probe(client, "cw__")

    names, secret, notes = anyio.run(session)
    native = {name.removeprefix("cw__") for name in names if name.startswith("cw__")}
    assert native == native_names(), "the gateway's native part is the configured catalog, under the alias"
    assert "peer__echo" in names and names == {f"cw__{n}" for n in native} | {n for n in names if "peer__" in n}
    _assert_refused(secret, notes)


def test_call_native_and_aliased(project: Path) -> None:
    for name in ("read_file", "cw__read_file"):
        refused = codeward("call", name, "path=secret.txt", cwd=project)
        assert refused.returncode == 1 and "blacklisted" in refused.stderr, (name, refused.stderr)
        assert SECRET not in refused.stdout + refused.stderr
        read = codeward("call", name, "path=notes.txt", cwd=project)
        assert read.returncode == 0 and "hello from the notes" in read.stdout, (name, read.stderr)
    outside = codeward("call", "find_symbol", "name=x", cwd=project)
    assert outside.returncode == 2 and "unknown tool 'find_symbol'" in outside.stderr, "the toolset filter holds"
    listed = json.loads(codeward("tools", "--json", cwd=project).stdout)
    assert {tool["name"] for tool in listed} == native_names()


def test_ask(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"  # codeward's per-user data, which no tool may reach: not around the project
    env = {**os.environ, "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": "sk-test", "CODEWARD_HOME": str(home)}
    script = [tool_calls(("read_file", '{"path": "secret.txt"}')), text("I cannot read it.")]
    with FakeOpenAI(script) as fake:
        done = codeward("ask", "what is in secret.txt?", cwd=project, env={**env, "OPENAI_BASE_URL": fake.base_url})
    assert done.returncode == 0, done.stderr
    offered = {tool["function"]["name"] for tool in fake.requests[0]["tools"]}
    assert {name for name in offered if "__" not in name} == native_names()
    assert "peer__echo" in offered, "the agent reaches the configured upstream servers too"
    told = fake.messages(1)[-1]
    assert told["role"] == "tool" and "blacklisted" in told["content"] and SECRET not in json.dumps(fake.requests)
    assert SECRET not in done.stdout + done.stderr


def test_checkpoints_and_kept_outputs_are_set_in_the_file(tmp_path: Path) -> None:
    """``[checkpoints]`` and ``[server] spill_keep`` (code-only settings before) work from codeward.toml,
    on the command line and through a server alike; a bad value is refused with the key named."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "big.txt").write_text("row of text\n" * 2_000, encoding="utf-8")
    for number in range(100):
        (root / f"listed_file_{number:03}.txt").write_text("x\n", encoding="utf-8")
    (root / "codeward.toml").write_text("[server]\noutput_cap_tokens = 100\nspill_keep = 1\n\n"
                                        "[checkpoints]\nenabled = false\n", encoding="utf-8")
    wrote = codeward("call", "write_file", "path=new.txt", "content=hi", cwd=root)
    assert wrote.returncode == 0, wrote.stderr
    undo = codeward("undo", cwd=root)
    assert undo.returncode != 0 and "checkpoints are off" in undo.stderr + undo.stdout, undo.stderr
    assert not (root / ".codeward" / "checkpoints").exists()
    for _ in range(2):  # read_file pages at the cap itself; a listing is cut and saved whole
        listed = codeward("call", "get_tree", "path=.", cwd=root)
        assert listed.returncode == 0 and "output truncated" in listed.stdout, listed.stderr
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve"], cwd=str(root),
                                    env=dict(os.environ))

    async def session() -> str:
        async with Client(params) as client:
            return _text(await client.call_tool("search_text", {"pattern": "row", "path": "big.txt"}))

    assert "output truncated" in anyio.run(session)
    assert len(list((root / ".codeward" / "outputs").glob("*.txt"))) == 1, "spill_keep = 1 keeps the newest only"
    (root / "codeward.toml").write_text("[checkpoints]\nkeep = 0\n", encoding="utf-8")
    refused = codeward("call", "read_file", "path=big.txt", cwd=root)
    assert refused.returncode == 2 and "[checkpoints] keep must be an integer of at least 1" in refused.stderr, \
        refused.stderr


def test_every_environment_override_reaches_a_context_built_without_a_configuration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A context built by hand (a test, a script) reads a table missing from its services as its defaults
    with the environment's overrides: every override variable reaches ``ctx.services.get(Table)``."""
    from codeward.config.environment import OVERRIDES
    from codeward.config.root import Config
    from codeward.kernel.context import Services

    for override in OVERRIDES:
        table = type(getattr(Config(), override.table))
        value = "1" if override.boolean else {("sandbox", "backend"): "process", ("state", "url"): "memory://",
                                              ("coding", "model_base_url"): "http://127.0.0.1:9/v1"}.get(
            (override.table, override.key), "/made-up/by-the-test")
        monkeypatch.setenv(override.variable, value)
        read = getattr(Services().get(table), override.key)
        assert str(read) in (value, "True"), f"{override.variable} does not reach [{override.table}] {override.key}"
        monkeypatch.delenv(override.variable)
