"""``codeward ask`` and session history as a person (or a script) uses them: real subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.apps.agent.conversation import Conversation, Turn
from codeward.apps.agent.history import SessionLog, find_session, load_session
from codeward.engines.llm.calls import ToolCall
from tests.fake_openai import FakeOpenAI, Reply, text, tool_calls
from tests.test_agent_loop import unparsable


def ask(root: Path, base_url: str, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": "sk-test"}
    if home is not None:
        env["CODEWARD_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "codeward", "ask", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)


def test_ask_makes_a_tool_call_and_prints_only_the_answer(root: Path) -> None:
    (root / "notes.txt").write_text("The secret word is PELICAN.\n")
    with FakeOpenAI([tool_calls(("read_file", '{"path": "notes.txt"}'), preface="Reading."),
                     text("The secret word is PELICAN.")]) as fake:
        done = ask(root, fake.base_url, "what is the secret word?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The secret word is PELICAN.\n"
    assert "┌ read_file" in done.stderr and "└ ok" in done.stderr
    assert fake.headers[0]["authorization"] == "Bearer sk-test"
    answer = {"role": "tool", "tool_call_id": "call_0", "content": "The secret word is PELICAN.\n"}
    assert fake.messages(1)[-1] == answer


def test_ask_denies_calls_the_policy_does_not_approve_and_tells_the_model(root: Path) -> None:
    write = tool_calls(("write_file", '{"path": "x.txt", "content": "hi"}'))
    with FakeOpenAI([write, text("I could not write.")]) as fake:
        done = ask(root, fake.base_url, "write x.txt")
    assert done.returncode == 0 and not (root / "x.txt").exists()
    told = fake.messages(1)[-1]["content"]
    assert "was not approved, so it did not run" in told and "auto_approve" in told
    assert "denied write_file" in done.stderr


def test_ask_auto_approve_pattern_lets_a_write_run(root: Path) -> None:
    with FakeOpenAI([tool_calls(("write_file", '{"path": "x.txt", "content": "hi"}')), text("Written.")]) as fake:
        done = ask(root, fake.base_url, "write x.txt", "--auto-approve", "write_*")
    assert done.returncode == 0 and (root / "x.txt").read_text() == "hi"


def test_ask_exit_code_says_the_model_failed(root: Path) -> None:
    with FakeOpenAI([Reply(status=401, body='{"error": {"message": "invalid api key"}}')]) as fake:
        done = ask(root, fake.base_url, "hi")
    assert done.returncode == 1 and "HTTP 401" in done.stderr and "invalid api key" in done.stderr


def test_ask_without_a_model_configured_is_one_clear_line(root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, "-m", "codeward", "ask", "hi"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("codeward: error: no model configured")
    assert "Traceback" not in done.stderr


def test_model_profiles_from_codeward_toml(root: Path) -> None:
    with FakeOpenAI([text("from the profile")]) as fake:
        (root / "codeward.toml").write_text(
            f'[model]\ndefault = "local"\n[model.profiles.local]\nbase_url = "{fake.base_url}"\n'
            'model = "qwen-local"\nkey_env = "LOCAL_KEY"\nmax_tokens = 64\ntemperature = 0.0\n')
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env["LOCAL_KEY"] = "local-secret"
        done = subprocess.run([sys.executable, "-m", "codeward", "ask", "hi"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "from the profile\n"
    sent = fake.requests[0]
    assert sent["model"] == "qwen-local" and sent["max_tokens"] == 64 and sent["temperature"] == 0.0
    assert fake.headers[0]["authorization"] == "Bearer local-secret"


def test_a_recorded_session_resumes_with_identical_context(tmp_path: Path) -> None:
    directory = tmp_path / "sessions"
    original = Conversation("system prompt")
    log = SessionLog.create(directory, model="m", system=original.system)
    original.listeners.append(log.record)
    original.append(Turn("user", "read a"))
    call = ToolCall("call_1", "read_file", '{"path": "a"}')
    original.append(Turn("assistant", "Reading.", (call,)))
    original.append(Turn("tool", "alpha", tool_call_id="call_1", name="read_file"))
    original.append(Turn("assistant", "It says alpha."))
    log.close()
    _, resumed = load_session(find_session(directory, None))
    assert resumed.to_messages() == original.to_messages()
    assert resumed.turns == original.turns
    with pytest.raises(LookupError, match="no session matching 'nope'"):
        find_session(directory, "nope")


def test_session_file_is_jsonl_with_a_header(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, model="m", system="s")
    log.record(Turn("user", "hi"))
    log.close()
    lines = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert lines[0]["session"] == log.session_id and lines[0]["model"] == "m"
    assert lines[1] == {"turn": {"role": "user", "content": "hi"}}


def test_ask_reports_output_the_server_could_not_parse_without_printing_it_as_the_answer(root: Path) -> None:
    with FakeOpenAI([unparsable(), unparsable()]) as fake:
        done = ask(root, fake.base_url, "read notes.txt")
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    assert "asking once more, as a plain request without tools" in done.stderr
    assert "could not parse as text or a tool call" in done.stderr and "'```json'" in done.stderr


def test_ask_says_what_it_waits_for_before_the_model_answers(root: Path, tmp_path: Path) -> None:
    """A model that thinks for minutes is not silence: the first line is on stderr before the request
    reaches the model (so within any bound of sending), and the last one says how long it all took."""
    stderr = tmp_path / "stderr.txt"
    when_asked: list[str] = []
    first = Reply(tool_calls(("read_file", '{"path": "notes.txt"}')).chunks,
                  before=lambda: when_asked.append(stderr.read_text(encoding="utf-8")))
    (root / "notes.txt").write_text("kiwi\n", encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": "", "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": "sk-test"}
    with FakeOpenAI([first, text("It says kiwi.")]) as fake, stderr.open("w") as errors:
        done = subprocess.run([sys.executable, "-m", "codeward", "ask", "what does notes.txt say?"], cwd=root,
                              env={**env, "OPENAI_BASE_URL": fake.base_url}, stdout=subprocess.PIPE, stderr=errors,
                              text=True, timeout=60)
    said = stderr.read_text(encoding="utf-8")
    assert done.returncode == 0 and done.stdout == "It says kiwi.\n", said
    assert when_asked[0].endswith("[codeward] round 1: asked fake-model; waiting for its answer\n"), when_asked
    assert "[codeward] round 2: asked fake-model; waiting for its answer" in said
    assert re.search(r"\[codeward\] answered in \d+\.\d s \(2 rounds, 1 tool call\)\n$", said), said


def test_chat_says_what_it_waits_for_as_ask_does(root: Path, tmp_path: Path) -> None:
    """A chat message gets ask's progress lines on stderr: the request before it reaches the model, and how
    long the answer took (while its text streams on the screen, the text is the progress)."""
    stderr = tmp_path / "stderr.txt"
    when_asked: list[str] = []
    first = Reply(tool_calls(("read_file", '{"path": "notes.txt"}')).chunks,
                  before=lambda: when_asked.append(stderr.read_text(encoding="utf-8")))
    (root / "notes.txt").write_text("kiwi\n", encoding="utf-8")
    env = {**os.environ, "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": "sk-test",
           "CODEWARD_HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    with FakeOpenAI([first, text("It says kiwi.")]) as fake, stderr.open("w") as errors:
        done = subprocess.run([sys.executable, "-m", "codeward", "chat"], cwd=root, input="what does notes.txt say?\n",
                              env={**env, "OPENAI_BASE_URL": fake.base_url}, stdout=subprocess.PIPE, stderr=errors,
                              text=True, timeout=120)
    said = stderr.read_text(encoding="utf-8")
    assert done.returncode == 0 and "It says kiwi." in done.stdout, said
    assert when_asked[0].endswith("[codeward] round 1: asked fake-model; waiting for its answer\n"), when_asked
    assert "[codeward] round 2: asked fake-model; waiting for its answer" in said
    assert re.search(r"\[codeward\] answered in \d+\.\d s \(2 rounds, 1 tool call\)\n", said), said


def test_ask_stops_a_model_that_repeats_a_failing_call(root: Path) -> None:
    with FakeOpenAI([tool_calls(("read_file", '{"path": "missing.txt"}'))], repeat_last=True) as fake:
        done = ask(root, fake.base_url, "read missing.txt")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("┌ read_file") == 1
    assert "stopped: the model repeated a call that had failed 3 times" in done.stderr
    assert len(fake.requests) == 4
