"""run_shell's writes come back through the workspace's write checks: what a script changes in
the project lands in an overlay, and only what the gate allows reaches the project.

Each test runs a real script in the real sandbox, then looks at the project on the host —
and, for the git attacks, runs the host's own ``git status``/``git commit`` to prove that no
planted command runs there.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from codeward.engines.sandbox.overlay import overlays_work
from codeward.engines.shell import ShellSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot
from tests.sandbox_support import needs_bwrap

NO_OVERLAY = overlays_work()
pytestmark = [needs_bwrap, pytest.mark.skipif(NO_OVERLAY is not None, reason=f"no overlay here: {NO_OVERLAY}")]
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "GIT_AUTHOR_NAME": "H",
           "GIT_AUTHOR_EMAIL": "h@x.invalid", "GIT_COMMITTER_NAME": "H", "GIT_COMMITTER_EMAIL": "h@x.invalid",
           "PATH": os.environ["PATH"]}


def shell(catalog: Catalog, root: Path, script: str, settings: ShellSettings | None = None,
          workspace: Workspace | None = None) -> ToolOutcome:
    ctx = ToolContext(workspace or Workspace.create([root]), services=Services(settings))
    outcome = catalog.call("run_shell", {"script": script, "timeout_s": 60}, ctx)
    assert not outcome.is_error, outcome.text
    return outcome


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=GIT_ENV, check=False)


def repository(root: Path) -> Path:
    git(root, "init", "-q")
    (root / "app.py").write_text("print('app')\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root


def assert_no_planted_command_runs(root: Path, marker: Path) -> None:
    """The host's git in every repository-looking place: nothing the script planted runs."""
    for where in [root, *[p.parent for p in root.rglob(".git")], *root.iterdir()]:
        if where.is_dir():
            git(where, "status")
            git(where, "commit", "-qam", "host commit", "--allow-empty")
    assert not marker.exists(), f"a command planted by the script ran on the host: {marker.read_text()}"


def test_ordinary_changes_are_applied(catalog: Catalog, root: Path) -> None:
    (root / "keep.txt").write_text("keep\n")
    (root / "gone.txt").write_text("gone\n")
    (root / "old").mkdir()
    (root / "old" / "a.txt").write_text("a\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    script = ("echo new > new.txt; echo more >> keep.txt; rm gone.txt; mkdir -p deep/er && echo x > deep/er/f\n"
              "rm -rf old && mkdir old && echo b > old/b.txt\n"  # an opaque folder: a.txt must go
              "chmod 755 tool.sh; touch -d '2001-02-03 04:05:06' new.txt\n"
              "ln -s keep.txt alias; ln -s /usr/bin/env env\n")
    outcome = shell(catalog, root, script)
    assert "NOT applied" not in outcome.text
    assert (root / "new.txt").read_text() == "new\n" and (root / "keep.txt").read_text() == "keep\nmore\n"
    assert not (root / "gone.txt").exists() and (root / "deep" / "er" / "f").read_text() == "x\n"
    assert sorted(p.name for p in (root / "old").iterdir()) == ["b.txt"]
    assert stat.S_IMODE((root / "tool.sh").stat().st_mode) == 0o755
    assert (root / "new.txt").stat().st_mtime == pytest.approx(981173106, abs=86400)
    assert os.readlink(root / "alias") == "keep.txt" and os.readlink(root / "env") == "/usr/bin/env"


def test_renaming_git_away_and_planting_a_config_never_reaches_the_host(catalog: Catalog, root: Path,
                                                                       tmp_path: Path) -> None:
    repository(root)
    marker = tmp_path / "planted-ran"
    before = snapshot(root / ".git")
    plant = f"touch {marker}; false"
    script = (f"mv .git .git-orig && cp -a .git-orig .git && git config --file .git/config core.fsmonitor '{plant}'\n"
              f"echo '#!/bin/sh\\n{plant}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit\n"
              "git status >/dev/null; echo done=$?\n")
    outcome = shell(catalog, root, script)
    assert "done=" in outcome.text and "NOT applied to the workspace (.git/ is protected" in outcome.text
    assert "git repository's metadata" in outcome.text  # .git-orig, a bare repository git would use
    assert snapshot(root / ".git") == before and not (root / ".git-orig").exists()
    assert_no_planted_command_runs(root, marker)


def test_new_git_directories_and_gitdir_pointers_are_refused(catalog: Catalog, root: Path, tmp_path: Path) -> None:
    repository(root)
    marker = tmp_path / "planted-ran"
    evil = tmp_path / "evil"
    subprocess.run(["git", "init", "-q", "--bare", str(evil)], check=True, env=GIT_ENV)
    (evil / "config").write_text(f"[core]\n\tbare = false\n\tfsmonitor = touch {marker}; false\n")
    script = ("mkdir -p sub && cd sub && git init -q && git config core.fsmonitor 'touch /tmp/x' && cd ..\n"
              f"mkdir -p pointer && echo 'gitdir: {evil}' > pointer/.git\n"
              "git init -q --bare vendored.git\n"
              "mkdir -p wt && printf 'gitdir: ../.git\\n' > wt/.git && echo ../.. > .git/commondir\n")
    outcome = shell(catalog, root, script)
    assert not (root / "sub" / ".git").exists() and not (root / "pointer" / ".git").exists()
    assert not (root / "vendored.git").exists() and not (root / "wt" / ".git").exists()
    assert not (root / ".git" / "commondir").exists()
    assert outcome.text.count("NOT applied") >= 2
    assert_no_planted_command_runs(root, marker)


