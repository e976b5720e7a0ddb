"""The tool loop against a real local server speaking the OpenAI streaming protocol."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codeward.apps.agent.conversation import Conversation, Turn
from codeward.apps.agent.loop import LoopSettings, ToolLoop
from codeward.config.model_profile import ModelProfile
from codeward.engines.llm.calls import ToolCall
from codeward.engines.llm.client import ModelClient
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.surface import CatalogSurface, CompositeSurface
from codeward.kernel.workspace import Workspace
from tests.fake_openai import FakeOpenAI, Reply, text, tool_calls

pytestmark = pytest.mark.anyio


@dataclass
class Recorder:
    events: list[tuple[str, Any]] = field(default_factory=list)

    def text(self, delta: str) -> None:
        self.events.append(("text", delta))

    def notice(self, message: str) -> None:
        self.events.append(("notice", message))

    def error(self, message: str) -> None:
        self.events.append(("error", message))

    def tool_begin(self, call: ToolCall) -> None:
        self.events.append(("begin", call.name))

    def tool_end(self, call: ToolCall, content: str, is_error: bool) -> None:
        self.events.append(("end", (call.name, is_error)))

    def response_end(self) -> None:
        self.events.append(("done", None))

    def of(self, kind: str) -> list[Any]:
        return [payload for k, payload in self.events if k == kind]


@pytest.fixture
def project(root: Path) -> Path:
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    return root


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    """Close every model client a test opened, on the test's own event loop."""
    yield
    while OPEN_CLIENTS:
        await OPEN_CLIENTS.pop().close()


OPEN_CLIENTS: list[ModelClient] = []


def _client(base_url: str) -> ModelClient:
    client = ModelClient(ModelProfile(name="fake", base_url=base_url, model="fake-model"), environ={})
    OPEN_CLIENTS.append(client)
    return client


def make_loop(fake: FakeOpenAI, project: Path, catalog: Catalog, *, tools: bool = True,
              settings: LoopSettings | None = None, use_tool_role: bool = True) -> tuple[ToolLoop, Recorder]:
    client = _client(fake.base_url)
    surface = CatalogSurface(catalog) if tools else CompositeSurface([])
    recorder = Recorder()
    workspace = Workspace.create([project])
    loop = ToolLoop(client, surface, Conversation("You are a test.", use_tool_role=use_tool_role), recorder,
                    lambda: ToolContext(workspace), settings)
    return loop, recorder


async def test_plain_text_answer(project: Path, catalog: Catalog) -> None:
    with FakeOpenAI([text("Hello there, friend.")]) as fake:
        loop, view = make_loop(fake, project, catalog)
        result = await loop.run("hi")
    assert result.ok and result.text == "Hello there, friend." and result.rounds == 1
    assert "".join(view.of("text")) == "Hello there, friend."
    assert loop.conversation.turns[-1] == Turn("assistant", "Hello there, friend.")
    sent = fake.requests[0]
    assert sent["stream"] is True and sent["model"] == "fake-model"
    assert {t["function"]["name"] for t in sent["tools"]} >= {"read_file", "edit_file"}
    assert sent["messages"] == [{"role": "system", "content": "You are a test."}, {"role": "user", "content": "hi"}]


async def test_tools_field_is_omitted_when_no_tools(project: Path, catalog: Catalog) -> None:
    with FakeOpenAI([text("ok")]) as fake:
        loop, _ = make_loop(fake, project, catalog, tools=False)
        await loop.run("hi")
    assert "tools" not in fake.requests[0]


