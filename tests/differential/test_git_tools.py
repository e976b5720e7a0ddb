"""The git tools against git itself, on a real project with a small history and a dirty work tree.

git runs hermetically (no system or user configuration); codeward's answers come through the official
client. Protected files (a secret in the work tree, one in a commit) are the documented difference:
git shows them, codeward counts them as withheld and shows nothing of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.differential.support import McpSession, git, git_text, mcp_session, unpack

STATES = {"M": "modified", "T": "type changed", "A": "added", "D": "deleted", "R": "renamed", "C": "copied",
          "U": "unmerged"}

pytestmark = pytest.mark.xdist_group("differential-git-tools")
"""One worker runs the module: its tests share one server (made once, not once per worker)."""


@dataclass
class Repo:
    top: Path
    session: McpSession = field(repr=False)


def _commit(top: Path, message: str, author: str, date: str) -> None:
    git(top, "add", "-A")
    git(top, "-c", f"user.name={author}", "commit", "-q", "-m", message, "--author", f"{author} <{author}@example.org>",
        "--date", date)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Repo]:
    top = unpack("iniconfig", tmp_path_factory.mktemp("git"))
    git(top, "init", "-q")
    _commit(top, "import iniconfig 2.3.1", "Ada", "2024-01-02T10:00:00Z")
    parse = top / "src" / "iniconfig" / "_parse.py"
    parse.write_text(parse.read_text().replace("def parse_lines", "def parse_ini_lines"))
    (top / "README.rst").write_text((top / "README.rst").read_text() + "\nMore words.\n")
    _commit(top, "rename parse_lines\n\nIt reads ini lines; say so.", "Grace", "2024-02-03T11:30:00Z")
    git(top, "mv", "example.ini", "sample.ini")
    (top / "NOTES.md").write_text("# Notes\n")
    (top / ".env").write_text("TOKEN=hunter2\n")  # committed by mistake: withheld from every answer
    _commit(top, "sample file, notes", "Ada", "2024-03-04T12:45:00Z")
    # A dirty work tree: staged, unstaged, both, deleted, untracked, ignored, a new secret.
    (top / "NOTES.md").write_text("# Notes\n\nstaged\n")
    git(top, "add", "NOTES.md")
    (top / "NOTES.md").write_text("# Notes\n\nstaged\n\nand not\n")
    (top / "CHANGELOG").write_text((top / "CHANGELOG").read_text().replace("2.3.1", "2.3.2"))
    (top / "MANIFEST.in").unlink()
    (top / "scratch.txt").write_text("untracked\n")
    (top / "build").mkdir()
    (top / "build" / "out.txt").write_text("ignored\n")
    (top / "credentials.toml").write_text("[secret]\n")
    with mcp_session(top) as session:
        yield Repo(top, session)


def test_git_status_lists_what_git_status_lists(repo: Repo) -> None:
    status = repo.session.data("git_status")
    got = {(item["path"], item["staged"], item["unstaged"]) for item in status["items"] if item["kind"] == "changed"}
    untracked = {item["path"] for item in status["items"] if item["kind"] == "untracked"}
    expected, expected_untracked = set(), set()
    fields = git(repo.top, "status", "--porcelain=v1", "-z", "--untracked-files=all").stdout.decode().split("\0")
    for entry in filter(None, fields):
        code, path = entry[:2], entry[3:]
        if code == "??":
            expected_untracked.add(path)
        else:
            expected.add((path, STATES.get(code[0], ""), STATES.get(code[1], "")))
    withheld = {"credentials.toml"}  # the documented difference: git lists the secret, codeward leaves it out
    assert got == expected and untracked == expected_untracked - withheld
    assert "credentials.toml" in expected_untracked and "credentials.toml" not in status_text(repo)
    assert status["branch"] == git_text(repo.top, "branch", "--show-current").strip()
    assert status["commit"] == git_text(repo.top, "rev-parse", "HEAD").strip() and not status["clean"]


def status_text(repo: Repo) -> str:
    return repo.session.text("git_status")


def test_git_log_lists_what_git_log_lists(repo: Repo) -> None:
    log = repo.session.data("git_log", files=True)
    expected = []
    for record in git_text(repo.top, "log", "-z", "--format=%H%x1f%an%x1f%ae%x1f%P%x1f%s%x1f%b").split("\0"):
        if record.strip():
            commit, author, email, parents, subject, body = record.split("\x1f")
            expected.append((commit, author, email, parents.split(), subject, body.strip()))
    assert [(c["hash"], c["author"], c["email"], c["parents"], c["subject"], c["body"].strip())
            for c in log["commits"]] == expected
    for commit in log["commits"]:
        listed = git_text(repo.top, "show", "--format=", "--name-status", "-M", commit["hash"]).split("\n")
        reference = set()
        for line in filter(None, listed):
            _status, *paths = line.split("\t")
            reference.add((paths[-1], paths[0] if len(paths) == 2 else ""))
        got = {(change["path"], change["from_path"]) for change in commit["files"]}
        assert got == {(path, moved) for path, moved in reference if path != ".env"}, commit["subject"]
        assert commit["files_withheld"] == (1 if any(path == ".env" for path, _ in reference) else 0)


def test_git_show_shows_what_git_show_shows(repo: Repo) -> None:
    shown = repo.session.text("git_show", revision="HEAD~1")
    reference = git_text(repo.top, "show", "--format=", "--no-color", "--src-prefix=a/", "--dst-prefix=b/",
                         "HEAD~1")
    assert reference.strip() and reference.strip() in shown
    head = repo.session.text("git_show", revision="HEAD")
    assert "hunter2" not in head and "sample.ini" in head  # the committed secret is withheld, the rest shown
    assert "hunter2" in git_text(repo.top, "show", "HEAD")


def test_git_blame_agrees_with_git_blame_line_by_line(repo: Repo) -> None:
    path = "src/iniconfig/_parse.py"
    report = repo.session.data("git_blame", path=path)
    porcelain = git_text(repo.top, "blame", "--line-porcelain", path).split("\n")
    expected = []
    for number, line in enumerate(porcelain):
        if re.match(r"^[0-9a-f]{40} \d+ \d+", line):
            commit = line[:40]
            author = next(row[7:] for row in porcelain[number:] if row.startswith("author "))
            text = next(row[1:] for row in porcelain[number:] if row.startswith("\t"))
            expected.append((commit, author, text))
    got = [(entry["commit"], entry["author"], entry["text"]) for entry in report["lines"]]
    assert len(got) == len(expected) == report["total_lines"]
    assert all(full.startswith(short) and author == author_ and text == text_
               for (short, author, text), (full, author_, text_) in zip(got, expected, strict=True))


@pytest.mark.parametrize(("arguments", "reference"), [
    ({}, ["HEAD"]),
    ({"base_rev": ""}, []),
    ({"base_rev": "HEAD~2", "head_rev": "HEAD"}, ["HEAD~2", "HEAD"]),
    ({"path": "src", "base_rev": "HEAD~2", "head_rev": "HEAD~1"}, ["HEAD~2", "HEAD~1", "--", "src"]),
])
def test_get_git_diff_is_git_diff(repo: Repo, arguments: dict[str, str], reference: list[str]) -> None:
    got = repo.session.text("get_git_diff", **arguments)
    expected = git_text(repo.top, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", *reference)
    withheld = [block for block in re.split(r"(?m)^(?=diff --git )", expected) if ".env" in block.split("\n")[0]]
    for block in withheld:  # the documented difference: a protected file's changes are left out
        expected = expected.replace(block, "")
    assert got.split("\n[")[0].rstrip("\n") == expected.rstrip("\n")
