"""A lean server through the official clients: it lists the core tools, and every other tool is one step away.

One ``codeward serve`` session per client path shares the checks: the Python SDK over stdio (handshake
era: ``notifications/tools/list_changed``; 2026-07-28: the ``subscriptions/listen`` stream), over HTTP
(a handshake-era session keeps what it enabled, a 2026-07-28 request names no session and uses
``call_tool``), and the TypeScript SDK over stdio. The operator's choices (``[server] toolsets``) are
checked on the listing the client gets.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from codeward.tools import CORE_TOOLS
from tests.process_support import codeward_http

pytestmark = pytest.mark.anyio
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A git project with one commit and one Python file."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text("def total(items):\n    return sum(items)\n", encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **GIT_ENV}
    for command in (["init", "-q"], ["add", "."], ["-c", "commit.gpgsign=false", "commit", "-qm", "first"]):
        subprocess.run(["git", *command], cwd=root, env=env, check=True)
    yield root


def serve(root: Path, *extra: str) -> StdioServerParameters:
    import os

    env = {**os.environ, "CODEWARD_USER_AI_DIR": str(root.parent / "user-ai")}
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root), *extra],
                                 env=env, cwd=str(root))


def text(result: types.CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


class Heard:
    """The ``tools/list_changed`` notifications a handshake-era client received."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.event.set()

    async def wait(self) -> int:
        with anyio.fail_after(30):
            await self.event.wait()
        self.event = anyio.Event()
        return self.count


async def names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def test_a_session_starts_lean_enables_a_toolset_hears_of_it_and_calls_a_new_tool(project: Path) -> None:
    heard = Heard()
    async with Client(serve(project), mode="legacy", message_handler=heard) as client:
        assert client.server_capabilities.tools.list_changed  # type: ignore[union-attr]
        assert await names(client) == set(CORE_TOOLS), "a fresh session lists the core tools and the discovery tools"

        overview = text(await client.call_tool("toolsets", {}))
        assert "- git (" in overview and "git_log" in overview and "python (" in overview
        described = await client.call_tool("toolsets", {"action": "describe", "names": ["git_log"]})
        assert not described.is_error and '"limit"' in text(described), "describe shows a tool's arguments"

        enabled = await client.call_tool("toolsets", {"action": "enable", "names": ["git"]})
        assert not enabled.is_error and "enabled git: git_status, git_log" in text(enabled)
        assert await heard.wait() == 1
        listed = await names(client)
        assert {"git_log", "git_show", "git_blame", "git_commit"} <= listed and "py_check_syntax" not in listed
        log = await client.call_tool("git_log", {"limit": 1})  # listed now: the client validates its result
        assert not log.is_error and log.structured_content is not None
        assert log.structured_content["commits"][0]["subject"] == "first"

        again = await client.call_tool("toolsets", {"action": "enable", "names": ["git"]})
        assert "already enabled: git" in text(again) and heard.count == 1, "nothing changed: nobody is told"

        # a tool of a toolset left disabled: by name, and through call_tool, the same answer
        direct = await client.call_tool("py_check_syntax", {"path": "app.py"})
        through = await client.call_tool("call_tool", {"name": "py_check_syntax", "arguments": {"path": "app.py"}})
        assert not direct.is_error and not through.is_error and text(direct) == text(through)
        # the approval layer sees the named tool: git_commit asks a person through call_tool too
        (project / "app.py").write_text("def total(items):\n    return sum(items) + 0\n", encoding="utf-8")
        commit = await client.call_tool("call_tool", {"name": "git_commit",
                                                      "arguments": {"message": "x", "paths": ["app.py"]}})
        assert commit.is_error and "needs a person's approval" in text(commit), text(commit)
        assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True,
                              text=True).stdout == " M app.py\n", "nothing was committed"

        disabled = await client.call_tool("toolsets", {"action": "disable", "names": ["git"]})
        assert "disabled git" in text(disabled) and await heard.wait() == 2
        assert await names(client) == set(CORE_TOOLS)


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("toolsets", {"action": "enable", "names": ["gti"]},
     ["no toolset named 'gti'", "Did you mean git? Toolsets: analysis,"]),
    ("toolsets", {"action": "enable", "names": ["git_log"]},
     ["no toolset named 'git_log'", "git_log is a tool: call_tool runs one without enabling its toolset"]),
    ("toolsets", {"action": "enable"}, ["enable needs names", '{"action": "enable", "names": [']),
    ("toolsets", {"action": "open", "names": ["git"]}, ["action"]),
    ("call_tool", {"name": "git_lgo"}, ["no tool named 'git_lgo'", "Did you mean git_log"]),
    ("call_tool", {"name": "git_log", "arguments": "limit=3"}, ["arguments must be an object of git_log's"]),
    ("call_tool", {"name": "git_log", "arguments": {"limt": 3}}, ["unknown argument 'limt'", "limit"]),
    ("call_tool", {"name": "toolsets"}, ["call_tool runs other tools; call toolsets directly"]),
    ("call_tool", {"tool": "git_log"}, ["unknown argument 'tool' of call_tool"]),
])
async def test_a_wrong_discovery_call_says_what_is_wrong_and_changes_nothing(project: Path, tool: str,
                                                                             arguments: dict[str, Any],
                                                                             expected: list[str]) -> None:
    heard = Heard()
    async with Client(serve(project), mode="legacy", message_handler=heard) as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, text(result)
        for words in expected:
            assert words in text(result), text(result)
        assert await names(client) == set(CORE_TOOLS) and heard.count == 0


