"""``codeward undo`` on the command line: list, preview, undo, and files changed by hand since."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import snapshot


def codeward(root: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeward", *args], cwd=root, input=stdin, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _tree(root: Path) -> dict[str, bytes]:
    return {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward")}


def test_undo_from_the_command_line(root: Path) -> None:
    (root / "app.py").write_text("x = 1\n")
    start = _tree(root)
    assert codeward(root, "call", "edit_file", "path=app.py", "old_string=x = 1", "new_string=x = 2").returncode == 0
    assert codeward(root, "call", "write_file", "path=notes.md", "content=# notes\n").returncode == 0
    listed = codeward(root, "undo", "--list")
    assert listed.returncode == 0 and "write_file" in listed.stdout and "edit_file" in listed.stdout
    preview = codeward(root, "undo", "2", "--dry-run")
    assert preview.returncode == 0 and "notes.md" in preview.stdout and (root / "notes.md").exists()
    done = codeward(root, "undo", "2")
    assert done.returncode == 0, done.stderr
    assert _tree(root) == start


def test_undo_refuses_over_files_changed_by_hand_unless_forced(root: Path) -> None:
    (root / "app.py").write_text("x = 1\n")
    assert codeward(root, "call", "edit_file", "path=app.py", "old_string=x = 1", "new_string=x = 2").returncode == 0
    (root / "app.py").write_text("typed by hand\n")
    refused = codeward(root, "undo", stdin="y\n")  # not a terminal: nobody is asked, --force is the way
    assert refused.returncode == 1 and "changed outside codeward" in refused.stderr and "force" in refused.stderr
    assert (root / "app.py").read_text() == "typed by hand\n"
    forced = codeward(root, "undo", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (root / "app.py").read_text() == "x = 1\n"


def test_bad_undo_arguments_are_refused(root: Path) -> None:
    both = codeward(root, "undo", "2", "--to", "1")
    assert both.returncode == 2 and "not both" in both.stderr
    zero = codeward(root, "undo", "0")
    assert zero.returncode == 2 and "at least 1" in zero.stderr
    nothing = codeward(root, "undo")
    assert nothing.returncode == 1 and nothing.stderr.strip()
    missing = codeward(root, "undo", "--to", "99")
    assert missing.returncode == 1 and "99" in missing.stderr


def test_on_a_terminal_undo_asks_before_overwriting(root: Path) -> None:
    import pty

    (root / "app.py").write_text("x = 1\n")
    assert codeward(root, "call", "edit_file", "path=app.py", "old_string=x = 1", "new_string=x = 2").returncode == 0
    for answer, expected, code in (("n\n", "typed by hand\n", 1), ("y\n", "x = 1\n", 0)):
        (root / "app.py").write_text("typed by hand\n")
        controller, terminal = pty.openpty()
        try:
            os.write(controller, answer.encode())
            done = subprocess.run([sys.executable, "-m", "codeward", "undo"], cwd=root, stdin=terminal,
                                  capture_output=True, text=True, timeout=120)
        finally:
            os.close(controller)
            os.close(terminal)
        assert "Overwrite them" in done.stderr and "app.py" in done.stderr, done.stderr
        assert done.returncode == code and (root / "app.py").read_text() == expected, done.stderr
