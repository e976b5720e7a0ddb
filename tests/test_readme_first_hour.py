"""The README's "Use it from the command line" block, run line by line exactly as printed, in a small
project made to match it (a README.md, an app.py with ``x = 1``, a ``*_handler`` function, a git
history). Each line must exit 0. A line that needs what the test machine or project cannot give is
named below with the reason, so a new line is either run here or explained.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeward.apps.cli import main
from tests.conftest import REPO
from tests.docs_commands import DocCommand, commands_in

BLOCK_START = "codeward tools"
NOT_RUN_HERE = {
    "call apply_patch": "the shell fills in $(git diff); the patch tools have their own tests against git apply",
    "call undo": "it takes back edits made before it; tests/test_cli_undo.py runs it",
    "call run_tests": "runs the project's tests in the sandbox: tests/test_coding_exec_tools.py",
    "run script.py": "runs a program in the sandbox: tests/test_coding_exec_cli.py",
    "review src": "runs five analyzers in the sandbox: tests/test_review_cli.py",
    "beads init": "writes a tracker: tests/test_beads.py",
    "registry new": "writes a registry item: tests/test_registry_cli.py",
    "sign my_tool": "signs the item `registry new` wrote on the same line: tests/test_registry_cli.py",
    "serve --meta": "a server that waits for a client: tests/test_client_banners.py starts one",
}


def readme_block() -> list[DocCommand]:
    """The commands of the README block that starts with ``codeward tools``."""
    commands = commands_in(REPO / "README.md")
    first = next(i for i, c in enumerate(commands) if " ".join(c.words) == BLOCK_START.removeprefix("codeward "))
    block = [commands[first]]
    for command in commands[first + 1:]:
        if command.line - block[-1].line > 1:
            break
        block.append(command)
    return block


def _reason(command: DocCommand) -> str | None:
    said = " ".join(command.words)
    return next((why for start, why in NOT_RUN_HERE.items() if said.startswith(start)), None)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("first-hour")
    (root / "README.md").write_text("".join(f"line {n}\n" for n in range(1, 40)), encoding="utf-8")
    (root / "app.py").write_text("x = 1\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "web.py").write_text("def login_handler(request):\n    return request\n", encoding="utf-8")
    git = ["git", "-c", "user.name=Ann", "-c", "user.email=ann@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=root, check=True)
    before = Path.cwd()
    os.chdir(root)
    try:
        yield root
    finally:
        os.chdir(before)


def test_the_block_is_found_and_every_line_is_run_or_explained() -> None:
    block = readme_block()
    assert len(block) >= 15, [c.where for c in block]
    assert len([c for c in block if _reason(c) is None]) >= 9


@pytest.mark.parametrize("command", readme_block(), ids=lambda c: " ".join(c.words)[:40])
def test_each_line_works_as_printed(command: DocCommand, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = _reason(command)
    if reason is not None:
        pytest.skip(f"not run here: {reason}")
    monkeypatch.setenv("CODEWARD_HOME", str(project.parent / "data"))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(command.words))
    assert code == 0, f"{command.where}\nstdout: {out.getvalue()[-2000:]}\nstderr: {err.getvalue()[-2000:]}"
    assert out.getvalue().strip() or err.getvalue().strip(), f"{command.where}: printed nothing"
