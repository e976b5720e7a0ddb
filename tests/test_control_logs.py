"""Session logs: one JSON line per event, flushed at once, rotated by size, secrets never on disk;
and a scripted chat session whose logs hold every request, tool call and subprocess."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from codeward.apps.control.session_logs import LOG_FILES, SessionLogs
from codeward.kernel.redaction import REDACTED, Redactor
from tests.control_support import Terminal, agent_env
from tests.fake_openai import FakeOpenAI, text, tool_calls

API_KEY = "sk-cwlogs-FAKEKEY-7f3a9c2e5b1d4068"
SERVICE_TOKEN = "svc-tok-QUOKKA-55501234"
PASSWORD = "hunter2-but-longer-XYZZY"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- redaction -------------------------------------------------------------------------------------------


def test_values_of_secret_environment_variables_are_redacted() -> None:
    redactor = Redactor(environ={"OPENAI_API_KEY": API_KEY, "GITHUB_TOKEN": SERVICE_TOKEN, "DB_PASSWORD": PASSWORD,
                                 "MY_SECRET": "s3cr3t-value-1", "DEBUG": "verbose-mode", "SHORT_KEY": "abc"})
    line = redactor.text(f"key={API_KEY} tok={SERVICE_TOKEN} pw={PASSWORD} s=s3cr3t-value-1 debug=verbose-mode abc")
    for secret in (API_KEY, SERVICE_TOKEN, PASSWORD, "s3cr3t-value-1"):
        assert secret not in line
    assert "verbose-mode" in line and line.endswith("abc")  # not secrets: other names, too short


def test_known_secret_shapes_and_fields_are_redacted_without_being_told() -> None:
    redactor = Redactor(environ={})
    value = redactor.value({
        "headers": {"Authorization": "Bearer abcdefgh12345678", "X-Api-Key": "k-1234567890", "Accept": "json"},
        "nested": [{"access_token": "zzzzzzzz"}, "Basic dXNlcjpwYXNzd29yZA=="],
        "url": "http://h/api?token=abcdef123456&page=2",
        "text": "use sk-proj-ABCDEFGHIJKLMNOPQRST please",
        "max_tokens": 64, "keyboard": "qwerty",
    })
    assert value["headers"] == {"Authorization": REDACTED, "X-Api-Key": REDACTED, "Accept": "json"}
    assert value["nested"] == [{"access_token": REDACTED}, f"Basic {REDACTED}"]
    assert value["url"] == f"http://h/api?token={REDACTED}&page=2"
    assert value["text"] == f"use {REDACTED} please"
    assert value["max_tokens"] == 64 and value["keyboard"] == "qwerty"


def test_a_secret_added_at_run_time_is_redacted_from_then_on() -> None:
    redactor = Redactor(environ={})
    token = "run-time-bearer-token-123"
    assert redactor.text(token) == token
    redactor.add(token, None, "")
    assert redactor.text(f"x{token}y") == f"x{REDACTED}y"


# -- the files ---------------------------------------------------------------------------------------------


def test_each_stream_writes_json_lines_flushed_at_once(tmp_path: Path) -> None:
    logs = SessionLogs.for_session(tmp_path / "logs", "s-1", Redactor(environ={}))
    try:
        logs.comms("out", "request", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        logs.tool_call({"tool": "read_file", "arguments": {"path": "a"}, "status": "ok", "duration_s": 0.1})
        logs.api_hook("GET", "/status", 200, None, client="127.0.0.1:5")
        logs.cli_call(["bash", "-c", "echo hi"], stdin="", stdout="hi\n", stderr="", latency_s=0.01, exit_code=0,
                      cwd="/w")
        folder = tmp_path / "logs" / "s-1"
        # read while still open: every line is already on disk
        assert records(folder / "comms.log")[0]["payload"]["messages"][0]["content"] == "hi"
        assert records(folder / "toolcalls.log")[0]["tool"] == "read_file"
        assert records(folder / "apihooks.log")[0] | {"time": None} == {
            "time": None, "method": "GET", "path": "/status", "status": 200, "client": "127.0.0.1:5", "body": None}
        cli = records(folder / "clicalls.log")[0]
        assert cli["command"] == ["bash", "-c", "echo hi"] and cli["stdout"] == "hi\n" and cli["exit_code"] == 0
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert all(stat.S_IMODE((folder / name).stat().st_mode) == 0o600 for name in LOG_FILES)
    finally:
        logs.close()
    logs.tool_call({"tool": "late"})  # after close: ignored, no error
    assert len(records(tmp_path / "logs" / "s-1" / "toolcalls.log")) == 1


def test_logs_rotate_by_size(tmp_path: Path) -> None:
    with SessionLogs(tmp_path, Redactor(environ={}), max_bytes=2048, backups=2) as logs:
        for n in range(100):
            logs.tool_call({"n": n, "padding": "x" * 100})
    current, first, second = (tmp_path / "toolcalls.log", tmp_path / "toolcalls.log.1", tmp_path / "toolcalls.log.2")
    assert first.exists() and second.exists() and not (tmp_path / "toolcalls.log.3").exists()
    assert all(p.stat().st_size <= 2048 for p in (current, first, second))
    assert records(current)[-1]["n"] == 99


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".", ".."])
def test_a_session_id_that_cannot_be_a_folder_name_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="cannot name a folder"):
        SessionLogs.for_session(tmp_path, bad)
    assert list(tmp_path.iterdir()) == []


def test_every_subprocess_of_the_process_is_seen(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, subprocess, sys
        from pathlib import Path
        from codeward.apps.control.session_logs import SessionLogs
        from codeward.kernel.redaction import Redactor
        logs = SessionLogs(Path({str(tmp_path / "logs")!r}), Redactor())
        logs.watch_subprocesses()
        subprocess.run(["sh", "-c", "sleep 0.2; exit 3"])
        subprocess.run(["true"], cwd={str(tmp_path)!r})
        os.system("echo " + os.environ["CWLOGS_TOKEN"] + " > /dev/null")
        logs.close()
    """)
    env = {"PATH": os.environ["PATH"], "CWLOGS_TOKEN": SERVICE_TOKEN, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    lines = records(tmp_path / "logs" / "clicalls.log")
    spawns = [r for r in lines if r["kind"] == "spawn"]
    exits = {r["spawn"]: r for r in lines if r["kind"] == "exit"}
    assert [s["command"] for s in spawns] == [["sh", "-c", "sleep 0.2; exit 3"], ["true"],
                                              f"echo {REDACTED} > /dev/null"]
    assert spawns[1]["cwd"] == str(tmp_path)
    slow = exits[spawns[0]["spawn"]]
    assert slow["exit_code"] == 3 and slow["latency_s"] >= 0.2 and slow["pid"] > 0
    assert exits[spawns[1]["spawn"]]["exit_code"] == 0
    assert SERVICE_TOKEN not in (tmp_path / "logs" / "clicalls.log").read_text()


# -- a scripted session ------------------------------------------------------------------------------------


def test_a_scripted_chat_session_logs_everything_and_no_secret(root: Path, tmp_path: Path) -> None:
    from codeward.apps.control.client import ApiHookClient

    home = tmp_path / "home"
    (root / "notes.txt").write_text(f"The service token is {SERVICE_TOKEN}.\n")
    replies = [
        tool_calls(("read_file", '{"path": "notes.txt"}')),
        tool_calls(("run_shell", '{"script": "echo tool-ran-me"}')),
        text(f"Done. For the record your key is {API_KEY}.\nCMD: echo hello-from-cmd"),
        text("Bye."),
    ]
    with FakeOpenAI(replies) as fake:
        env = agent_env(fake, home, OPENAI_API_KEY=API_KEY, CWLOGS_SERVICE_TOKEN=SERVICE_TOKEN,
                        CWLOGS_DB_PASSWORD=PASSWORD)
        terminal = Terminal([sys.executable, "-m", "codeward", "chat", "--control", "--control-port", "0",
                             "--auto-approve", "run_shell"], root, env)
        try:
            found = terminal.read_until(r"control API at (\S+) \(token in (\S+)\)")
            bearer = Path(found.group(2)).read_text().strip()
            client = ApiHookClient(found.group(1), bearer)
            client.post_project({"note": f"bearer is {bearer}", "api_key": API_KEY})
            terminal.read_until("›")
            terminal.type("read the notes")
            terminal.read_until(r"run `echo hello-from-cmd`\? \[y/N\]")
            terminal.type("y")
            terminal.read_until(r"(?si)hello-from-cmd.*exit code:? 0")
            terminal.type("thanks")
            terminal.read_until("Bye.")
            assert client.get_performance()["tool_calls"]["total"] == 2
            terminal.type(":quit")
            assert terminal.close() == 0
        finally:
            terminal.proc.kill()
        requests = list(fake.requests)
    [folder] = list((home / "logs").iterdir())

    comms = records(folder / "comms.log")
    sent = [r["payload"] for r in comms if r["direction"] == "out"]
    received = [r["payload"] for r in comms if r["direction"] == "in"]
    assert len(sent) == len(received) == len(requests) == 4
    for logged, actual in zip(sent, requests, strict=True):
        assert len(logged["messages"]) == len(actual["messages"]) and logged["model"] == "fake-model"
        assert "read_file" in logged["tools"]
    assert [r["id"] for r in received] == [r["id"] for r in sent]
    assert [c["name"] for r in received for c in r["tool_calls"]] == ["read_file", "run_shell"]
    assert received[-1]["text"] == "Bye." and all(r["ok"] for r in received)
    assert "[exec: echo hello-from-cmd]" in sent[-1]["messages"][-1]["content"]

    calls = records(folder / "toolcalls.log")
    assert [(c["tool"], c["status"]) for c in calls] == [("read_file", "ok"), ("run_shell", "ok")]
    assert calls[0]["arguments"] == {"path": "notes.txt"} and calls[0]["duration_s"] >= 0
    assert "tool-ran-me" in calls[1]["result"]

    cli = records(folder / "clicalls.log")
    [ran] = [c for c in cli if c["kind"] == "run"]
    assert ran["command"] == ["bash", "-c", "echo hello-from-cmd"] and ran["exit_code"] == 0
    assert "hello-from-cmd" in ran["stdout"] and ran["latency_s"] > 0 and ran["cwd"] == str(root)
    spawned = [c for c in cli if c["kind"] == "spawn"]
    assert any("echo hello-from-cmd" in c["command"] for c in spawned)  # the CMD line, seen at spawn too
    assert any(c["kind"] == "exit" for c in cli)

    hooks = records(folder / "apihooks.log")
    assert ("POST", "/api/project", 200) in [(h["method"], h["path"], h["status"]) for h in hooks]
    assert ("GET", "/api/performance", 200) in [(h["method"], h["path"], h["status"]) for h in hooks]

    everything = "".join(p.read_text(encoding="utf-8") for p in folder.iterdir())
    for secret in (API_KEY, SERVICE_TOKEN, bearer):
        assert secret not in everything
    assert REDACTED in everything
    assert "tool-ran-me" in everything and "The service token is" in everything  # the rest is kept