async def test_hidden_seed_names_stay_callable_and_unlisted(project: Path) -> None:
    async with Client(serve(project)) as client:
        direct = await client.call_tool("code_review_file", {"path": "app.py"})
        through = await client.call_tool("call_tool", {"name": "code_review_file", "arguments": {"path": "app.py"}})
        assert not direct.is_error and not through.is_error, text(direct) + text(through)
        await client.call_tool("toolsets", {"action": "enable", "names": ["all"]})
        assert "code_review_file" not in await names(client)


async def test_a_2026_client_hears_of_its_toolsets_on_its_listen_stream(project: Path) -> None:
    async with Client(serve(project)) as client:
        assert client.protocol_version == "2026-07-28"
        assert await names(client) == set(CORE_TOOLS)
        async with client.listen(tools_list_changed=True) as stream:
            await client.call_tool("toolsets", {"action": "enable", "names": ["python"]})
            with anyio.fail_after(30):
                event = await stream.__anext__()
        assert "tools" in repr(event).lower()
        assert "py_check_syntax" in await names(client)


async def test_over_http_a_session_keeps_its_toolsets_and_a_2026_request_uses_call_tool(project: Path) -> None:
    with codeward_http(str(project), cwd=project) as url:
        heard = Heard()
        async with Client(url, mode="legacy", message_handler=heard) as first, \
                Client(url, mode="legacy") as second:
            await first.call_tool("toolsets", {"action": "enable", "names": ["git"]})
            await heard.wait()
            assert "git_log" in await names(first)
            assert await names(second) == set(CORE_TOOLS), "one session's toolsets are its own"
        async with Client(url) as modern:
            assert modern.protocol_version == "2026-07-28"
            refused = await modern.call_tool("toolsets", {"action": "enable", "names": ["git"]})
            assert refused.is_error and "names no session" in text(refused)
            assert 'Run their tools with call_tool, e.g. {"name": "git_log"' in text(refused)
            log = await modern.call_tool("call_tool", {"name": "git_log", "arguments": {"limit": 1}})
            assert not log.is_error and "first" in text(log)
            assert await names(modern) == set(CORE_TOOLS)


@pytest.mark.parametrize(("toolsets", "listed"), [
    ('["all"]', "every"), ('["core", "git"]', "core+git"), ('["git"]', "git"),
])
async def test_the_operator_chooses_what_is_listed(project: Path, toolsets: str, listed: str) -> None:
    (project / "codeward.toml").write_text(f"[server]\ntoolsets = {toolsets}\n", encoding="utf-8")
    from codeward.tools import default_catalog

    catalog = default_catalog()
    git = {spec.name for spec in catalog if spec.toolset == "git"}
    async with Client(serve(project)) as client:
        got = await names(client)
    every = {spec.name for spec in catalog if spec.toolset != "discovery"}
    expected = {"every": every, "core+git": set(CORE_TOOLS) | git, "git": git}[listed]
    assert got == expected


@pytest.mark.npm
def test_the_typescript_client_enables_a_toolset_and_calls_through(project: Path) -> None:
    from tests.conftest import REPO, node22_env
    from tests.contract_support import sdk_installed

    if not sdk_installed():
        pytest.skip("the TypeScript SDK is not installed (scripts/test installs tests/node with npm)")
    params = serve(project)
    plan = {"server": {"command": params.command, "args": params.args, "cwd": params.cwd, "env": params.env},
            "enable": "git", "call": {"name": "git_log", "arguments": {"limit": 1}},
            "through": {"name": "py_check_syntax", "arguments": {"path": "app.py"}}}
    script = REPO / "tests" / "node" / "lean_client.mjs"
    done = subprocess.run(["node", str(script)], input=json.dumps(plan), capture_output=True, text=True,
                          timeout=300, env=node22_env(), cwd=script.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["capabilities"]["tools"]["listChanged"] is True
    assert set(seen["before"]) == set(CORE_TOOLS)
    assert not seen["enabled"]["isError"] and seen["told"] == 1 and not seen["timedOut"]
    assert "git_log" in seen["after"] and "py_check_syntax" not in seen["after"]
    assert not seen["called"]["isError"] and seen["called"]["structured"]["commits"][0]["subject"] == "first"
    assert not seen["through"]["isError"] and "app.py" in seen["through"]["text"], seen["through"]
