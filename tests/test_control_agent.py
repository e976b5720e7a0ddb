"""Tool approvals through the control plane: ``codeward ask``/``chat --control`` as real processes
against a real local OpenAI-protocol server, approved or denied over HTTP or in the terminal."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.approval.desk import ApprovalDesk, is_approval
from codeward.approval.policy import ApprovalRequest
from codeward.apps.control.client import ApiHookClient
from codeward.apps.control.server import ControlServer
from codeward.apps.control.state import ControlState
from tests.control_support import ANNOUNCE, WRITE, Lines, Terminal, agent_env, client_from, finish
from tests.fake_openai import FakeOpenAI, text


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def start_ask(root: Path, fake: FakeOpenAI, home: Path, *extra: str) -> tuple[subprocess.Popen[str], Lines]:
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "ask", "write x.txt", "--control", "--control-port",
                             "0", *extra], cwd=root, env=agent_env(fake, home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, Lines(proc.stderr)


def test_ask_waits_for_the_console_and_an_approval_lets_the_call_run(root: Path, home: Path) -> None:
    with FakeOpenAI([WRITE, text("Written.")]) as fake:
        proc, stderr = start_ask(root, fake, home)
        try:
            client = client_from(stderr.wait_for(ANNOUNCE))
            event = client.wait_for_event("ask_received", timeout=30)
            assert event is not None and event["data"]["tool"] == "write_file"
            assert event["data"]["arguments"] == {"path": "x.txt", "content": "hi"}
            call = client.get_calls()[-1]
            assert call["name"] == "write_file" and call["status"] == "awaiting_approval"
            assert call["ask_id"] == event["request_id"] and event["data"]["call_id"] == call["id"]
            assert not (root / "x.txt").exists()  # nothing ran yet
            assert client.approve(event["request_id"])
            # ask exits (and its control API with it) as soon as the call ran, so the outcome is read
            # from the session log rather than from the API, which may already be gone.
            out = finish(proc)
        finally:
            proc.kill()
    [logs] = list((home / "logs").iterdir())
    [record] = [json.loads(line) for line in (logs / "toolcalls.log").read_text().splitlines()]
    assert record["tool"] == "write_file" and record["status"] == "ok" and record["result"].startswith("Wrote x.txt")
    assert proc.returncode == 0 and out.strip() == "Written."
    assert (root / "x.txt").read_text() == "hi"
    assert "write_file: approved in the console" in stderr.text()


def test_a_denial_in_the_console_stops_the_call_and_tells_the_model(root: Path, home: Path) -> None:
    with FakeOpenAI([WRITE, text("Not allowed.")]) as fake:
        proc, stderr = start_ask(root, fake, home)
        try:
            client = client_from(stderr.wait_for(ANNOUNCE))
            event = client.wait_for_event("ask_received", timeout=30)
            assert event is not None
            assert client.deny(event["request_id"])
            finish(proc)
        finally:
            proc.kill()
        told = fake.messages(1)[-1]["content"]
    [logs] = list((home / "logs").iterdir())
    [record] = [json.loads(line) for line in (logs / "toolcalls.log").read_text().splitlines()]
    assert record["tool"] == "write_file" and record["status"] == "denied"
    assert proc.returncode == 0 and not (root / "x.txt").exists()
    assert "was not approved, so it did not run" in told
    assert "write_file: denied in the console" in stderr.text()


def test_without_an_answer_the_call_is_denied_after_the_timeout(root: Path, home: Path) -> None:
    with FakeOpenAI([WRITE, text("Timed out.")]) as fake:
        proc, stderr = start_ask(root, fake, home, "--approval-timeout", "0.5")
        out = finish(proc)
    assert proc.returncode == 0 and out.strip() == "Timed out." and not (root / "x.txt").exists()
    assert "nobody answered within 0.5 s — denied" in stderr.text()


def test_a_taken_control_port_is_one_clear_line(root: Path, home: Path) -> None:
    with ControlServer(ControlState(), port=0) as taken, FakeOpenAI([text("unused")]) as fake:
        done = subprocess.run([sys.executable, "-m", "codeward", "ask", "hi", "--control", "--control-port",
                               str(taken.port)], cwd=root, env=agent_env(fake, home), capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 2 and "already in use" in done.stderr and "Traceback" not in done.stderr
    assert fake.requests == []


def test_remote_bind_without_the_flag_is_refused(root: Path, home: Path) -> None:
    with FakeOpenAI([text("unused")]) as fake:
        done = subprocess.run([sys.executable, "-m", "codeward", "ask", "hi", "--control", "--control-host",
                               "0.0.0.0"], cwd=root, env=agent_env(fake, home), capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 2 and "--control-allow-remote" in done.stderr and fake.requests == []


# -- the race in a real terminal -----------------------------------------------------------------------


@pytest.fixture
def chat(root: Path, home: Path) -> Iterator[tuple[Terminal, ApiHookClient, FakeOpenAI]]:
    with FakeOpenAI([WRITE, text("Done.")]) as fake:
        terminal = Terminal([sys.executable, "-m", "codeward", "chat", "--control", "--control-port", "0"], root,
                            agent_env(fake, home))
        try:
            found = terminal.read_until(r"control API at (\S+) \(token in (\S+)\)")
            client = ApiHookClient(found.group(1), Path(found.group(2)).read_text().strip())
            terminal.read_until("›")
            terminal.type("write x.txt")
            terminal.read_until(r"call write_file\(.*\)\? \[y/N\]")
            yield terminal, client, fake
        finally:
            terminal.proc.kill()


def test_chat_approval_in_the_console_cancels_the_terminal_prompt(
        chat: tuple[Terminal, ApiHookClient, FakeOpenAI], root: Path) -> None:
    terminal, client, _ = chat
    ask = client.get_asks()[0]
    assert client.approve(ask["request_id"])
    terminal.read_until("write_file: approved in the console")
    terminal.read_until("Done.")
    assert (root / "x.txt").read_text() == "hi"
    terminal.read_until("›")
    terminal.type(":quit")
    assert terminal.close() == 0


def test_chat_answer_in_the_terminal_withdraws_the_console_question(
        chat: tuple[Terminal, ApiHookClient, FakeOpenAI], root: Path) -> None:
    terminal, client, _ = chat
    request_id = client.get_asks()[0]["request_id"]
    terminal.type("y")
    terminal.read_until("Done.")
    resolved = client.wait_for_event("ask_resolved", timeout=10, where=lambda e: e["request_id"] == request_id)
    assert resolved is not None and resolved["by"] == "terminal" and resolved["response"] == {"approved": True}
    assert client.get_asks() == [] and not client.approve(request_id)  # too late for the console
    assert (root / "x.txt").read_text() == "hi"
    terminal.type(":quit")
    assert terminal.close() == 0


# -- the desk in-process ---------------------------------------------------------------------------------


def request() -> ApprovalRequest:
    return ApprovalRequest("git__push", "git", "push", {"force": True}, "Push commits.\nMore.", {})


@pytest.mark.parametrize(("answer", "approved"), [
    (True, True), (False, False), ("approve", True), ("Yes", True), ("no", False), ({"approved": True}, True),
    ({"approved": "true"}, False), ({"decision": "allow"}, True), (None, False), (1, False),
])
def test_what_counts_as_an_approval(answer: Any, approved: bool) -> None:
    assert is_approval(answer) is approved


def test_console_answer_wins_and_the_terminal_prompt_is_cancelled() -> None:
    state = ControlState()
    notes: list[str] = []
    prompt_cancelled = threading.Event()

    async def terminal(req: ApprovalRequest) -> bool:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            prompt_cancelled.set()
            raise
        return False

    async def scenario() -> bool:
        desk = ApprovalDesk(state, terminal=terminal, notify=notes.append)
        decision = asyncio.ensure_future(desk(request()))
        while not state.asks.pending():
            await asyncio.sleep(0.005)
        pending = state.asks.pending()[0]
        assert pending["data"]["tool"] == "git__push" and pending["data"]["description"] == "Push commits."
        # answered from another thread, as the HTTP server does
        await asyncio.to_thread(state.asks.respond, pending["request_id"], "approve")
        return await decision

    assert asyncio.run(scenario()) is True
    assert prompt_cancelled.is_set() and notes == ["[codeward] git__push: approved in the console"]


def test_a_broken_terminal_prompt_denies() -> None:
    state = ControlState()

    async def terminal(req: ApprovalRequest) -> bool:
        raise EOFError

    assert asyncio.run(ApprovalDesk(state, terminal=terminal)(request())) is False
    kinds = [e["type"] for e in state.events.drain()]
    assert kinds == ["ask_received", "ask_resolved"] and state.asks.pending() == []
