"""get_git_diff against real repositories made in a temporary directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args], cwd=root,
                          env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(root: Path) -> Path:
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("one\ntwo\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("bee\n", encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    (root / "a.py").write_text("one\nTWO\n", encoding="utf-8")
    git(root, "commit", "-q", "-am", "second")
    return root


def test_diff_between_revisions_and_with_the_work_tree(repo: Path, call: Call) -> None:
    between = call("get_git_diff", path="a.py", base_rev="HEAD~1", head_rev="HEAD")
    assert not between.is_error, between.text
    assert "-two\n+TWO" in between.text and "--- a/a.py" in between.text
    (repo / "a.py").write_text("one\nTWO\nthree\n", encoding="utf-8")
    (repo / "sub" / "b.txt").write_text("bee\nsting\n", encoding="utf-8")
    work = call("get_git_diff", path="a.py")
    assert "+three" in work.text and "b.txt" not in work.text
    whole = call("get_git_diff", path=".", base_rev="main~1", context_lines=0)
    assert "+TWO" in whole.text and "+sting" in whole.text
    sub = call("get_git_diff", path="sub")
    assert "+sting" in sub.text and "a.py" not in sub.text


def test_no_differences(repo: Path, call: Call) -> None:
    same = call("get_git_diff", path="sub/b.txt", base_rev="HEAD~1", head_rev="HEAD")
    assert not same.is_error
    assert same.text == "no differences in sub/b.txt between HEAD~1 and HEAD"


@pytest.mark.parametrize("revision", ["--output=evil.txt", "-p", "--ext-diff", "HEAD;touch x", "$(touch x)",
                                      "a b", "HEAD:a.py", "x\ny", "a....b", "`id`"])
def test_option_like_and_odd_revisions_are_refused(repo: Path, call: Call, revision: str) -> None:
    before = snapshot(repo)
    for params in ({"base_rev": revision}, {"base_rev": "HEAD", "head_rev": revision}):
        outcome = call("get_git_diff", path=".", **params)
        assert outcome.is_error
        assert outcome.errors[0].kind.value == "invalid_input"
        assert "option" in outcome.text or "characters a revision cannot have" in outcome.text
    assert snapshot(repo) == before


def test_unknown_revision_and_bad_combinations(repo: Path, call: Call) -> None:
    unknown = call("get_git_diff", path=".", base_rev="no-such-branch")
    assert unknown.is_error and unknown.errors[0].kind.value == "not_found"
    assert "git log --oneline" in unknown.errors[0].hint
    lonely = call("get_git_diff", path=".", base_rev="", head_rev="HEAD")
    assert lonely.is_error and "base_rev is empty" in lonely.text


def test_not_a_repository_outside_and_missing(root: Path, call: Call) -> None:
    (root / "plain.txt").write_text("x\n", encoding="utf-8")
    outcome = call("get_git_diff", path="plain.txt")
    assert outcome.is_error and outcome.errors[0].kind.value == "invalid_input"
    assert "not inside a git repository" in outcome.text and "git init" in outcome.errors[0].hint
    assert call("get_git_diff", path="../").errors[0].kind.value == "permission"
    assert call("get_git_diff", path="nope.txt").errors[0].kind.value == "not_found"


def test_repository_configuration_cannot_run_commands(repo: Path, call: Call) -> None:
    """Filters, fsmonitor hooks and external diff drivers named by the repository stay unrun."""
    marker = repo.parent / "ran"
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n", encoding="utf-8")
    git(repo, "config", "filter.evil.clean", f"touch {marker}-clean; cat")
    git(repo, "config", "filter.evil.process", f"touch {marker}-process")
    git(repo, "config", "diff.evil.command", f"touch {marker}-diff")
    git(repo, "config", "diff.evil.textconv", f"touch {marker}-textconv; cat")
    git(repo, "config", "core.fsmonitor", f"touch {marker}-fsmonitor; false")
    git(repo, "config", "diff.external", f"touch {marker}-external")
    (repo / "a.py").write_text("one\nchanged\n", encoding="utf-8")
    # The same diff run plainly does run them: the attack is real.
    subprocess.run(["git", "diff", "--", "a.py"], cwd=repo, capture_output=True, env={**os.environ,
                   "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    assert list(repo.parent.glob("ran-*")), "git ran none of the configured commands; the test proves nothing"
    for ran in repo.parent.glob("ran-*"):
        ran.unlink()
    outcome = call("get_git_diff", path="a.py")
    assert not outcome.is_error, outcome.text
    assert "+changed" in outcome.text
    assert sorted(p.name for p in repo.parent.glob("ran-*")) == []
