"""The seed's ``/api/gui`` surface over real HTTP, and a real ``codeward chat --control`` driven
through ApiHookClient alone: set the model, send a message, approve the call, read the answer,
reset."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.apps.control.client import ApiHookClient, HookError
from codeward.apps.control.gui import GuiQueue, StateDriver
from codeward.apps.control.server import ControlServer
from codeward.apps.control.state import ControlState
from tests.control_support import WRITE, Terminal, agent_env
from tests.fake_openai import FakeOpenAI, text
from tests.test_control_api import bearer, raw


@pytest.fixture
def driven(tmp_path: Path) -> Iterator[tuple[ControlServer, ApiHookClient]]:
    """A control server whose GUI queue runs on a session loop of its own thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    state = ControlState("test")

    async def start() -> GuiQueue:
        queue = GuiQueue(state, StateDriver(state), asyncio.get_running_loop())
        queue.start()
        return queue

    queue = asyncio.run_coroutine_threadsafe(start(), loop).result(5)
    state.gui = queue
    try:
        with ControlServer(state, port=0, token_dir=tmp_path / "control", ask_timeout=5.0) as server:
            yield server, ApiHookClient(server.url, server.token, max_retries=0)
    finally:
        asyncio.run_coroutine_threadsafe(queue.aclose(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def test_values_diagnostics_and_status_of_an_idle_run(driven: tuple[ControlServer, ApiHookClient]) -> None:
    _, client = driven
    everything = client._make_request("GET", "/api/gui/value")
    assert everything["value"]["ai_status"] == "idle" and everything["fields"]["ai_status"] == {"settable": False}
    assert client.get_value("ai_status") == "idle" and client.get_text_value("active_tab") == "approvals"
    assert client._make_request("GET", "/api/gui/value?item=ai_status")["value"] == "idle"
    assert client.get_text_value("no_such_field") is None
    assert client.get_diagnostics() == {"thinking": False, "live": False, "prior": False, "ai_status": "idle"}
    assert client.get_indicator_state("thinking_indicator") == {"tag": "thinking_indicator", "shown": False,
                                                                "known": True}
    status = client.get_mma_status()
    assert status["mma_status"] == "idle" and status["pending_tool_approval"] is False and status["tracks"] == []


def test_a_running_call_and_a_pending_approval_show_in_status(driven: tuple[ControlServer, ApiHookClient]) -> None:
    server, client = driven
    state = server.state
    call = state.call_started("write_file", {"path": "x"})
    state.model_request("m", 1, 1)
    assert client.get_diagnostics()["live"] is True and client.get_value("ai_status") == "running write_file..."
    node = client.get_node_status(call)
    assert node is not None and node["status"] == "running" and node["source"] == "running_calls"
    ask = state.asks.open({"type": "tool_approval", "tool": "write_file", "arguments": {}})
    state.call_waiting(call, ask.request_id)
    status = client.get_mma_status()
    assert status["ai_status"] == "awaiting approval" and status["pending_tool_approval"] is True
    assert status["pending_approvals"] == [{"request_id": ask.request_id, "tool": "write_file"}]
    assert client.get_value("pending_approvals") == [ask.request_id]
    assert client.click("btn_approve_tool") == {"status": "queued", "task": 1}
    done = client.wait_for_event("gui_task", timeout=5)
    assert done is not None and done["ok"] is True
    assert not state.asks.is_open(ask.request_id)
    assert client.get_node_status("nothing-named-so") is None


def test_tabs_lists_and_pushed_events_apply_in_order(driven: tuple[ControlServer, ApiHookClient]) -> None:
    server, client = driven
    for tab in ("calls", "conversation", "servers"):
        assert client.select_tab("console", tab)["status"] == "queued"
    assert client.wait_for_value("active_tab", "servers", timeout=5)
    tabs = [e["tab"] for e in client.get_events() if e["type"] == "gui_tab"]
    assert tabs == ["calls", "conversation", "servers"]
    client.push_event("my_script_step", {"n": 1})
    pushed = client.wait_for_event("pushed", timeout=5)
    assert pushed is not None and pushed["event_type"] == "my_script_step" and pushed["payload"] == {"n": 1}
    ask = server.state.asks.open({"type": "tool_approval", "tool": "run_shell"})
    client.select_list_item("asks", ask.request_id)
    shown = client.wait_for_event("gui_tab", timeout=5)
    assert shown is not None and shown["focus"] == ask.request_id
    client.click("btn_deny_tool", user_data=ask.request_id)
    resolved = client.wait_for_event("ask_resolved", timeout=5)
    assert resolved is not None and resolved["response"] == {"approved": False}


@pytest.mark.parametrize(("body", "status", "fragment"), [
    ({}, 400, "unknown or missing action"),
    ({"action": "custom_callback"}, 400, "custom_callback"),
    ({"action": "set_value", "item": "model"}, 400, "needs a 'value'"),
    ({"action": "set_value", "item": "ai_status", "value": "idle"}, 403, "read-only"),
    ({"action": "set_value", "item": "colour", "value": 1}, 404, "no field 'colour'"),
    ({"action": "click", "item": "btn_launch"}, 404, "no button 'btn_launch'"),
    ({"action": "click", "item": "btn_approve_tool"}, 409, "no tool call is waiting"),
    ({"action": "click", "item": "btn_approve_tool", "user_data": "nope"}, 404, "no open question"),
    ({"action": "select_tab", "tab": "settings"}, 404, "no console tab 'settings'"),
    ({"action": "select_list_item", "listbox": "files", "item_value": 1}, 404, "no list 'files'"),
    ({"action": "push_event", "event_type": "x", "payload": [1]}, 400, "payload"),
])
def test_bad_tasks_are_refused_with_a_reason_and_nothing_is_queued(
        driven: tuple[ControlServer, ApiHookClient], body: dict[str, Any], status: int, fragment: str) -> None:
    server, _ = driven
    code, _, payload = raw(server, "POST", "/api/gui", body, headers=bearer(server))
    answer = json.loads(payload)
    assert code == status and fragment in answer["message"] and answer["hint"], answer
    time.sleep(0.1)
    assert [e for e in server.state.events.drain() if e["type"] == "gui_task"] == []


def test_gui_endpoints_refuse_foreign_hosts_and_origins(driven: tuple[ControlServer, ApiHookClient]) -> None:
    server, _ = driven
    task = {"action": "select_tab", "tab": "calls"}
    code, _, body = raw(server, "POST", "/api/gui", task, headers=bearer(server), host="evil.example:80")
    assert code == 403 and json.loads(body)["error"] == "forbidden_host"
    code, _, body = raw(server, "POST", "/api/gui", task, headers={**bearer(server), "Origin": "http://evil.example"})
    assert code == 403 and json.loads(body)["error"] == "forbidden_origin"
    code, _, _ = raw(server, "GET", "/api/gui/mma_status", headers={"Authorization": "Bearer wrong"})
    assert code == 401
    assert server.state.active_tab() == "approvals"


def test_without_a_driven_session_tasks_wait_with_409(tmp_path: Path) -> None:
    with ControlServer(ControlState("t"), port=0, token_dir=tmp_path) as server:
        client = ApiHookClient(server.url, server.token, max_retries=0)
        with pytest.raises(HookError) as caught:
            client.select_tab("console", "calls")
        assert caught.value.status == 409 and "nothing to drive" in str(caught.value)
        assert client.get_value("ai_status") == "idle"


# -- a real chat, driven by the client alone ----------------------------------------------------------------


def test_a_chat_is_driven_end_to_end_through_the_client(root: Path, tmp_path: Path) -> None:
    (root / "notes.md").write_text("# notes\n")
    home = tmp_path / "home"
    with FakeOpenAI([WRITE, text("Done."), text("Fresh start."), text("Continued.")]) as fake:
        terminal = Terminal([sys.executable, "-m", "codeward", "chat", "--control", "--control-port", "0",
                             "--auto-approve", "read_file"], root, agent_env(fake, home))
        try:
            found = terminal.read_until(r"control API at (\S+) \(token in (\S+)\)")
            client = ApiHookClient(found.group(1), Path(found.group(2)).read_text().strip())
            assert client.wait_for_server(timeout=10)
            assert client.wait_for_value("model", "fake-model", timeout=30)

            client.set_value("model", "other-model")
            assert client.wait_for_value("model", "other-model", timeout=10)
            client.set_value("max_tool_depth", 3)
            client.set_value("tracked_files", ["notes.md"])
            assert client.wait_for_value("tracked_files", ["notes.md"], timeout=10)
            for field, value, status in [("max_tool_depth", 50, 403), ("max_tool_depth", 0, 400),
                                         ("auto_approve", ["read_file", "write_file"], 403),
                                         ("model", "", 400), ("tracked_files", ["../outside.txt"], 400),
                                         ("toolsets", ["no-such-set"], 400)]:
                with pytest.raises(HookError) as caught:
                    client.set_value(field, value)
                assert caught.value.status == status, (field, value, caught.value)
            assert client.get_value("max_tool_depth") == 3 and client.get_value("auto_approve") == ["read_file"]
            client.set_value("auto_approve", [])  # narrowing is fine
            assert client.wait_for_value("auto_approve", [], timeout=10)

            client.set_value("ai_input", "write x.txt")
            client.click("btn_gen_send")
            assert client.wait_for_value("mma_status.pending_tool_approval", True, timeout=30)
            assert client.get_indicator_state("thinking")["shown"] is True
            client.click("btn_approve_tool")
            assert client.wait_for_value("last_reply", "Done.", timeout=30)
            assert (root / "x.txt").read_text() == "hi"
            assert fake.requests[0]["model"] == "other-model"
            sent = fake.messages(0)
            assert "write x.txt" in sent[-1]["content"] and "# notes" in sent[-1]["content"]
            assert client.wait_for_value("ai_status", "idle", timeout=10)

            client.reset_session()
            assert client.wait_for_value("turns", 0, timeout=10)
            client.push_event("user_request", {"prompt": "again"})
            assert client.wait_for_value("last_reply", "Fresh start.", timeout=30)
            again = fake.messages(2)
            assert [m["role"] for m in again] == ["system", "user"] and again[-1]["content"].endswith("again")
            assert client.wait_for_value("ai_status", "idle", timeout=10)

            # POST /api/project and /api/session change the conversation, not only what is read back
            project = client.get_project()
            with pytest.raises(HookError) as caught:
                client.post_project({**project, "roots": ["/"]})
            assert caught.value.status == 403 and "roots" in str(caught.value)
            assert client.post_project({**project, "model": "third-model", "system_prompt": "Be brief."})["queued"]
            with pytest.raises(HookError) as caught:
                client.post_session([{"role": "tool", "content": "x", "tool_call_id": "nope"}])
            assert caught.value.status == 400 and "entry 1" in str(caught.value)
            history = [{"role": "user", "content": "earlier question"}, {"role": "assistant", "content": "old answer"}]
            assert client.post_session(history)["queued"]
            assert client.wait_for_value("turns", 2, timeout=10)
            assert client.wait_for_value("session.entries.-1.content", "old answer", timeout=10)
            client.click("btn_gen_send", user_data="go on")
            assert client.wait_for_value("last_reply", "Continued.", timeout=30)
            continued = fake.messages(3)
            assert fake.requests[3]["model"] == "third-model"
            assert [(m["role"], m["content"]) for m in continued[:3]] == [
                ("system", "Be brief."), ("user", "earlier question"), ("assistant", "old answer")]
            assert continued[-1]["content"].endswith("go on")
            assert client.get_project()["roots"] == project["roots"]
            terminal.read_until("›")
            terminal.type(":quit")
            assert terminal.close() == 0
        finally:
            terminal.proc.kill()


# -- serve --logs / --approvals -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_serve_logs_every_call_of_an_mcp_client(root: Path, tmp_path: Path) -> None:
    import os

    from mcp import Client, StdioServerParameters

    home = tmp_path / "home"
    (root / "notes.md").write_text("# notes\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root), "--logs"],
                                   env={**os.environ, "CODEWARD_HOME": str(home)})
    async with Client(params) as client:
        read = await client.call_tool("read_file", {"path": "notes.md"})
        assert not read.is_error
    (log,) = (home / "logs").glob("*/toolcalls.log")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(entry["tool"], entry["status"]) for entry in lines] == [("read_file", "ok")]


def test_serve_approvals_without_control_is_a_usage_error(root: Path, tmp_path: Path) -> None:
    import os
    import subprocess

    done = subprocess.run([sys.executable, "-m", "codeward", "serve", str(root), "--approvals", "none"],
                          env={**os.environ, "CODEWARD_HOME": str(tmp_path / "home")}, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "--approvals needs --control" in done.stderr


# -- the project's beads as tracks and tickets ----------------------------------------------------------------


def test_mma_status_shows_the_projects_beads_as_tracks_and_tickets(
        driven: tuple[ControlServer, ApiHookClient], root: Path) -> None:
    from codeward.apps.control.board import beads_board
    from codeward.engines.beads.store import beads_init
    from codeward.kernel.workspace import Workspace

    server, client = driven
    server.state.board = lambda: beads_board(Workspace.create([root]))
    assert client.get_mma_status()["tracks"] == []  # no tracker yet: neither tracks nor tickets
    beads_init(root, "cw")
    lines = [
        {"id": "cw-1", "title": "Seed API", "status": "in_progress", "priority": 1, "issue_type": "epic"},
        {"id": "cw-2", "title": "Endpoints", "status": "in_progress", "priority": 2, "issue_type": "task",
         "dependencies": [{"issue_id": "cw-2", "depends_on_id": "cw-1", "type": "parent-child"}]},
        {"id": "cw-3", "title": "Docs", "status": "open", "priority": 2, "issue_type": "task",
         "dependencies": [{"issue_id": "cw-3", "depends_on_id": "cw-2", "type": "blocks"}]},
        {"id": "cw-4", "title": "Old", "status": "closed", "priority": 3, "issue_type": "task"},
    ]
    (root / ".beads" / "issues.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    status = client.get_mma_status()
    assert [t["id"] for t in status["tracks"]] == ["cw-1"] and status["active_track"] == "cw-1"
    tickets = {t["id"]: t for t in status["tickets"]}
    assert tickets["cw-2"]["track"] == "cw-1" and tickets["cw-3"]["blocked_by"] == ["cw-2"]
    assert [t["id"] for t in status["active_tickets"]] == ["cw-2"]
    node = client.get_node_status("cw-3")
    assert node is not None and node["status"] == "open" and node["source"] == "tickets"


# -- cancelling a reply from a script -------------------------------------------------------------------------


def test_a_script_cancels_the_running_reply(root: Path, tmp_path: Path) -> None:
    from tests.fake_openai import Reply

    started = threading.Event()
    slow = text("This reply streams very slowly and is cancelled before it ends.", pieces=40)
    slow = Reply(slow.chunks, delay_s=0.3, before=started.set)
    with FakeOpenAI([slow, text("After the cancel.")]) as fake:
        terminal = Terminal([sys.executable, "-m", "codeward", "chat", "--control", "--control-port", "0"], root,
                            agent_env(fake, tmp_path / "home"))
        try:
            found = terminal.read_until(r"control API at (\S+) \(token in (\S+)\)")
            client = ApiHookClient(found.group(1), Path(found.group(2)).read_text().strip())
            assert client.wait_for_value("model", "fake-model", timeout=30)
            client.click("btn_gen_send", user_data="tell me slowly")
            assert started.wait(30), "the request never reached the model server"
            assert client.get_value("ai_status") == "sending..."
            assert client.get_indicator_state("thinking_indicator")["shown"] is True
            client.click("btn_cancel")
            terminal.read_until("response cancelled")
            assert client.wait_for_value("ai_status", "idle", timeout=10)
            client.click("btn_gen_send", user_data="and now?")
            assert client.wait_for_value("last_reply", "After the cancel.", timeout=30)
            assert client.get_value("session.entries.0.content") == "tell me slowly"
            terminal.type(":quit")
            assert terminal.close() == 0
        finally:
            terminal.proc.kill()