async def test_one_call_with_arguments_split_across_chunks(project: Path, catalog: Catalog) -> None:
    replies = [tool_calls(("read_file", json.dumps({"path": "a.txt"})), preface="Let me look.", pieces=8),
               text("It says alpha.")]
    with FakeOpenAI(replies) as fake:
        loop, view = make_loop(fake, project, catalog)
        result = await loop.run("what is in a.txt?")
    assert result.ok and result.tool_calls == 1 and result.text == "It says alpha."
    second = fake.messages(1)
    assistant = second[-2]
    assert assistant["content"] == "Let me look."
    assert assistant["tool_calls"] == [{"id": "call_0", "type": "function",
                                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_0", "content": "alpha\n"}
    assert view.of("begin") == ["read_file"] and view.of("end") == [("read_file", False)]


async def test_several_parallel_calls_each_get_an_answer_in_order(project: Path, catalog: Catalog) -> None:
    replies = [tool_calls(("read_file", '{"path": "a.txt"}'), ("read_file", '{"path": "b.txt"}'),
                          ("get_file_slice", '{"path": "b.txt", "start_line": 1, "end_line": 1}')),
               text("done")]
    with FakeOpenAI(replies) as fake:
        loop, _ = make_loop(fake, project, catalog)
        result = await loop.run("read both")
    tool_turns = [m for m in fake.messages(1) if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_turns] == [
        ("call_0", "alpha\n"), ("call_1", "beta\n"), ("call_2", "beta\n")]
    assert result.tool_calls == 3


async def test_missing_index_is_treated_as_zero_and_said_once(project: Path, catalog: Catalog) -> None:
    replies = [tool_calls(("read_file", '{"path": "a.txt"}'), with_index=False), text("ok")]
    with FakeOpenAI(replies) as fake:
        loop, view = make_loop(fake, project, catalog)
        result = await loop.run("go")
    assert result.ok and fake.messages(1)[-1]["content"] == "alpha\n"
    notices = [n for n in view.of("notice") if "without an index" in n]
    assert len(notices) == 1


async def test_malformed_arguments_are_answered_and_not_run(project: Path, catalog: Catalog) -> None:
    replies = [tool_calls(("write_file", '{"path": "x.txt", "content": "oops"')), text("sorry")]
    with FakeOpenAI(replies) as fake:
        loop, view = make_loop(fake, project, catalog)
        await loop.run("write")
    answer = fake.messages(1)[-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_0"
    assert answer["content"].startswith("[codeward] tool arguments not parseable as JSON:")
    assert not (project / "x.txt").exists()
    assert view.of("end") == [("write_file", True)]


async def test_unknown_tool_is_answered_with_the_closest_names(project: Path, catalog: Catalog) -> None:
    replies = [tool_calls(("read_fiel", '{"path": "a.txt"}')), text("retrying")]
    with FakeOpenAI(replies) as fake:
        loop, _ = make_loop(fake, project, catalog)
        await loop.run("go")
    answer = fake.messages(1)[-1]
    assert "unknown tool 'read_fiel'" in answer["content"] and "read_file" in answer["content"]


async def test_http_400_shows_status_and_body(project: Path, catalog: Catalog) -> None:
    body = '{"error": {"message": "tools.0.custom.name: String should match pattern"}}'
    with FakeOpenAI([Reply(status=400, body=body)]) as fake:
        loop, view = make_loop(fake, project, catalog)
        result = await loop.run("hi")
    assert result.failure is not None and "HTTP 400" in result.failure and "should match pattern" in result.failure
    assert view.of("error") == [result.failure]


async def test_error_object_inside_a_200_stream_ends_the_turn_cleanly(project: Path, catalog: Catalog) -> None:
    reply = text("partial answ")
    reply.chunks = reply.chunks[:-1]
    reply.error_event = {"message": "slot unavailable", "type": "server_error"}
    with FakeOpenAI([reply, text("second try works")]) as fake:
        loop, view = make_loop(fake, project, catalog)
        failed = await loop.run("hi")
        assert failed.failure and "mid-stream" in failed.failure and "slot unavailable" in failed.failure
        assert view.of("error") == [failed.failure] and view.events[-1] == ("done", None)
        assert loop.conversation.turns[-1] == Turn("assistant", "partial answ")
        again = await loop.run("try again")
    assert again.ok and again.text == "second try works"


async def test_runaway_loop_stops_at_the_depth_limit(project: Path, catalog: Catalog) -> None:
    call = tool_calls(("read_file", '{"path": "a.txt"}'))
    with FakeOpenAI([call], repeat_last=True) as fake:
        loop, view = make_loop(fake, project, catalog, settings=LoopSettings(max_tool_depth=3))
        result = await loop.run("loop forever")
    assert result.hit_depth_limit and result.tool_calls == 3 and result.rounds == 4
    assert any("depth limit reached (3 rounds)" in n for n in view.of("notice"))
    assert loop.conversation.pending_call_ids() == set()


async def test_use_tool_role_false_prefixes_results_on_a_user_turn(project: Path, catalog: Catalog) -> None:
    replies = [tool_calls(("read_file", '{"path": "a.txt"}')), text("alpha it is")]
    with FakeOpenAI(replies) as fake:
        loop, _ = make_loop(fake, project, catalog, use_tool_role=False)
        await loop.run("read a")
    second = fake.messages(1)
    assert all(m["role"] != "tool" and "tool_calls" not in m for m in second)
    assert second[-1] == {"role": "user", "content": "[tool: read_file]\nalpha\n"}
    assert second[-2]["role"] == "assistant" and "[calling read_file(" in second[-2]["content"]


async def test_text_tool_calls_option_recognises_bare_json(project: Path, catalog: Catalog) -> None:
    bare = text('{"name": "read_file", "arguments": {"path": "b.txt"}}')
    with FakeOpenAI([bare, text("beta")]) as fake:
        loop, view = make_loop(fake, project, catalog, settings=LoopSettings(text_tool_calls=True))
        result = await loop.run("read b")
    assert result.text == "beta" and fake.messages(1)[-1]["content"] == "beta\n"
    assert view.of("notice") == ["treating the reply as a call to read_file"]
    with FakeOpenAI([text('{"name": "nope", "arguments": {}}')]) as fake:
        loop, _ = make_loop(fake, project, catalog, settings=LoopSettings(text_tool_calls=True))
        assert (await loop.run("x")).text == '{"name": "nope", "arguments": {}}'


async def test_unreachable_server_is_a_clear_failure(project: Path, catalog: Catalog) -> None:
    client = _client("http://127.0.0.1:9/v1")
    view = Recorder()
    loop = ToolLoop(client, CatalogSurface(catalog), Conversation(), view,
                    lambda: ToolContext(Workspace.create([project])))
    result = await loop.run("hi")
    assert result.failure and "cannot reach the model server at http://127.0.0.1:9/v1" in result.failure


async def test_a_tool_turn_without_a_pending_call_fails_loudly() -> None:
    conversation = Conversation()
    conversation.append(Turn("user", "hi"))
    with pytest.raises(AssertionError, match="answers no pending assistant call"):
        conversation.append(Turn("tool", "result", tool_call_id="call_x"))


# -- loop hygiene ----------------------------------------------------------------------------------


async def test_an_identical_failing_call_is_not_sent_again_and_the_loop_stops(project: Path, catalog: Catalog) -> None:
    again = tool_calls(("read_file", '{"path": "missing.txt"}'))
    with FakeOpenAI([again], repeat_last=True) as fake:
        loop, view = make_loop(fake, project, catalog, settings=LoopSettings(max_tool_depth=8))
        result = await loop.run("read missing.txt")
    assert view.of("begin") == ["read_file"], "the failing call ran once"
    first_error = fake.messages(1)[-1]["content"]
    told = fake.messages(2)[-1]["content"]
    assert told.startswith("[codeward] not run again: read_file was already called with exactly these arguments")
    assert first_error in told and "Do not call it like this again" in told
    brief = "[codeward] not run again: the same failing call again; see its earlier result."
    assert fake.messages(3)[-1]["content"] == brief
    assert len(fake.requests) == 4 and not result.hit_depth_limit
    assert result.failure is not None and result.failure.startswith(
        "stopped: the model repeated a call that had failed 3 times (read_file({\"path\":\"missing.txt\"}): ")
    assert view.of("error") == [result.failure]
    assert loop.conversation.pending_call_ids() == set(), "every call was answered"


async def test_the_same_call_with_other_arguments_or_key_order_is_judged_by_value(project: Path,
                                                                                  catalog: Catalog) -> None:
    replies = [tool_calls(("get_file_slice", '{"path": "nope.txt", "start_line": 1, "end_line": 1}')),
               tool_calls(("get_file_slice", '{"end_line": 1, "start_line": 1,  "path": "nope.txt"}')),
               tool_calls(("get_file_slice", '{"path": "a.txt", "start_line": 1, "end_line": 1}')),
               text("alpha")]
    with FakeOpenAI(replies) as fake:
        loop, view = make_loop(fake, project, catalog)
        result = await loop.run("read")
    assert result.ok and view.of("begin") == ["get_file_slice", "get_file_slice"]
    assert fake.messages(2)[-1]["content"].startswith("[codeward] not run again:"), "same values, other order"
    assert "alpha" in fake.messages(3)[-1]["content"]


async def test_output_the_server_could_not_parse_is_reported_with_the_raw_text(project: Path,
                                                                               catalog: Catalog) -> None:
    reply = text("```json", pieces=1)
    reply.chunks = reply.chunks[:-1]
    reply.error_event = {"code": 500, "message": "The model produced output that does not match the expected "
                         "peg-native format", "type": "server_error"}
    with FakeOpenAI([reply, text("second try works")]) as fake:
        loop, view = make_loop(fake, project, catalog)
        failed = await loop.run("read a.txt")
        assert failed.unparsed and failed.failure is not None
        assert "could not parse as text or a tool call" in failed.failure
        assert "peg-native format" in failed.failure and "'```json'" in failed.failure
        assert view.of("error") == [failed.failure]
        assert all(turn.role != "assistant" for turn in loop.conversation.turns), "raw fragments are not context"
        again = await loop.run("try again")
    assert again.ok and again.text == "second try works"
    assert [m["role"] for m in fake.messages(1)] == ["system", "user", "user"]


async def test_use_tool_role_false_keeps_roles_alternating_over_several_rounds(project: Path,
                                                                               catalog: Catalog) -> None:
    replies = [tool_calls(("read_file", '{"path": "a.txt"}')), tool_calls(("read_file", '{"path": "b.txt"}')),
               text("alpha and beta")]
    with FakeOpenAI(replies) as fake:
        loop, _ = make_loop(fake, project, catalog, use_tool_role=False)
        result = await loop.run("read a then b")
        follow = FakeOpenAI([text("bye")])
    assert result.ok
    third = fake.messages(2)
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert third[3]["content"] == "[tool: read_file]\nalpha\n" and third[5]["content"] == "[tool: read_file]\nbeta\n"
    with follow:
        loop.model = _client(follow.base_url)
        await loop.run("thanks")
    roles = [m["role"] for m in follow.messages(0)]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert all(a != b for a, b in itertools.pairwise(roles))



async def test_a_repeated_successful_call_gets_its_result_and_a_request_without_tools(project: Path,
                                                                                    catalog: Catalog) -> None:
    read = tool_calls(("read_file", '{"path": "a.txt"}'))
    with FakeOpenAI([read, read, text("It says alpha.")]) as fake:
        loop, view = make_loop(fake, project, catalog)
        result = await loop.run("what is in a.txt?")
    assert result.ok and result.text == "It says alpha."
    assert view.of("begin") == ["read_file"], "the repeat was answered without running the tool again"
    assert fake.messages(2)[-1]["content"].startswith(
        "[codeward] not run again: read_file already ran with exactly these arguments; its result is the same:\nalpha")
    assert "tools" in fake.requests[1] and "tools" not in fake.requests[2], "the answer is asked for without tools"


async def test_a_change_in_between_lets_the_same_failing_call_run_again(project: Path, catalog: Catalog) -> None:
    replies = [tool_calls(("read_file", '{"path": "new.txt"}')),
               tool_calls(("write_file", '{"path": "new.txt", "content": "fresh"}')),
               tool_calls(("read_file", '{"path": "new.txt"}')),
               text("It says fresh.")]
    with FakeOpenAI(replies) as fake:
        loop, view = make_loop(fake, project, catalog, settings=LoopSettings())
        result = await loop.run("create and read new.txt")
    assert result.ok and view.of("begin") == ["read_file", "write_file", "read_file"]
    assert fake.messages(3)[-1]["content"] == "fresh"
