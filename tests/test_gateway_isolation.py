"""No upstream, and no client, can take the gateway down; what cannot be passed on is refused clearly.

An upstream's questions (elicitation, sampling, roots) and reports (log lines, progress) go to
the client of the call they belong to. Each test below makes one of them fail — the client's
callback raises, the client never declared the capability, the upstream sends something broken,
the gateway's policy refuses sampling, the transport cannot say which client a question is for —
and checks that the call ends with a clear error (or its result), that the next call works, and
that the gateway process is still there. Crashes run in both protocol eras: the handshake era
through the gateway over HTTP, 2026-07-28 through the gateway over stdio (where an input round
used to end the gateway process), the upstreams alternating between stdio and HTTP.

Also here, each a short session on the gateway served over HTTP: subscriptions (a resource update
reaches the subscribed client under the URI the gateway serves it by, in both eras), an
upstream's log line sent outside any call, the end of a URL elicitation announced, and a 2026-07-28
round whose state continues nothing.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from codeward.gateway.uris import expose_uri
from tests.fidelity_support import EVERYTHING, MODERN, PROBE, Heard, client, wait_for
from tests.process_support import background, codeward_http, free_port

pytestmark = [pytest.mark.anyio, pytest.mark.npm, pytest.mark.xdist_group("gateway-isolation"),
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
              pytest.mark.skipif(EVERYTHING is None, reason="npm test peers not installed (scripts/test)")]

QUESTIONS = {"elicitation": "form", "sampling": "sample", "roots": "roots"}
CALLBACKS = {"elicitation": "elicitation_callback", "sampling": "sampling_callback", "roots": "list_roots_callback"}


@pytest.fixture(scope="module")
def probe_http() -> Iterator[str]:
    port = free_port()
    with background([sys.executable, PROBE, "http", "--port", str(port)], port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def config(probe_http: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """probe over stdio and HTTP, the same HTTP one with sampling refused, server-everything over stdio."""
    path = tmp_path_factory.mktemp("isolation") / "gateway.toml"
    path.write_text("\n".join([
        "[mcp]", "native = false", "startup_wait = 60",
        "[mcp.servers.probe]", f"command = {json.dumps(sys.executable)}", f"args = {json.dumps([PROBE, 'stdio'])}",
        "timeout = 30",
        "[mcp.servers.remote]", f"url = {json.dumps(probe_http)}", "timeout = 30",
        "[mcp.servers.nosampling]", f"url = {json.dumps(probe_http)}", "sampling = false", "timeout = 30",
        "[mcp.servers.every]", f"command = {json.dumps(EVERYTHING)}", 'args = ["stdio"]', "timeout = 30",
    ]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def gateway_http(config: Path) -> Iterator[str]:
    with codeward_http("--config", str(config), "--yes", command="gateway", cwd=config.parent, timeout=120) as url:
        yield url


def _stdio(config: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "gateway", "--config", str(config),
                                                                "--yes"], cwd=str(config.parent), env=dict(os.environ))


async def _broken(*args: Any) -> Any:
    raise RuntimeError("the person closed the window")


def _leaves(error: BaseException) -> str:
    """Every message in an exception and the exceptions grouped in it."""
    if isinstance(error, BaseExceptionGroup):
        return " | ".join(_leaves(inner) for inner in error.exceptions)
    return str(error)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_a_failing_client_ends_only_its_own_call(era: str, config: Path, gateway_http: str) -> None:
    """Each kind fails in turn — the client's elicitation, sampling, roots, logging and progress callbacks
    raise — on an upstream over stdio and one over HTTP, and each time only that call is affected."""
    heard = Heard()

    async def failing_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.logs.append((str(params.level), params.logger, params.data))
        raise RuntimeError("the log window is gone")

    target: Any = gateway_http if era == "legacy" else _stdio(config)
    callbacks = {name: _broken for name in CALLBACKS.values()}
    with anyio.fail_after(120):
        async with Client(target, mode=era, read_timeout_seconds=60, logging_callback=failing_log,
                          log_level="debug" if era != "legacy" else None, **callbacks) as session:
            for upstream in ("probe", "remote"):
                await _fail_each_kind(session, era, upstream, heard)


async def _fail_each_kind(session: Client, era: str, upstream: str, heard: Heard) -> None:
    heard.logs.clear()
    heard.progress.clear()
    for kind, question in QUESTIONS.items():
        if era == "legacy":  # the client's error went back to the upstream, which says so
            answer = await session.call_tool(f"{upstream}__ask", {"kind": question})
            assert answer.is_error and "client error" in _text(answer), (kind, _text(answer))
        else:  # a 2026-07-28 client fails its own input round: the call ends on its side
            with pytest.raises(BaseException) as failed:
                await session.call_tool(f"{upstream}__ask", {"kind": question})
            assert "closed the window" in _leaves(failed.value), (kind, failed.value)
        again = await session.call_tool(f"{upstream}__several_texts", {})
        assert _text(again) == "part 1\npart 2\npart 3", kind
    logged = await session.call_tool(f"{upstream}__logs", {})
    assert _text(logged) == "logged" and len(heard.logs) == 4  # each log line reached the failing callback

    async def failing_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.progress.append(progress)
        raise RuntimeError("the progress bar is gone")

    stepped = await session.call_tool(f"{upstream}__steps", {"count": 5}, progress_callback=failing_progress)
    assert _text(stepped) == "5 steps" and heard.progress == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert _text(await session.call_tool(f"{upstream}__several_texts", {})).startswith("part 1")


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_an_upstream_sending_broken_frames_ends_nothing(era: str, gateway_http: str) -> None:
    """Malformed log and progress notifications, a question with broken parameters: each call still answers."""
    with anyio.fail_after(120):
        async with client(gateway_http, era) as session:
            for upstream in ("probe", "remote"):
                for kind in ("bad_log", "bad_progress"):
                    answer = await session.call_tool(f"{upstream}__misbehave", {"kind": kind})
                    assert _text(answer) == f"misbehaved: {kind}", _text(answer)
                broken = await session.call_tool(f"{upstream}__misbehave", {"kind": "bad_request"})
                assert _text(broken).startswith("client error -326"), _text(broken)  # refused, as a JSON-RPC error
                assert _text(await session.call_tool(f"{upstream}__several_texts", {})).startswith("part 1")


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_what_cannot_be_passed_on_is_refused_by_name_and_no_tool_vanishes(era: str, gateway_http: str) -> None:
    """A client without sampling, elicitation or roots, and a server whose sampling the policy refuses: the
    upstream is told why; every tool stays listed (server-everything's capability tools included)."""
    with anyio.fail_after(60):
        async with Client(gateway_http, mode=era, read_timeout_seconds=60) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"every__trigger-sampling-request", "every__trigger-elicitation-request",
                    "every__get-roots-list", "every__trigger-url-elicitation"} <= names
            for kind, question in QUESTIONS.items():
                answer = await session.call_tool("remote__ask", {"kind": question})
                assert answer.is_error and f"does not support {kind}" in _text(answer), _text(answer)
    with anyio.fail_after(60):
        async with client(gateway_http, era) as session:
            refused = await session.call_tool("nosampling__ask", {"kind": "sample"})
            assert refused.is_error and "sampling is turned off for server 'nosampling'" in _text(refused)
            allowed = await session.call_tool("remote__ask", {"kind": "sample"})
            assert "sampled: Hi?" in _text(allowed), _text(allowed)


