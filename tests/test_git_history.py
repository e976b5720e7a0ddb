"""codeward.engines.git.history on real repositories: every place git keeps a secret is found, a clean
history is clean, answers are remembered by the repository's state, and nothing the repository
configures runs."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

from codeward.engines.git import history
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
            known: KnownVerdicts | None = None, events: bool = False) -> HistoryVerdict:
    workspace = workspace or Workspace.create([root])
    secrets, _ = secret_paths(workspace)
    return check_history(workspace, root / ".git", secrets, state_dir.of(root) if remember else None, known,
                         events=events)


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


def _commit_a_secret_on_a_new_branch(repo: Path) -> None:
    """A commit holding ``.env`` on ``team/leak``, made with plumbing: the work tree and the index stay as they are."""
    blob = git(repo, "hash-object", "-w", "--stdin", stdin="TOKEN=leaked\n").strip()
    tree = git(repo, "mktree", stdin=f"100644 blob {blob}\t.env\n").strip()
    commit = git(repo, "commit-tree", tree, "-m", "leak").strip()
    git(repo, "update-ref", "refs/heads/team/leak", commit)


def _replace_the_git_directory(repo: Path) -> None:
    copy = repo.parent / "copy.git"
    shutil.copytree(repo / ".git", copy)
    _commit_a_secret_on_a_new_branch_in(copy)
    (repo / ".git").rename(repo.parent / "old.git")
    copy.rename(repo / ".git")


def _commit_a_secret_on_a_new_branch_in(git_dir: Path) -> None:
    env = {**ENV, "GIT_DIR": str(git_dir)}
    run = functools.partial(subprocess.run, env=env, capture_output=True, text=True, check=True)
    blob = run(["git", "hash-object", "-w", "--stdin"], input="TOKEN=leaked\n").stdout.strip()
    tree = run(["git", "mktree"], input=f"100644 blob {blob}\t.env\n").stdout.strip()
    commit = run(["git", "commit-tree", tree, "-m", "leak"]).stdout.strip()
    run(["git", "update-ref", "refs/heads/team/leak", commit])


CHANGES = {
    "secret edited and stored": lambda repo: ((repo / ".env").write_text("TOKEN=new\n"),
                                              git(repo, "hash-object", "-w", ".env")),
    "secret staged": lambda repo: git(repo, "add", "-f", ".env"),
    "ref in a new folder": _commit_a_secret_on_a_new_branch,
    "git directory replaced": _replace_the_git_directory,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_kept_key_is_read_again_after_any_change_it_covers(repo: Path, change: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Where file events are trusted, an unchanged repository's key is not read again; every change the key
    covers — a secret's content, the index, a ref in a folder made after the key was read, the git directory
    swapped — is seen on the very next check, the list of secrets being the same."""
    (repo / ".env").write_text("TOKEN=x\n")  # on disk, never added: the secret list stays the same throughout
    known = KnownVerdicts()
    reads = _count_key_reads(monkeypatch)
    assert not verdict(repo, known=known, events=True).exposes
    assert not verdict(repo, known=known, events=True).exposes
    assert len(reads) == 1  # the second answer took the kept key
    CHANGES[change](repo)
    assert verdict(repo, known=known, events=True).secrets == (".env",)
    assert len(reads) == 2
    known.close()


def test_a_key_events_cannot_cover_is_read_every_time(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link among the refs (its target's changes raise no event in the folders watched): no key is kept."""
    (repo / ".git" / "refs" / "heads" / "alias").symlink_to(repo / ".git" / "refs" / "heads" / "main")
    known = KnownVerdicts()
    reads = _count_key_reads(monkeypatch)
    for _ in range(3):
        assert not verdict(repo, known=known, events=True).exposes
    assert len(reads) == 3
    known.close()


def _count_key_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = history.state_key

    def counted(workspace: Workspace, git_dir: Path, secrets: Iterable[Path]) -> str:
        reads.append(git_dir)
        return real(workspace, git_dir, secrets)

    monkeypatch.setattr(history, "state_key", counted)
    return reads
