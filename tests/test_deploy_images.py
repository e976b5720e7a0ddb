"""deploy/build-sandbox-image refuses what it cannot build before it touches anything."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "build-sandbox-image"


def test_an_unknown_language_is_refused_naming_the_ones_it_can_build(tmp_path: Path) -> None:
    done = subprocess.run([str(SCRIPT), "python", "perl"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=30, check=False)
    assert done.returncode == 2
    assert "unknown language 'perl'; choose from python javascript bash c cpp go rust java (or all)" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_says_how_to_use_the_image() -> None:
    done = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0
    assert "docker_images = { python = \"codeward-sandbox:bookworm\"" in done.stdout