def test_deleting_a_folder_keeps_the_repository_inside_it(catalog: Catalog, root: Path) -> None:
    nested = root / "vendor" / "lib"
    nested.mkdir(parents=True)
    repository(nested)
    (root / "vendor" / "notes.txt").write_text("n\n")
    before = snapshot(nested / ".git")
    outcome = shell(catalog, root, "rm -rf vendor; ls")
    assert "NOT applied to the workspace (.git/ is protected" in outcome.text
    assert snapshot(nested / ".git") == before
    assert not (root / "vendor" / "notes.txt").exists() and not (nested / "app.py").exists()


def test_codeward_configuration_and_state_are_refused(catalog: Catalog, root: Path) -> None:
    (root / "codeward.toml").write_text("[shell]\nsandbox = true\n")
    script = ("printf '[shell]\\nsandbox = false\\n' > codeward.toml; echo '[env]' > mcp_env.toml\n"
              "mkdir -p sub && echo x > sub/codeward.toml; mkdir -p .codeward/pins && echo x > .codeward/pins/p\n")
    outcome = shell(catalog, root, script)
    assert (root / "codeward.toml").read_text() == "[shell]\nsandbox = true\n"
    assert not (root / "mcp_env.toml").exists() and not (root / "sub" / "codeward.toml").exists()
    assert not (root / ".codeward" / "pins").exists()
    assert "codeward's configuration is protected" in outcome.text and ".codeward/ is protected" in outcome.text


def test_links_out_of_the_workspace_and_special_files_are_refused(catalog: Catalog, root: Path,
                                                                  tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    script = (f"ln -s {outside} out; ln -s ../../etc/passwd up; ln -s .git/hooks hooks; mkfifo pipe; "
              "ln -s /tmp/x tmp\n")
    outcome = shell(catalog, root, script)
    for name in ("out", "up", "hooks", "pipe", "tmp"):
        assert not os.path.lexists(root / name), name
    assert "a symlink pointing outside the workspace" in outcome.text and "special files" in outcome.text
    assert outside.read_text() == "outside\n"


def test_blacklisted_names_created_by_a_script_are_refused(catalog: Catalog, root: Path) -> None:
    outcome = shell(catalog, root, "echo TOKEN=x > .env.local; echo k > server.key; echo ok > fine.txt")
    assert not (root / ".env.local").exists() and not (root / "server.key").exists()
    assert (root / "fine.txt").read_text() == "ok\n" and "blacklisted" in outcome.text


def test_tracked_files_outside_the_roots_come_back_through_the_gate(catalog: Catalog, root: Path,
                                                                    tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tracked = elsewhere / "tracked.txt"
    tracked.write_text("old\n")
    workspace = Workspace.create([root], files=[tracked])
    shell(catalog, root, f"echo new > {tracked}", workspace=workspace)
    assert tracked.read_text() == "new\n"


def test_a_symlinked_folder_swapped_in_is_not_followed(catalog: Catalog, root: Path, tmp_path: Path) -> None:
    """A script replacing a folder by a link to outside, then writing 'into' it, changes nothing outside."""
    outside = tmp_path / "target"
    outside.mkdir()
    (root / "data").mkdir()
    outcome = shell(catalog, root, f"rm -rf data && ln -s {outside} data && echo x > data/f; echo rc=$?")
    assert list(outside.iterdir()) == []
    assert not (root / "data").is_symlink()
    assert "rc=" in outcome.text


@pytest.mark.skipif(os.geteuid() != 0, reason="only root serves another user's project")
def test_root_serving_a_users_project_runs_scripts_as_that_user(catalog: Catalog) -> None:
    """As root, a script runs with the project owner's rights (not root's) and can change that
    user's files; what it creates belongs to that user."""
    from tests.redteam.harness import principal

    user = principal("user")
    project = Path(tempfile.mkdtemp(prefix="codeward-owned-"))
    try:
        project.chmod(0o755)
        (project / "owned.txt").write_text("one\n")
        (project / "root-only.txt").write_text("root's\n")
        for path in (project, project / "owned.txt"):
            os.chown(path, user.uid, user.gid)
        (project / "root-only.txt").chmod(0o600)
        outcome = shell(catalog, project, "echo two >> owned.txt; echo new > new.txt; mkdir made; ln -s new.txt link\n"
                                          "cat root-only.txt; echo read=$?")
        assert "read=1" in outcome.text and "root's" not in outcome.text  # the owner's rights, not root's
        assert (project / "owned.txt").read_text() == "one\ntwo\n"
        for name in ("owned.txt", "new.txt", "made", "link"):
            info = (project / name).lstat()
            assert (info.st_uid, info.st_gid) == (user.uid, user.gid), name
    finally:
        shutil.rmtree(project, ignore_errors=True)
