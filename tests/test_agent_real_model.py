"""End to end with a real model: Qwen2.5-Coder-0.5B served locally by llama.cpp (xllamacpp).

Checks the protocol and the loop — a real streamed tool call is made, run and answered — not the
model's wisdom. Skips, saying why, only when the model packages are not installed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("real-model")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def local_model() -> Iterator[str]:
    from codeward.agent.local_model import LocalModelUnavailable, part_paths

    try:
        part_paths()
        import xllamacpp  # type: ignore[import-not-found,import-untyped,unused-ignore]  # noqa: F401
    except (LocalModelUnavailable, ImportError) as exc:
        pytest.skip(f"the local model cannot run here: {exc}")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "model", "serve-local", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 240
    base_url = ""
    while time.monotonic() < deadline and not base_url:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            pytest.fail("codeward model serve-local exited before serving")
        if line.startswith("serving "):
            base_url = line.split(" at ", 1)[1].strip()
    assert base_url, "the local model did not start within 240 s"
    try:
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_ask_with_the_real_local_model_makes_a_tool_call(local_model: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("The secret word is PELICAN.\n")
    (project / "codeward.toml").write_text(
        '[server]\ntoolsets = ["files"]\n'
        f'[model]\ndefault = "local"\n[model.profiles.local]\nbase_url = "{local_model}"\n'
        'model = "qwen2.5-coder-0.5b"\nmax_tokens = 160\ntemperature = 0.0\ntext_tool_calls = true\n'
        '[mcp]\nmax_tool_depth = 3\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, "-m", "codeward", "ask",
                           "Use the read_file tool to read notes.txt, then tell me the secret word."],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert "┌ read_file" in done.stderr, done.stderr[-2000:]
    assert "│ The secret word is PELICAN." in done.stderr, "the tool ran and its result went back to the model"
    assert done.returncode == 0 or "depth limit reached" in done.stderr, done.stderr[-2000:]
    if done.returncode == 0:
        assert done.stdout.strip(), "a final answer was printed"
