"""The hardened git layer: repositories verified inside the roots, protected files never shown,
nothing the repository or the machine's git configuration names ever run."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.engines.git import EMPTY_TREE, Repository
from codeward.engines.git.diff_sections import withhold
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
Call = Callable[..., ToolOutcome]
SECRETS = ("DOTENV-SECRET-1", "DOTENV-SECRET-2", "KEY-SECRET", "CONFIGURED-SECRET", "PROD-SECRET")


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args], cwd=root,
                          env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(root: Path) -> Path:
    """A repository that committed its secrets, then changed them."""
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('v1')\n")
    (root / ".env").write_text(f"TOKEN={SECRETS[0]}\n")
    (root / "deploy").mkdir()
    (root / "deploy" / "server.KEY").write_text(f"{SECRETS[2]}\n")
    (root / "notes").mkdir()
    (root / "notes" / "private.txt").write_text(f"{SECRETS[3]}\n")
    (root / "sub").mkdir()
    (root / "sub" / ".env").write_text(f"{SECRETS[4]}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    (root / ".env").write_text(f"TOKEN={SECRETS[1]}\n")
    (root / "app.py").write_text("print('v2')\n")
    git(root, "commit", "-qam", "two")
    (root / ".env").write_text("TOKEN=work-tree\n")
    (root / "sub" / ".env").write_text("changed\n")
    (root / "app.py").write_text("print('v3')\n")
    return root


@pytest.fixture
def call_with_blacklist(repo: Path, catalog: Catalog) -> Call:
    ctx = ToolContext(Workspace.create([repo], extra_blacklist=["notes/private.txt"]))

    def run(name: str, /, **arguments: object) -> ToolOutcome:
        return catalog.call(name, arguments, ctx)

    return run


@pytest.mark.parametrize("revisions", [{}, {"base_rev": "HEAD~1"}, {"base_rev": "HEAD~1", "head_rev": "HEAD"},
                                       {"base_rev": EMPTY_TREE}, {"base_rev": EMPTY_TREE, "head_rev": "HEAD"},
                                       {"base_rev": "HEAD", "head_rev": EMPTY_TREE}, {"base_rev": ""}])
def test_protected_files_never_appear_in_a_diff_whatever_the_revisions(call_with_blacklist: Call,
                                                                         revisions: dict[str, str]) -> None:
    outcome = call_with_blacklist("get_git_diff", path=".", **revisions)
    assert not outcome.is_error, outcome.text
    for secret in (*SECRETS, "work-tree"):
        assert secret not in outcome.text, f"{secret} leaked with {revisions}: {outcome.text}"
    assert ".env" not in outcome.text and "server.KEY" not in outcome.text and "private.txt" not in outcome.text
    if revisions.get("base_rev", "HEAD") != "":
        assert "app.py" in outcome.text  # the rest of the diff is still there


def test_a_protected_path_itself_is_refused_and_a_blob_is_no_revision(repo: Path, call_with_blacklist: Call) -> None:
    assert call_with_blacklist("get_git_diff", path=".env").is_error
    blob = git(repo, "rev-parse", "HEAD~1:.env").strip()
    other = git(repo, "rev-parse", "HEAD:.env").strip()
    outcome = call_with_blacklist("get_git_diff", path=".", base_rev=blob, head_rev=other)
    assert outcome.is_error and "as a commit or tree" in outcome.text
    assert not any(secret in outcome.text for secret in SECRETS)
    ranged = call_with_blacklist("get_git_diff", path=".", base_rev="HEAD~1..HEAD")
    assert ranged.is_error and "range" in ranged.text


def test_a_gitdir_pointer_out_of_the_roots_is_refused(tmp_path: Path, root: Path, call: Call) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    (elsewhere / "stolen.txt").write_text("outside\n")
    git(elsewhere, "add", "-A")
    git(elsewhere, "commit", "-qm", "x")
    (root / "sub").mkdir()
    (root / "sub" / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    (root / "sub" / "stolen.txt").write_text("different\n")
    outcome = call("get_git_diff", path="sub", base_rev="HEAD")
    assert outcome.is_error and outcome.errors[0].kind.value == "permission"
    assert "outside the workspace" in outcome.text
    assert "stolen" not in outcome.text


def test_commondir_alternates_and_core_worktree_out_of_the_roots_are_refused(tmp_path: Path, root: Path,
                                                                             call: Call) -> None:
    outside = tmp_path / "other"
    outside.mkdir()
    git(outside, "init", "-q")
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "x")
    alternates = root / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{outside / '.git' / 'objects'}\n")
    refused = call("get_git_diff", path=".")
    assert refused.is_error and "alternate object store" in refused.text
    alternates.unlink()
    git(root, "config", "core.worktree", str(outside))
    refused = call("get_git_diff", path=".")
    assert refused.is_error and "work tree" in refused.text
    git(root, "config", "--unset", "core.worktree")
    worktree_dir = root / ".git" / "worktrees" / "w"
    worktree_dir.mkdir(parents=True)
    (worktree_dir / "commondir").write_text(f"{outside / '.git'}\n")
    (worktree_dir / "HEAD").write_text(git(root, "rev-parse", "HEAD"))
    (worktree_dir / "gitdir").write_text(f"{root / 'w' / '.git'}\n")
    (root / "w").mkdir()
    (root / "w" / ".git").write_text(f"gitdir: {worktree_dir}\n")
    refused = call("get_git_diff", path="w")
    assert refused.is_error and "common git directory" in refused.text


def test_a_repository_above_the_root_is_not_read(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "x.txt").write_text("x\n")
    found = Repository.discover(Workspace.create([inner]), inner)
    assert not found.ok and "work tree" in found.errors[0].message and "Serve the repository's top" in \
        found.errors[0].hint


def test_neither_the_repository_nor_the_users_git_config_runs_anything(repo: Path, call: Call, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = touch {marker}-global; false\n"
                                     f"[diff]\n\texternal = touch {marker}-global-ext\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='touch {marker}-env; false'")
    (repo / ".gitattributes").write_text("*.py filter=req diff=tc\n")
    git(repo, "config", "filter.req.clean", f"touch {marker}-required; cat")
    git(repo, "config", "filter.req.required", "true")
    git(repo, "config", "diff.tc.textconv", f"touch {marker}-textconv; cat")
    git(repo, "config", "core.hooksPath", str(tmp_path))
    git(repo, "config", "include.path", str(home / ".gitconfig"))
    outcome = call("get_git_diff", path="app.py")
    assert not outcome.is_error and "+print('v3')" in outcome.text, outcome.text
    outcome = call("get_git_diff", path=".", base_rev="HEAD~1", head_rev="HEAD")
    assert not outcome.is_error, outcome.text
    assert sorted(path.name for path in tmp_path.glob("ran-*")) == []


def test_withholding_fails_closed_on_names_it_cannot_read() -> None:
    diff = ("diff --git a/ok.py b/ok.py\n--- a/ok.py\n+++ b/ok.py\n@@ -1 +1 @@\n-a\n+b\n"
            "diff --git a/old.txt b/.env\nsimilarity index 90%\nrename from old.txt\nrename to .env\n"
            "diff --git \"a/sp\\303\\251cial\\t.env\" \"b/sp\\303\\251cial\\t.env\"\n"
            "--- \"a/sp\\303\\251cial\\t.env\"\n"
            "diff --git a/x b/y b/z\n--- a/x b/y\n"
            "diff --git a/with space.py b/with space.py\n--- a/with space.py\n+++ b/with space.py\n")
    kept, withheld = withhold(diff, lambda name: name.endswith(".env"))
    assert withheld == 3
    assert "ok.py" in kept and "with space.py" in kept and ".env" not in kept and "a/x b/y" not in kept
