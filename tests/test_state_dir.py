"""``.codeward/`` has one owner: every kind of write codeward makes there stays out of ``git status``,
and none of them follows a link a repository planted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codeward.engines.code_intel.symbol_index import SymbolIndex
from codeward.engines.registry.outputs import save_output
from codeward.engines.shell.log import ShellLogEntry, append_entry
from codeward.kernel import state_dir
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Settings, ToolContext
from codeward.kernel.state_dir import StateDir, StateDirError
from codeward.kernel.workspace import Workspace
from tests.registry_support import python_tool, user_space, write  # noqa: F401 (fixture)


def git_status(root: Path) -> list[str]:
    """What ``git status`` shows, as a user of the repository sees it."""
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, check=True,
                          capture_output=True, text=True)
    return sorted(line for line in done.stdout.split("\n") if line)


@pytest.fixture
def repo(root: Path) -> Path:
    (root / "app.py").write_text("def main():\n    return 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=root,
                   check=True)
    return root


def test_every_kind_of_write_stays_out_of_git_status(repo: Path, catalog: Catalog, user_space: Path) -> None:  # noqa: F811
    shown_gitignore = ["?? .codeward/.gitignore"]
    # the symbol index
    with SymbolIndex.open(Workspace.create([repo])).data as index:
        index.refresh()
    assert (repo / ".codeward" / "index.sqlite").is_file()
    assert git_status(repo) == shown_gitignore
    # a saved (spilled) output
    (repo / "big.txt").write_text("row\n" * 100)
    subprocess.run(["git", "add", "big.txt"], cwd=repo, check=True)
    ctx = ToolContext(Workspace.create([repo]), settings=Settings(output_cap_chars=50))
    outcome = catalog.call("read_file", {"path": "big.txt"}, ctx)
    assert "saved as .codeward/outputs/" in outcome.text
    assert git_status(repo) == sorted(["A  big.txt", *shown_gitignore])
    # the shell log
    entry = ShellLogEntry("echo hi", "bash", ".", 0, "ok", 0.1, "bwrap", 30)
    assert append_entry(Workspace.create([repo]), entry) is None
    assert (repo / ".codeward" / "logs" / "shell.jsonl").is_file()
    # the registry's search index and a registry tool's saved output (.ai/ itself is the user's to track)
    write(repo, ".ai/tools/utility/greet.py", python_tool())
    catalog.call("registry_search", {"query": "greet"}, ToolContext(Workspace.create([repo])))
    assert (repo / ".codeward" / "registry.sqlite3").is_file()
    assert save_output(Workspace.create([repo]), "greet", {"greeting": "hi"}, keep=3).ok
    # per-tool virtual environments and checkpoints
    (StateDir(repo).folder(state_dir.VENVS) / "greet-abc").mkdir()
    (StateDir(repo).folder(state_dir.VENVS) / "greet-abc" / "pyvenv.cfg").write_text("home = /usr\n")
    StateDir(repo).write_new(f"{state_dir.CHECKPOINTS}/one.json", b"{}")
    assert git_status(repo) == sorted(["A  big.txt", *shown_gitignore, "?? .ai/tools/utility/greet.py"])
    # gateway pins are left for the team to share, on purpose
    StateDir(repo).replace(state_dir.PINS, b'{"version": 1, "tools": {}}\n')
    assert "?? .codeward/gateway-pins.json" in git_status(repo)


def test_an_older_codewards_gitignore_is_completed_and_a_users_is_kept(repo: Path) -> None:
    state = repo / ".codeward"
    state.mkdir()
    (state / ".gitignore").write_text("# Written by codeward: its caches and logs, rebuilt as needed. Delete this "
                                      "file to track them.\nindex.sqlite*\noutputs/\nlogs/\n")
    StateDir(repo).folder(state_dir.VENVS)
    assert (state / ".gitignore").read_text() == state_dir.GITIGNORE
    (state / ".gitignore").write_text("# mine\n")
    StateDir(repo).write_new("logs/x.txt", b"x")
    assert (state / ".gitignore").read_text() == "# mine\n"


def test_a_planted_state_folder_link_is_never_followed(root: Path, tmp_path: Path, catalog: Catalog) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".codeward").symlink_to(elsewhere, target_is_directory=True)  # a cloned repository can ship this
    with pytest.raises(StateDirError, match="link or a file"):
        StateDir(root).folder(state_dir.OUTPUTS)
    entry = ShellLogEntry("echo hi", "bash", ".", 0, "ok", 0.1, "bwrap", 30)
    problem = append_entry(Workspace.create([root]), entry)
    assert problem is not None and "link" in problem
    opened = SymbolIndex.open(Workspace.create([root]))
    assert not opened.ok and "link" in opened.errors[0].message
    ctx = ToolContext(Workspace.create([root]), settings=Settings(output_cap_chars=50))
    (root / "big.txt").write_text("row\n" * 100)
    assert "Narrow the request" in catalog.call("read_file", {"path": "big.txt"}, ctx).text
    assert list(elsewhere.iterdir()) == []


def test_planted_links_inside_the_state_folder_are_never_followed(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_text("the user's file\n")
    state = root / ".codeward"
    (state / "logs").mkdir(parents=True)
    (state / "logs" / "shell.jsonl").symlink_to(outside)
    entry = ShellLogEntry("echo hi", "bash", ".", 0, "ok", 0.1, "bwrap", 30)
    assert append_entry(Workspace.create([root]), entry) is not None
    for side in ("index.sqlite", "index.sqlite-wal", "index.sqlite-journal", "index.sqlite.lock"):
        (state / side).symlink_to(outside)
        opened = SymbolIndex.open(Workspace.create([root]))
        assert not opened.ok and side in opened.errors[0].message
        (state / side).unlink()
    (state / "outputs").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(StateDirError):
        StateDir(root).write_new("outputs/x.txt", b"x")
    assert outside.read_text() == "the user's file\n" and not (tmp_path / "x.txt").exists()

