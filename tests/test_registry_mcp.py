"""The registry through real MCP sessions: directives as prompts, knowledge as resources, and the
lazy meta-tool mode in which four tools reach the whole catalog and the gateway's upstreams."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.engines.registry.settings import USER_DIR_ENV
from codeward.kernel.user_dirs import HOME_ENV
from tests.conftest import every_tool_env
from tests.registry_support import python_tool, write

pytestmark = pytest.mark.anyio
META_TOOLS = {"registry_search", "registry_load", "registry_execute", "registry_help"}


def _env(user_dir: Path) -> dict[str, str]:
    return every_tool_env(PYTHONUNBUFFERED="1", **{USER_DIR_ENV: str(user_dir),
                                                   HOME_ENV: str(user_dir.parent / "codeward-data")})


def _serve(root: Path, user_dir: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root), *extra],
                                 env=_env(user_dir))


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


DIRECTIVE = """---
description: Review a file for security problems
category: review
arguments:
  - name: path
    description: The file to review
    required: true
  - name: focus
    description: What to look at first
---
Review {{path}} for injection and path traversal. Start with {{focus}}. Keep {{unknown}} as written.
"""


async def test_directives_are_prompts_and_knowledge_items_are_resources(tmp_path: Path) -> None:
    root, user = tmp_path / "project", tmp_path / "home" / ".ai"
    write(root, ".ai/directives/security_review.md", DIRECTIVE)
    write(root, ".ai/directives/broken.md", "---\ndescription: [unclosed\n---\nbody\n")
    write(user, "directives/daily_standup.md", "---\ndescription: Summarize yesterday's work\n---\nList commits.\n")
    write(root, ".ai/knowledge/api_conventions.md", "---\ndescription: How our HTTP APIs are shaped\n---\n"
          "# API conventions\n\nPlural nouns, JSON bodies.\n")
    write(user, "knowledge/api_conventions.md", "---\ndescription: The user's older notes\n---\nShadowed.\n")
    write(user, "knowledge/shell_tips.md", "# Shell tips\n\nQuote your variables.\n")
    async with Client(_serve(root, user)) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"security_review", "daily_standup"}  # the invalid one is not offered
        review = prompts["security_review"]
        assert review.description == "Review a file for security problems"
        assert [(a.name, a.required) for a in review.arguments or []] == [("path", True), ("focus", False)]
        got = await client.get_prompt("security_review", {"path": "app.py", "focus": "SQL"})
        text = got.messages[0].content.text  # type: ignore[union-attr]
        assert text.startswith("Review app.py for injection") and "Start with SQL." in text
        assert "{{unknown}}" in text
        with pytest.raises(Exception, match="needs the argument"):
            await client.get_prompt("security_review", {})

        resources = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert {"registry://knowledge/api_conventions", "registry://knowledge/shell_tips"} <= set(resources)
        conventions = resources["registry://knowledge/api_conventions"]
        assert conventions.description == "How our HTTP APIs are shaped" and conventions.mime_type == "text/markdown"
        read = await client.read_resource("registry://knowledge/api_conventions")
        assert "Plural nouns, JSON bodies." in read.contents[0].text  # type: ignore[union-attr]
        tips = await client.read_resource("registry://knowledge/shell_tips")
        assert "Quote your variables." in tips.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(Exception, match="no knowledge named 'nope'"):
            await client.read_resource("registry://knowledge/nope")
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert "registry://knowledge/{name}" in templates

        write(root, ".ai/knowledge/fresh_note.md", "A note added while serving.\n")
        assert "registry://knowledge/fresh_note" in {str(r.uri) for r in (await client.list_resources()).resources}

        # Full mode lists every tool, and the registry tools reach them too.
        assert {"read_file", *META_TOOLS} <= {t.name for t in (await client.list_tools()).tools}
        found = _text(await client.call_tool("registry_search", {"query": "knowledge conventions read file"}))
        assert "api_conventions [knowledge, project]" in found and "read_file [tool, codeward, files]" in found
        read = await client.call_tool("registry_execute", {"name": "read_file",
                                                            "params": {"path": ".ai/knowledge/fresh_note.md"}})
        assert not read.is_error and "A note added while serving." in _text(read)


async def test_meta_mode_lists_four_tools_that_reach_the_whole_catalog(tmp_path: Path) -> None:
    root, user = tmp_path / "project", tmp_path / "home" / ".ai"
    write(root, "shapes.py", "class Circle:\n    def area(self, r):\n        return 3.14159 * r * r\n")
    write(root, ".ai/tools/double.py", python_tool(body="    return n * 2", params="n: int",
                                                    description="Double a number."))
    async with Client(_serve(root, user, "--meta")) as client:
        listed = (await client.list_tools()).tools
        assert {t.name for t in listed} == META_TOOLS
        # the hints as a client reads them (an absent hint has the protocol's default)
        hints = {t.name: {"read_only": t.annotations.read_only_hint is True,
                          "destructive": t.annotations.destructive_hint is not False,
                          "open_world": t.annotations.open_world_hint is not False}
                 for t in listed if t.annotations is not None}
        assert hints["registry_execute"] == {"read_only": False, "destructive": True, "open_world": True}
        assert not hints["registry_load"]["read_only"] and hints["registry_load"]["destructive"]
        assert hints["registry_search"]["read_only"]

        query = {"query": "python class function or method definition exactly as written"}
        found = _text(await client.call_tool("registry_search", query))
        assert "- py_get_definition [tool, codeward, python]" in found
        helped = _text(await client.call_tool("registry_help", {"name": "py_get_definition"}))
        assert '"path"' in helped and '"name"' in helped and "registry_execute" in helped
        ran = await client.call_tool("registry_execute", {"name": "py_get_definition",
                                                           "params": {"path": "shapes.py", "name": "Circle.area"}})
        assert not ran.is_error and "return 3.14159 * r * r" in _text(ran)
        planned = await client.call_tool("registry_execute", {"name": "py_get_definition", "dry_run": True,
                                                               "params": {"path": "shapes.py"}})
        assert "would refuse these params" in _text(planned) and "'name' is a required property" in _text(planned)
        refused = await client.call_tool("registry_execute", {"name": "read_file", "params": {"path": "../x"}})
        assert refused.is_error and "outside the workspace" in _text(refused)

        overview = _text(await client.call_tool("registry_help", {}))
        assert "python (" in overview and "py_get_definition" in overview and "files (" in overview

        alone = await client.call_tool("registry_execute", {"name": "double", "action": "sign"})
        assert alone.is_error and "signing double needs a person's approval" in _text(alone)
        assert "codeward sign double" in _text(alone)
        unsigned = await client.call_tool("registry_execute", {"name": "double", "params": {"n": 21}})
        assert unsigned.is_error and "double is not signed" in _text(unsigned)

        # Kiwi's names answer too, unlisted, as the same tools with the same checks
        assert _text(await client.call_tool("search", query)) == found
        assert _text(await client.call_tool("help", {"name": "py_get_definition"})) == helped
        loaded = _text(await client.call_tool("registry_load", {"name": "double"}))
        assert "Double a number." in loaded and _text(await client.call_tool("load", {"name": "double"})) == loaded
        again = await client.call_tool("execute", {"name": "double", "params": {"n": 21}})
        assert again.is_error and "double is not signed" in _text(again)
        outside = await client.call_tool("execute", {"name": "read_file", "params": {"path": "../x"}})
        assert outside.is_error and "outside the workspace" in _text(outside)
        assert {"search", "load", "execute", "help"}.isdisjoint(t.name for t in (await client.list_tools()).tools)

    asked: list[str] = []

    async def person_says_yes(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with Client(_serve(root, user, "--meta"), elicitation_callback=person_says_yes) as client:
        signed = await client.call_tool("registry_execute", {"name": "double", "action": "sign"})
        assert not signed.is_error, _text(signed)
        assert len(asked) == 1 and "sign tool double" in asked[0] and "file double.py" in asked[0]
        doubled = await client.call_tool("registry_execute", {"name": "double", "params": {"n": 21}})
        assert _text(doubled).startswith("42")


GATEWAY = """
import sys
from codeward.apps.cli.gateway import run_gateway_cli
sys.exit(run_gateway_cli(sys.argv[1], roots=[sys.argv[2]], meta=True))
"""


@pytest.mark.xdist_group("registry-gateway")
async def test_meta_mode_over_a_gateway_reaches_an_upstream_tool(tmp_path: Path) -> None:
    root, user = tmp_path / "project", tmp_path / "home" / ".ai"
    root.mkdir()
    config = tmp_path / "codeward.toml"
    config.write_text(f"""
[mcp]
auto_approve = ["time__*"]
native = true

[mcp.servers.time]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
timeout = 30
""")
    params = StdioServerParameters(command=sys.executable, args=["-c", GATEWAY, str(config), str(root)],
                                   env=_env(user))
    async with Client(params) as client:
        assert {t.name for t in (await client.list_tools()).tools} == META_TOOLS
        found = _text(await client.call_tool("registry_search", {"query": "current time in a timezone"}))
        assert "time__get_current_time [tool, gateway time]" in found
        helped = _text(await client.call_tool("registry_help", {"name": "time__get_current_time"}))
        assert "a tool of gateway server 'time'" in helped and "timezone" in helped
        ran = await client.call_tool("registry_execute", {"name": "time__get_current_time",
                                                           "params": {"timezone": "Europe/Paris"}})
        assert not ran.is_error, _text(ran)
        assert '"timezone": "Europe/Paris"' in _text(ran) and '"datetime"' in _text(ran)
        wrong = await client.call_tool("registry_execute", {"name": "time__get_current_time",
                                                             "params": {"timezone": "Mars/Olympus"}})
        assert wrong.is_error
        native = await client.call_tool("registry_execute", {"name": "list_directory", "params": {"path": "."}})
        assert not native.is_error
