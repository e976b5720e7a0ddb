"""The gate refuses to make a folder git would open as a repository (a bare one, built file by
file), and nothing else: real git is the judge of what it would open."""

from __future__ import annotations

import itertools
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.engines.shell import ShellSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import GIT_MARKER_LOCK, Access, Workspace, looks_like_git_dir
from tests.sandbox_support import needs_bwrap

BARE_PARTS = {
    "HEAD": "ref: refs/heads/main\n",
    "config": "[core]\n\tbare = true\n\tfsmonitor = touch planted; false\n",
    "objects/info/.keep": "",
    "refs/heads/.keep": "",
}


def git_opens(folder: Path) -> bool:
    """Whether the host's git takes ``folder`` for a repository (as GIT_DIR, and run inside it)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1"}
    as_dir = subprocess.run(["git", "--git-dir", str(folder), "rev-parse", "--git-dir"], env=env,
                            capture_output=True, check=False)
    inside = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=folder, env={**env, "GIT_CEILING_DIRECTORIES":
                            str(folder.parent)}, capture_output=True, check=False)
    return as_dir.returncode == 0 or inside.returncode == 0


def write(workspace: Workspace, rel: str, text: str) -> str:
    """Write like a file tool: through the gate, or not at all. The refusal, "" when written."""
    resolved = workspace.resolve(rel, Access.WRITE)
    if not resolved.ok:
        return resolved.errors[0].message
    resolved.data.parent.mkdir(parents=True, exist_ok=True)
    resolved.data.write_text(text)
    return ""


@pytest.mark.parametrize("order", list(itertools.permutations(BARE_PARTS)))
def test_a_bare_repository_cannot_be_built_file_by_file_in_any_order(tmp_path: Path, order: tuple[str, ...]) -> None:
    workspace = Workspace.create([tmp_path])
    refusals = [write(workspace, f"planted/{rel}", BARE_PARTS[rel]) for rel in order]
    assert any("a folder git would open as a repository" in refusal for refusal in refusals), refusals
    assert not git_opens(tmp_path / "planted")


def test_the_root_itself_cannot_become_a_bare_repository(tmp_path: Path) -> None:
    workspace = Workspace.create([tmp_path])
    refusals = [write(workspace, rel, text) for rel, text in BARE_PARTS.items()]
    assert any("the root" in refusal for refusal in refusals), refusals
    assert not git_opens(tmp_path)


def test_a_linked_worktree_shape_and_a_commondir_pointer_are_refused(tmp_path: Path) -> None:
    workspace = Workspace.create([tmp_path])
    assert write(workspace, "wt/HEAD", "ref: refs/heads/main\n") == ""
    assert "repository" in write(workspace, "wt/commondir", "../elsewhere\n")
    assert write(workspace, "wt2/gitdir", "/tmp/x/.git\n") == ""
    assert "repository" in write(workspace, "wt2/HEAD", "ref: refs/heads/main\n")


def test_writes_into_a_repository_already_there_are_refused(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "fixtures" / "remote.git")], check=True)
    workspace = Workspace.create([tmp_path])
    for rel in ("fixtures/remote.git/config", "fixtures/remote.git/hooks/pre-receive", "fixtures/remote.git/x",
                "fixtures/remote.git"):
        assert "fixtures/remote.git/" in write(workspace, rel, "x"), rel
    assert write(workspace, "fixtures/notes.txt", "fine\n") == ""


def test_ordinary_files_named_like_git_files_stay_writable(tmp_path: Path) -> None:
    workspace = Workspace.create([tmp_path])
    ordinary = {"config": "key = 1\n", "HEAD": "a heading\n", "docs/HEAD": "x\n", "docs/config": "y\n",
                "app/objects/user.py": "", "app/refs/notes.md": "", "src/config/settings.py": "",
                "web/refs/HEAD.txt": "", "lib/gitdir.py": "", "lib/commondir.py": "", "lib/objects.py": ""}
    for rel, text in ordinary.items():
        assert write(workspace, rel, text) == "", rel
    assert not git_opens(tmp_path / "docs")


def test_one_operation_writing_several_paths_is_judged_on_the_result(tmp_path: Path) -> None:
    workspace = Workspace.create([tmp_path])
    together = [tmp_path / "new" / "HEAD", tmp_path / "new" / "objects" / "x", tmp_path / "new" / "config"]
    assert all(not workspace.write_protection(path) for path in together)  # each alone: fine
    assert "new/" in workspace.joint_write_protection(together)
    assert workspace.joint_write_protection([tmp_path / "a" / "HEAD", tmp_path / "b" / "objects" / "x"]) == ""


def test_the_test_itself_follows_git(tmp_path: Path) -> None:
    """What git opens is refused; what it does not, with HEAD alone or config alone, is not."""
    assert looks_like_git_dir({"HEAD", "objects", "refs"})
    assert looks_like_git_dir({"HEAD", "refs"}) and looks_like_git_dir({"HEAD", "commondir"})
    assert not looks_like_git_dir({"HEAD", "config"}) and not looks_like_git_dir({"objects", "refs", "config"})
    folder = tmp_path / "real"
    subprocess.run(["git", "init", "-q", "--bare", str(folder)], check=True)
    assert git_opens(folder) and looks_like_git_dir(os.listdir(folder))


# -- writers whose paths are not arguments take the repository-names lock -------------------------------------------
# Two concurrent calls could each add half of a repository after both were checked: the file
# tools hold one lock for every write adding such a name (their paths are arguments); the
# patch and the shell's write-back learn theirs later and take it themselves. Each test plays
# the other call: it holds that lock, lets the writer start and wait, completes its own half
# through the gate, and releases — the writer then sees that half and refuses its own.

def _start(target: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    box: list[object] = []
    worker = threading.Thread(target=lambda: box.append(target()), daemon=True)
    worker.start()
    return worker, box


def test_apply_patch_waits_for_a_concurrent_repository_write_and_then_refuses(tmp_path: Path,
                                                                              catalog: Catalog) -> None:
    ctx = ToolContext(Workspace.create([tmp_path]))
    patch = "--- /dev/null\n+++ b/new/HEAD\n@@ -0,0 +1 @@\n+ref: refs/heads/main\n"
    with catalog.locks.hold([GIT_MARKER_LOCK]):
        worker, box = _start(lambda: catalog.call("apply_patch", {"patch": patch}, ctx))
        worker.join(timeout=2)
        assert worker.is_alive(), "apply_patch did not wait for the lock that repository-making writes share"
        assert write(ctx.workspace, "new/objects/info/.keep", "") == ""  # the other call's half
    worker.join(timeout=30)
    outcome = box[0]
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert "would open as a repository" in outcome.text
    assert not (tmp_path / "new" / "HEAD").exists() and not git_opens(tmp_path / "new")


@needs_bwrap
def test_the_shell_write_back_waits_for_a_concurrent_repository_write_and_then_refuses(tmp_path: Path,
                                                                                      catalog: Catalog) -> None:
    ctx = ToolContext(Workspace.create([tmp_path]), services=Services(ShellSettings(sandbox=True)))
    script = "mkdir -p new && printf 'ref: refs/heads/main\\n' > new/HEAD && echo written"
    with catalog.locks.hold([GIT_MARKER_LOCK]):
        worker, box = _start(lambda: catalog.call("run_shell", {"script": script}, ctx))
        worker.join(timeout=8)  # the script itself takes about a second; its write-back then waits
        assert worker.is_alive(), "run_shell's write-back did not wait for the lock repository-making writes share"
        assert not (tmp_path / "new").exists()
        assert write(ctx.workspace, "new/objects/info/.keep", "") == ""
    worker.join(timeout=60)
    outcome = box[0]
    assert isinstance(outcome, ToolOutcome) and "written" in outcome.text
    assert "new/HEAD" in outcome.text and not (tmp_path / "new" / "HEAD").exists()
    assert not git_opens(tmp_path / "new")
