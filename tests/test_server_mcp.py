"""The server through real MCP sessions: the official client over stdio and streamable HTTP."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters

from codeward.tools import CORE_TOOLS
from tests.process_support import codeward_http

pytestmark = pytest.mark.anyio

FILE_TOOLS = {"read_file", "write_file", "list_directory", "search_files", "get_file_slice",
              "set_file_slice", "edit_file", "get_tree"}


def _project(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes.md").write_text("# Notes\nalpha\nbeta\n")
    (root / ".env").write_text("SECRET=1\n")


def _stdio(root: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root), *extra],
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.fixture
def http_server(root: Path) -> Iterator[str]:
    _project(root)
    with codeward_http(str(root), "--token-env", "CW_TOKEN", env={"CW_TOKEN": "s3cret-token"}, timeout=20) as url:
        yield url


@asynccontextmanager
async def _http_client(url: str, token: str) -> AsyncIterator[Client]:
    from mcp.client.streamable_http import streamable_http_client

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _exercise_file_tools(client: Client, root: Path) -> None:
    listed = await client.list_tools()
    names = {tool.name for tool in listed.tools}
    assert names >= FILE_TOOLS & set(CORE_TOOLS), "lean: the core file tools listed, the others called by name"
    read = next(t for t in listed.tools if t.name == "read_file")
    assert read.annotations is not None and read.annotations.read_only_hint is True
    assert read.input_schema["required"] == ["path"]

    result = await client.call_tool("read_file", {"path": "src/app.py"})
    assert not result.is_error and _text(result) == "def main():\n    return 1\n"
    result = await client.call_tool("list_directory", {"path": "."})
    assert "notes.md" in _text(result) and ".env" not in _text(result)
    result = await client.call_tool("search_files", {"path": ".", "pattern": "*.py"})
    assert _text(result).strip() == "src/app.py"
    result = await client.call_tool("get_file_slice", {"path": "notes.md", "start_line": 2, "end_line": 3})
    assert _text(result) == "alpha\nbeta\n"
    result = await client.call_tool("set_file_slice", {"path": "notes.md", "start_line": 2, "end_line": 2,
                                                       "new_content": "ALPHA"})
    assert not result.is_error
    result = await client.call_tool("edit_file", {"path": "notes.md", "old_string": "beta", "new_string": "gamma"})
    assert not result.is_error
    assert (root / "notes.md").read_text() == "# Notes\nALPHA\ngamma\n"
    result = await client.call_tool("write_file", {"path": "new/file.txt", "content": "hi\n"})
    assert not result.is_error and (root / "new" / "file.txt").read_text() == "hi\n"
    result = await client.call_tool("get_tree", {"path": ".", "max_depth": 2})
    assert "app.py" in _text(result) and "file.txt" in _text(result)

    denied = await client.call_tool("read_file", {"path": "../../etc/passwd"})
    assert denied.is_error and "outside the workspace" in _text(denied)
    wrong_type = await client.call_tool("get_file_slice", {"path": "notes.md", "start_line": "x", "end_line": 2})
    assert wrong_type.is_error and "start_line" in _text(wrong_type) and "integer" in _text(wrong_type)
    unknown = await client.call_tool("read_fil", {"path": "x"})
    assert unknown.is_error and "read_file" in _text(unknown)


async def test_stdio_session_lists_and_calls_every_file_tool(root: Path) -> None:
    _project(root)
    async with Client(_stdio(root)) as client:
        await _exercise_file_tools(client, root)


async def test_stdio_resources_list_read_and_template(root: Path) -> None:
    _project(root)
    async with Client(_stdio(root)) as client:
        resources = await client.list_resources()
        names = {r.name for r in resources.resources}
        assert {"src/app.py", "notes.md"} <= names and ".env" not in names
        app = next(r for r in resources.resources if r.name == "src/app.py")
        content = await client.read_resource(str(app.uri))
        assert content.contents[0].text == "def main():\n    return 1\n"  # type: ignore[union-attr]
        templates = await client.list_resource_templates()
        template = templates.resource_templates[0].uri_template
        assert template == f"file://{root.resolve()}/{{path}}"
        filled = await client.read_resource(template.replace("{path}", "notes.md"))
        assert "alpha" in filled.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(Exception, match="outside the workspace"):
            await client.read_resource("file:///etc/passwd")


async def test_stdio_completion_suggests_paths(root: Path) -> None:
    from mcp_types import ResourceTemplateReference

    _project(root)
    async with Client(_stdio(root)) as client:
        ref = ResourceTemplateReference(type="ref/resource", uri=f"file://{root.resolve()}/{{path}}")
        done = await client.complete(ref, {"name": "path", "value": "sr"})
        assert done.completion.values == ["src/"]
        deeper = await client.complete(ref, {"name": "path", "value": "src/a"})
        assert deeper.completion.values == ["src/app.py"]


async def test_progress_notifications_on_a_long_search(root: Path) -> None:
    for i in range(30):
        folder = root / f"d{i:02}"
        folder.mkdir()
        for j in range(110):
            (folder / f"f{j:03}.txt").write_bytes(b"")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(_stdio(root)) as client:
        result = await client.call_tool("search_files", {"path": ".", "pattern": "*.py"},
                                        progress_callback=on_progress)
    assert not result.is_error
    assert [p for p, _, _ in seen] == [1000.0, 2000.0, 3000.0]
    assert all(msg and "scanned" in msg for _, _, msg in seen)


async def test_http_session_with_bearer_token(http_server: str, root: Path) -> None:
    async with _http_client(http_server, "s3cret-token") as client:
        await _exercise_file_tools(client, root)


async def test_http_refuses_missing_or_wrong_token_and_foreign_host(http_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient() as http:
        missing = await http.post(http_server, json=body, headers=headers)
        assert missing.status_code == 401 and "bearer token" in missing.json()["message"]
        wrong = await http.post(http_server, json=body, headers={**headers, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        foreign = await http.post(http_server, json=body, headers={**headers, "Authorization": "Bearer s3cret-token",
                                                                    "Host": "evil.example:80"})
        assert foreign.status_code in (400, 403, 421)


async def test_roots_come_from_the_client_and_follow_list_changed(tmp_path: Path) -> None:
    from mcp_types import ListRootsResult, Root

    folders = {}
    for name in ("cwd", "first", "second"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "who.txt").write_text(name)
    current = {"root": folders["first"]}

    async def list_roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=f"file://{current['root']}", name="project")])

    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve"], cwd=str(folders["cwd"]))
    async with Client(params, list_roots_callback=list_roots) as modern:
        assert _text(await modern.call_tool("read_file", {"path": "who.txt"})) == "first"
    # roots/list_changed exists only in the initialize-handshake era of the protocol.
    async with Client(params, list_roots_callback=list_roots, mode="legacy") as client:
        first = await client.call_tool("read_file", {"path": "who.txt"})
        assert _text(first) == "first"
        current["root"] = folders["second"]
        await client.send_roots_list_changed()
        second = await client.call_tool("read_file", {"path": "who.txt"})
        assert _text(second) == "second"
        escaped = await client.call_tool("read_file", {"path": str(folders["first"] / "who.txt")})
        assert escaped.is_error and "outside the workspace" in _text(escaped)


async def test_over_http_client_roots_do_not_move_the_workspace(tmp_path: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import ListRootsResult, Root

    for name in ("served", "elsewhere"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "who.txt").write_text(name)

    async def list_roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=f"file://{tmp_path / 'elsewhere'}", name="elsewhere")])

    with codeward_http(cwd=tmp_path / "served", timeout=20) as url:
        for mode in ("legacy", "2026-07-28"):
            async with httpx.AsyncClient() as http, Client(streamable_http_client(url, http_client=http),
                                                           list_roots_callback=list_roots, mode=mode) as client:
                assert _text(await client.call_tool("read_file", {"path": "who.txt"})) == "served", mode
                moved = await client.call_tool("read_file", {"path": str(tmp_path / "elsewhere" / "who.txt")})
                assert moved.is_error and "outside the workspace" in _text(moved), mode


async def test_without_client_roots_the_current_directory_is_served(tmp_path: Path) -> None:
    (tmp_path / "who.txt").write_text("cwd")
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve"], cwd=str(tmp_path))
    async with Client(params) as client:
        assert _text(await client.call_tool("read_file", {"path": "who.txt"})) == "cwd"


async def test_server_metrics_count_the_session_calls(root: Path) -> None:
    _project(root)
    async with Client(_stdio(root)) as client:
        for _ in range(3):
            await client.call_tool("read_file", {"path": "notes.md"})
        await client.call_tool("read_file", {"path": "missing.txt"})
        metrics = _text(await client.call_tool("get_server_metrics", {}))
    assert "Calls: 4 total, 1 errors" in metrics
    assert "read_file" in metrics


async def test_web_settings_from_codeward_toml_reach_the_tools(root: Path) -> None:
    from tests.fixtures.web.server import serve_fixtures

    with serve_fixtures() as (base_url, seen):
        refused_params = _stdio(root)
        async with Client(refused_params) as client:
            refused = await client.call_tool("fetch_url", {"url": f"{base_url}/article"})
        assert refused.is_error and not seen
        (root / "codeward.toml").write_text('[web]\nallow_hosts = ["127.0.0.1"]\n')
        allowed = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                        cwd=str(root))
        async with Client(allowed) as client:
            fetched = await client.call_tool("fetch_url", {"url": f"{base_url}/article"})
    assert not fetched.is_error and "/article" in seen
    assert "#" in _text(fetched)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_gateway_approval_by_elicitation_in_both_protocol_eras(root: Path, mode: str) -> None:
    """Modern sessions answer through an input round, handshake ones through elicitation/create."""
    from mcp_types import ElicitResult

    (root / "codeward.toml").write_text(
        f'[mcp.servers.time]\ncommand = "{sys.executable}"\nargs = ["-m", "mcp_server_time"]\n')
    asked: list[str] = []
    verdict = {"approve": True}

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": verdict["approve"]})

    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "gateway"], cwd=str(root))
    async with Client(params, elicitation_callback=elicit, mode=mode) as client:
        approved = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        verdict["approve"] = False
        denied = await client.call_tool("time__get_current_time", {"timezone": "Europe/Paris"})
    assert not approved.is_error and '"timezone": "UTC"' in _text(approved)
    assert denied.is_error and "not approved" in _text(denied)
    assert len(asked) == 2 and "time__get_current_time" in asked[0]


async def test_a_file_that_is_not_utf8_does_not_break_the_session(root: Path) -> None:
    (root / "legacy.txt").write_bytes(b"caf\xe9 na\xefve\n")  # Latin-1: read in it
    (root / "stray.txt").write_bytes("café \xff\n".encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    with anyio.fail_after(60):  # an invalid JSON reply is dropped by the client: the call would never end
        async with Client(_stdio(root)) as client:
            result = await client.call_tool("read_file", {"path": "legacy.txt"})
            assert not result.is_error and _text(result).startswith("café naïve\n\n[encoding: cp1252 (detected")
            resource = await client.read_resource(f"file://{root.resolve()}/legacy.txt")
            assert resource.contents[0].text == "café naïve\n"  # type: ignore[union-attr]
            stray = await client.call_tool("read_file", {"path": "stray.txt"})  # a stray byte: U+FFFD on the wire
            assert not stray.is_error and _text(stray).startswith("café \ufffd\n\n[the file is not valid UTF-8")
            resource = await client.read_resource(f"file://{root.resolve()}/stray.txt")
            assert resource.contents[0].text == "café \ufffd\n"  # type: ignore[union-attr]
