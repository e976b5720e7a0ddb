"""End to end with a real model: Qwen2.5-Coder-0.5B served locally by llama.cpp (xllamacpp).

The README's recipe, as written: ``codeward model serve-local`` with its defaults, then
``codeward ask`` from a fresh project with nothing but ``OPENAI_BASE_URL`` and ``OPENAI_MODEL``
set — no codeward.toml, no flags. The question needs a tool call. Skips, saying why, only when
the model packages are not installed (``scripts/test`` installs them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process_support import free_port

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("real-model")]


@pytest.fixture(scope="module")
def local_model() -> Iterator[str]:
    from codeward.apps.agent.local_model import LocalModelUnavailable, part_paths

    try:
        part_paths()
        import xllamacpp  # type: ignore[import-not-found,import-untyped,unused-ignore]  # noqa: F401
    except (LocalModelUnavailable, ImportError) as exc:
        pytest.skip(f"the local model cannot run here: {exc}")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "model", "serve-local", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 600
    base_url = ""
    while time.monotonic() < deadline and not base_url:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            pytest.fail("codeward model serve-local exited before serving")
        if line.startswith("serving "):
            base_url = line.split(" at ", 1)[1].strip()
    assert base_url, "the local model did not start within 600 s"
    try:
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return dict(json.loads(response.read()))


def test_the_server_names_its_model_and_states_its_context(local_model: str) -> None:
    listing = _get(f"{local_model}/models")
    entry = listing["data"][0]  # type: ignore[index]
    assert entry["id"] == "qwen2.5-coder-0.5b" and entry["aliases"] == ["qwen2.5-coder-0.5b"]
    props = _get(local_model.removesuffix("/v1") + "/props")
    assert props["default_generation_settings"]["n_ctx"] == 16_384  # type: ignore[index]


def test_ask_with_the_default_configuration_answers_with_a_tool_call(local_model: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("The secret word is PELICAN.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEWARD_"))}
    env.update(OPENAI_BASE_URL=local_model, OPENAI_MODEL="qwen2.5-coder-0.5b", CODEWARD_HOME=str(tmp_path / "home"))
    done = subprocess.run([sys.executable, "-m", "codeward", "ask", "Read notes.txt and tell me the secret word."],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)
    report = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
    assert "[codeward] trimmed to core" in done.stderr, report
    assert "┌ read_file" in done.stderr, report
    assert "│ The secret word is PELICAN." in done.stderr, "the tool ran and its result went back to the model"
    assert done.returncode == 0, report
    assert "PELICAN" in done.stdout.upper(), report
    assert not (project / "codeward.toml").exists() and sorted(p.name for p in project.iterdir()) == ["notes.txt"]
