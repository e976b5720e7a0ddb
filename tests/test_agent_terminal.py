"""``codeward chat`` driven for real in a terminal: tmux send-keys in, capture-pane out."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI, llama_props, text, tool_calls
from tests.process_support import codeward_http

pytestmark = pytest.mark.xdist_group("terminal")


class Tmux:
    """One detached tmux session running a command; type into it and read its screen.

    Each session has its own tmux server (``-L``): a shared server would run the command with
    the environment of whichever process started it first.
    """

    def __init__(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        self.name = f"cw-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        self.tmux("new-session", "-d", "-s", self.name, "-x", "160", "-y", "50", "-c", str(cwd),
                  f"env {exports} {command}", check=True)

    def tmux(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null", *args], check=check, capture_output=True,
                              text=True)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys, check=True)

    def type_line(self, line: str) -> None:
        self.send("-l", line)
        self.send("Enter")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-S", "-200", "-t", self.name).stdout

    def running(self) -> bool:
        return self.tmux("has-session", "-t", self.name).returncode == 0

    def wait_for(self, needle: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if needle in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{needle!r} did not appear; screen:\n{self.screen()}")

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[str]:
    """A real MCP server over HTTP to connect with :mcp connect (codeward itself, on another root)."""
    yield from _serve_http(tmp_path)


@pytest.fixture
def guarded_upstream(tmp_path: Path) -> Iterator[str]:
    """The same, requiring ``Authorization: Bearer upstream-secret``."""
    yield from _serve_http(tmp_path, token="upstream-secret")


def _serve_http(tmp_path: Path, token: str | None = None) -> Iterator[str]:
    other = tmp_path / "other"
    other.mkdir()
    auth = ["--token-env", "UPSTREAM_TOKEN"] if token else []
    with codeward_http(str(other), *auth, env={"UPSTREAM_TOKEN": token or ""}, timeout=30) as url:
        yield url


def test_chat_in_a_terminal_approves_a_call_runs_mcp_commands_and_cancels(root: Path, tmp_path: Path,
                                                                         upstream: str) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/test installs it)")
    slow = text("word " * 200, pieces=200)
    slow.delay_s = 0.05
    replies = [
        tool_calls(("write_file", '{"path": "hello.txt", "content": "hi from the model"}'), preface="Writing it."),
        text("I wrote **hello.txt** for you."),
        slow,
    ]
    with FakeOpenAI(replies) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake", "OPENAI_API_KEY": "sk-test",
               "CODEWARD_HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"], "TERM": "xterm-256color",
               "HOME": str(tmp_path)}
        shell = Tmux(f"{shlex.quote(sys.executable)} -m codeward chat", root, env)
        try:
            shell.wait_for("codeward chat")
            shell.type_line("please write hello.txt")
            shell.wait_for("call write_file(")
            assert not (root / "hello.txt").exists(), "nothing runs before the approval"
            shell.type_line("y")
            shell.wait_for("I wrote hello.txt for you.")
            assert (root / "hello.txt").read_text() == "hi from the model"
            screen = shell.screen()
            assert "┌ write_file" in screen and "└ ok" in screen

            shell.type_line(":mcp list")
            shell.wait_for("no MCP servers connected")
            shell.type_line(f":mcp connect {upstream} peer")
            shell.wait_for("peer: ready")
            shell.type_line(":mcp tools")
            shell.wait_for("peer__read_file")
            shell.type_line(":mcp tool peer__get_tree")
            shell.wait_for('"max_depth"')

            shell.type_line("tell me a long story")
            shell.wait_for("word word")
            shell.send("C-c")
            shell.wait_for("response cancelled")
            assert len(fake.requests) == 3
            shell.type_line(":quit")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and shell.running():
                time.sleep(0.1)
        finally:
            shell.close()
    sessions = list((tmp_path / "home" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1 and "hi from the model" in sessions[0].read_text()


def test_chat_resume_continues_the_saved_context(root: Path, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/test installs it)")
    home = tmp_path / "home"
    with FakeOpenAI([text("First answer."), text("Second answer.")]) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake", "CODEWARD_HOME": str(home),
               "PATH": os.environ["PATH"], "TERM": "xterm-256color", "HOME": str(tmp_path)}
        first = Tmux(f"{shlex.quote(sys.executable)} -m codeward chat", root, env)
        try:
            first.wait_for("codeward chat")
            first.type_line("remember the number 42")
            first.wait_for("First answer.")
            first.type_line(":quit")
        finally:
            time.sleep(0.5)
            first.close()
        second = Tmux(f"{shlex.quote(sys.executable)} -m codeward chat --resume", root, env)
        try:
            second.wait_for("resumed")
            second.type_line("what number?")
            second.wait_for("Second answer.")
        finally:
            second.close()
    resumed = fake.messages(1)
    assert [m["content"] for m in resumed[1:]] == ["remember the number 42", "First answer.", "what number?"]
    assert resumed[0] == fake.messages(0)[0]


def test_reply_cmd_lines_run_only_after_a_yes(root: Path, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/test installs it)")
    replies = [text("Check the files:\nCMD: ls -1\nCMD: touch refused.txt"), text("Thanks.")]
    (root / "visible.txt").write_text("x")
    with FakeOpenAI(replies) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake", "CODEWARD_HOME": str(tmp_path / "h"),
               "PATH": os.environ["PATH"], "TERM": "xterm-256color", "HOME": str(tmp_path)}
        shell = Tmux(f"{shlex.quote(sys.executable)} -m codeward chat", root, env)
        try:
            shell.wait_for("codeward chat")
            shell.type_line("what is here?")
            shell.wait_for("run `ls -1`?")
            shell.type_line("y")
            shell.wait_for("run `touch refused.txt`?")
            shell.type_line("n")
            shell.wait_for("EXIT CODE: 0")
            shell.type_line("ok")
            shell.wait_for("Thanks.")
        finally:
            shell.close()
    assert not (root / "refused.txt").exists()
    sent = fake.messages(1)[-1]["content"]
    assert sent.startswith("[exec: ls -1]\nSTDOUT:\nvisible.txt\n") and sent.endswith("ok")
    assert "EXIT CODE: 0" in sent


def test_tracked_files_go_to_the_model_once_and_are_restored_on_resume(root: Path, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/test installs it)")
    (root / "notes.md").write_text("# Notes\nremember the harbour\n")
    (root / "other.md").write_text("other file\n")
    home = tmp_path / "home"
    with FakeOpenAI([text("Noted."), text("Still noted."), text("Back again.")]) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake", "CODEWARD_HOME": str(home),
               "PATH": os.environ["PATH"], "TERM": "xterm-256color", "HOME": str(tmp_path)}
        first = Tmux(f"{shlex.quote(sys.executable)} -m codeward chat --add notes.md", root, env)
        try:
            first.wait_for("tracking notes.md")
            first.type_line("read my notes")
            first.wait_for("Noted.")
            first.type_line(":files")
            first.wait_for("~tokens")
            first.type_line(":add other.md")
            first.wait_for("tracking other.md")
            first.type_line(":drop other.md")
            first.wait_for("dropped other.md")
            first.type_line("anything else?")
            first.wait_for("Still noted.")
            first.type_line(":quit")
        finally:
            time.sleep(0.5)
            first.close()
        second = Tmux(f"{shlex.quote(sys.executable)} -m codeward chat --resume", root, env)
        try:
            second.wait_for("tracking notes.md")
            second.type_line(":files")
            second.wait_for("notes.md")
            screen = second.wait_for("~tokens")
            second.type_line("hello again")
            second.wait_for("Back again.")
        finally:
            second.close()
    first_message = fake.messages(0)[-1]["content"]
    assert first_message.startswith("[FILE: notes.md]\n# Notes\nremember the harbour\n")
    assert first_message.endswith("read my notes")
    assert fake.messages(1)[-1]["content"] == "anything else?", "a file dropped before sending is not sent"
    assert fake.messages(2)[-1]["content"] == "hello again"
    assert "other.md" not in screen.split(":files")[-1]


def test_chat_connects_with_a_token_shows_identifiers_as_written_and_counts_the_tools(
        root: Path, tmp_path: Path, guarded_upstream: str) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/test installs it)")
    answer = "Edit __init__.py and __version__.py; keep my_var and `__all__`."
    with FakeOpenAI([text(answer)], props=llama_props(16_384)) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake", "CODEWARD_HOME": str(tmp_path / "home"),
               "PATH": os.environ["PATH"], "TERM": "xterm-256color", "HOME": str(tmp_path),
               "PEER_TOKEN": "upstream-secret"}
        shell = Tmux(f"{shlex.quote(sys.executable)} -m codeward chat", root, env)
        try:
            shell.wait_for("codeward chat")
            shell.type_line(f":mcp connect {guarded_upstream} other --token-env UNSET_TOKEN")
            shell.wait_for("cannot connect: --token-env UNSET_TOKEN: that environment variable is empty")
            shell.type_line(f":mcp connect {guarded_upstream} bare")
            shell.wait_for("bare: ")
            shell.type_line(f":mcp connect {guarded_upstream} peer --token-env PEER_TOKEN")
            shell.wait_for("peer: ready")
            shell.type_line(":mcp tools")
            shell.wait_for("peer__read_file")
            shell.type_line("what should I edit?")
            screen = shell.wait_for("Edit __init__.py")
            assert "Edit __init__.py and __version__.py; keep my_var and __all__." in screen
            shell.wait_for("history ~")
            flowing = " ".join(shell.screen().split())
            assert "bare: ready" not in flowing
            status = flowing[flowing.index("context ~"):]
            assert " of 16,384 tokens: tools ~" in status and "· history ~" in status
            assert "· new tracked files ~0 (0 tracked)" in status
            shell.type_line(":quit")
        finally:
            shell.close()
    assert fake.headers, "the model was asked"