async def test_a_question_that_could_be_any_clients_is_refused_not_guessed(gateway_http: str) -> None:
    """Two clients' calls on one stdio upstream: a question from it cannot name its call, so it goes to nobody
    (it could be the other client's), and the other client's call carries on unharmed."""
    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> Any:
        asked.append("B")
        raise AssertionError("B was asked a question of A's call")

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with client(gateway_http, "legacy", sampling_callback=sampling) as other, \
            client(gateway_http, "legacy") as session, anyio.create_task_group() as tg:
        done: list[str] = []

        async def long_call() -> None:
            result = await other.call_tool("probe__steps", {"count": 40, "delay": 0.05}, progress_callback=on_progress)
            done.append(_text(result))

        tg.start_soon(long_call)
        await wait_for(lambda: bool(progress), 30)
        answer = await session.call_tool("probe__ask", {"kind": "sample"})
        assert answer.is_error and "calls of several clients are running on server 'probe'" in _text(answer)
        await wait_for(lambda: bool(done), 30)
    assert done == ["40 steps"] and progress == [float(n) for n in range(1, 41)] and not asked


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_a_resource_update_reaches_who_subscribed(era: str, gateway_http: str) -> None:
    served = expose_uri("remote", "probe://docs/readme.md")
    assert served == "probe://remote/docs/readme.md"
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    with anyio.fail_after(60):
        async with Client(gateway_http, mode=era, message_handler=on_message) as session:
            listed = {str(resource.uri) for resource in (await session.list_resources()).resources}
            assert served in listed and "file://probe//srv/probe/notes.txt" in listed
            assert not any(uri.startswith("file:///") for uri in listed)  # no file of the gateway's own
            if era == "legacy":
                await session.subscribe_resource(served)
                await session.call_tool("remote__touch", {"uri": "probe://docs/readme.md"})
                await wait_for(lambda: served in updates)
            else:
                async with session.listen(resource_subscriptions=[served]) as events:
                    await session.call_tool("remote__touch", {"uri": "probe://docs/readme.md"})
                    event = await events.__anext__()
                    assert getattr(event, "uri", None) == served
            read = await session.read_resource(served)
            assert read.contents[0].uri == served and "hello" in getattr(read.contents[0], "text", "")


async def test_a_log_line_outside_any_call_reaches_handshake_sessions(gateway_http: str) -> None:
    heard = Heard()
    with anyio.fail_after(60):
        async with client(gateway_http, "legacy", heard) as session:
            await session.set_logging_level("warning")
            await session.call_tool("probe__log_later", {"text": "after the call"})
            await wait_for(lambda: ("warning", "probe__probe", "after the call") in heard.logs)


async def test_a_url_elicitation_finishing_reaches_handshake_sessions(gateway_http: str) -> None:
    finished: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            finished.append(message.params.elicitation_id)

    with anyio.fail_after(60):
        async with Client(gateway_http, mode="legacy", message_handler=on_message) as session:
            await session.list_tools()  # a session the gateway knows of
            await session.call_tool("remote__finish_url", {"id": "login-7"})
            await wait_for(lambda: finished == ["login-7"])


async def test_a_round_that_continues_nothing_is_told_so(gateway_http: str) -> None:
    """A 2026-07-28 round whose state names a request that is not waiting (it ended, or another replica
    holds it, or the handle is made up): a clear error, and the call does not run."""
    from codeward.serving.request_link import RoundState
    from tests.fidelity_support import RAW

    state = RoundState({"codeward.relay.1": {"action": "accept", "content": {"colour": "red"}}},
                       resume="made-up-handle").encode()
    request = types.CallToolRequest(params=types.CallToolRequestParams(
        name="remote__ask", arguments={"kind": "form"}, request_state=state))
    with anyio.fail_after(60):
        async with client(gateway_http, MODERN) as session:
            answer = await session.session.send_request(request, RAW)  # type: ignore[type-var]
    text = answer["content"][0]["text"]
    assert answer["isError"] and "no longer waiting here" in text and "Call the tool again" in text, text
