"""codeward.engines.git.history on real repositories: every place git keeps a secret is found, a clean
history is clean, answers are remembered by the repository's state, and nothing the repository
configures runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from codeward.engines.git.history import HistoryVerdict, KnownVerdicts, check_history
from codeward.kernel import state_dir
from codeward.kernel.workspace import Workspace, secret_paths

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
       "PATH": "/usr/bin:/bin"}


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, env=ENV, input=stdin,
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# demo\n")
    git(root, "init", "-q")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "first")
    return root


def verdict(root: Path, *, remember: bool = True, workspace: Workspace | None = None,
            known: KnownVerdicts | None = None) -> HistoryVerdict:
    workspace = workspace or Workspace.create([root])
    secrets, _ = secret_paths(workspace)
    return check_history(workspace, root / ".git", secrets, state_dir.of(root) if remember else None, known)


def test_a_clean_history_is_clean_and_remembered(repo: Path) -> None:
    (repo / ".env").write_text("TOKEN=x\n")  # on disk, never added: not the history's business
    first = verdict(repo)
    assert not first.exposes and not first.cached
    again = verdict(repo)
    assert not again.exposes and again.cached
    assert (repo / ".codeward" / "git-history.json").is_file()


PLACES = ["commit", "deleted-later", "stash", "index", "reflog-only", "dangling", "nested-dir"]


@pytest.mark.parametrize("place", PLACES)
def test_every_place_git_keeps_a_secret_is_found(repo: Path, place: str) -> None:
    secret = repo / ("config/deploy.key" if place == "nested-dir" else ".env")
    secret.parent.mkdir(exist_ok=True)
    secret.write_text("TOKEN=secret\n")
    if place in ("commit", "deleted-later", "reflog-only", "nested-dir"):
        git(repo, "add", "-f", str(secret.relative_to(repo)))
        git(repo, "commit", "-q", "-m", "secret")
        if place == "deleted-later":
            git(repo, "rm", "-q", "--cached", ".env")
            git(repo, "commit", "-q", "-m", "forgotten")
            secret.write_text("TOKEN=rotated\n")  # the old value is only in history now
        if place == "reflog-only":
            git(repo, "reset", "-q", "--hard", "HEAD~1")
            secret.write_text("TOKEN=other\n")
    elif place == "stash":
        git(repo, "add", "-f", ".env")
        git(repo, "stash", "-q")
        secret.write_text("TOKEN=other\n")
    elif place == "index":
        git(repo, "add", "-f", ".env")
    elif place == "dangling":
        git(repo, "hash-object", "-w", ".env")
    found = verdict(repo)
    assert found.exposes and found.count >= 1, found
    assert str(secret.relative_to(repo)) in found.secrets


def test_answers_follow_the_repository_and_the_policy(repo: Path) -> None:
    assert not verdict(repo).exposes
    (repo / "notes.txt").write_text("private\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "notes")
    moved = verdict(repo)
    assert not moved.exposes and not moved.cached  # a new commit: looked at again (its objects only)
    stricter = Workspace.create([repo], extra_blacklist=["notes.txt"])
    assert verdict(repo, workspace=stricter).secrets == ("notes.txt",)  # a new glob judges all history again
    assert not verdict(repo).exposes


def test_a_forged_answer_shipped_in_the_project_is_not_believed(repo: Path) -> None:
    (repo / ".env").write_text("TOKEN=secret\n")
    git(repo, "add", "-f", ".env")
    git(repo, "commit", "-q", "-m", "secret")
    forged = {"version": 1, "entries": {str(repo / ".git"): {"key": "0" * 64, "found": [], "tips": []}}}
    (repo / ".codeward").mkdir()
    (repo / ".codeward" / "git-history.json").write_text(json.dumps(forged))
    assert verdict(repo).secrets == (".env",)


def test_a_repository_that_cannot_be_read_counts_as_exposing(repo: Path) -> None:
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for ref in (repo / ".git" / "refs" / "heads").iterdir():
        ref.write_text("0123456789012345678901234567890123456789\n")  # a commit that does not exist
    broken = verdict(repo, remember=False)
    assert broken.exposes and broken.problem


def test_nothing_the_repository_configures_runs(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (repo / ".env").write_text("TOKEN=x\n")
    assert not verdict(repo).exposes
    assert not marker.exists()


def test_the_secret_walk_lists_every_git_directory_and_a_bare_one_is_judged(repo: Path) -> None:
    (repo / ".env").write_text("TOKEN=secret\n")
    git(repo, "add", "-f", ".env")
    git(repo, "commit", "-q", "-m", "secret")
    git(repo, "rm", "-q", "--cached", ".env")
    git(repo, "commit", "-q", "-m", "untracked again")
    git(repo, "clone", "-q", "--bare", str(repo), str(repo / "fixtures" / "mirror.git"))
    (repo / "docs").mkdir()
    (repo / "docs" / "HEAD").write_text("a heading\n")  # not a repository
    workspace = Workspace.create([repo])
    found: list[Path] = []
    secrets, _ = secret_paths(workspace, git_dirs=found)
    assert sorted(found) == [repo / ".git", repo / "fixtures" / "mirror.git"]
    bare = check_history(workspace, repo / "fixtures" / "mirror.git", secrets, None)
    assert bare.secrets == ("fixtures/.env",) and bare.exposes


def test_the_servers_own_answers_follow_every_change_of_the_repository(repo: Path) -> None:
    """The answers a server keeps in memory are keyed like the file's: a secret committed, stashed or
    only written to the object store after a clean answer is found on the very next check."""
    known = KnownVerdicts()
    assert not verdict(repo, known=known).exposes
    (repo / ".codeward" / "git-history.json").unlink()  # answered from memory now, not from the file
    assert verdict(repo, known=known).cached and not (repo / ".codeward" / "git-history.json").exists()
    secret = repo / ".env"
    secret.write_text("TOKEN=secret\n")
    git(repo, "hash-object", "-w", ".env")  # only in the object store: the secret file's state moved
    assert verdict(repo, known=known).secrets == (".env",)
    other = repo / "deploy.key"
    other.write_text("KEY\n")
    git(repo, "add", "-f", "deploy.key")
    git(repo, "commit", "-q", "-m", "key")
    assert set(verdict(repo, known=known).secrets) == {".env", "deploy.key"}
    stricter = Workspace.create([repo], extra_blacklist=["README.md"])
    assert "README.md" in verdict(repo, workspace=stricter, known=known).secrets  # the policy is in the key
