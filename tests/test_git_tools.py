"""git_status, git_log, git_show, git_blame and git_commit: through the hardened git layer, protected files
never shown or committed, bad input refused with nothing changed, a commit only with a person's yes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeward.approval.policy import Approval, ApprovalPolicy, ApprovalRequest
from codeward.approval.previews import preview_call
from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import chain
from codeward.kernel.context import CallInfo, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.surface import CatalogSurface, ToolSurface
from codeward.kernel.workspace import Workspace
from tests.conftest import every_tool_env

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
Call = Callable[..., ToolOutcome]
SECRET = "GIT-TOOLS-SECRET-9d1e"
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", *args], cwd=root,
                          env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(root: Path) -> Path:
    """Three commits: an app, a secret committed alongside it, a later change of each."""
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Ada")
    git(root, "config", "user.email", "ada@example.com")
    (root / "src").mkdir()
    (root / "src/app.py").write_text("def main():\n    return 1\n")
    (root / "README.md").write_text("# app\n")
    (root / ".env").write_text(f"TOKEN={SECRET}\n")
    (root / "id_deploy.txt").write_text(KEY)  # a key under a name no glob catches
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first: the app")
    (root / "src/app.py").write_text("def main():\n    return 2\n\n\ndef helper():\n    return 3\n")
    git(root, "commit", "-qam", "second: helper", "-m", "The body explains why.")
    (root / ".env").write_text(f"TOKEN={SECRET}-2\n")
    git(root, "commit", "-qam", "third: rotate the token")
    return root


@pytest.fixture
def run(repo: Path, catalog: Catalog) -> Call:
    ctx = ToolContext(Workspace.create([repo]))

    def call(name: str, /, **arguments: Any) -> ToolOutcome:
        return catalog.call(name, arguments, ctx)

    return call


def _no_secret(outcome: ToolOutcome) -> None:
    assert SECRET not in outcome.text and ".env" not in outcome.text and "b3BlbnNzaC1rZXktdjEAAAAA" not in outcome.text
    assert SECRET not in str(outcome.structured or "")


def test_status_lists_changes_and_never_a_protected_file(repo: Path, run: Call) -> None:
    clean = run("git_status")
    assert not clean.is_error and clean.structured is not None and clean.structured["clean"] is True
    assert clean.structured["branch"] == "main" and len(clean.structured["commit"]) == 40
    (repo / "src/app.py").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    (repo / ".env").write_text("changed too\n")
    (repo / "prod.env").write_text("untracked secret\n")
    git(repo, "mv", "README.md", "READ.md")
    status = run("git_status")
    assert status.structured is not None and not status.structured["clean"]
    items = {item["path"]: item for item in status.structured["items"]}
    assert set(items) == {"src/app.py", "new.txt", "READ.md"}
    assert items["src/app.py"]["unstaged"] == "modified" and items["new.txt"]["kind"] == "untracked"
    assert (items["READ.md"]["kind"], items["READ.md"]["from_path"], items["READ.md"]["staged"]) == (
        "renamed", "README.md", "renamed")
    assert "prod.env" not in status.text
    _no_secret(status)
    only_src = run("git_status", path="src", max_entries=5)
    assert only_src.structured is not None and [i["path"] for i in only_src.structured["items"]] == ["src/app.py"]


def test_log_pages_filters_and_lists_files_without_secrets(repo: Path, run: Call) -> None:
    log = run("git_log")
    assert log.structured is not None
    subjects = [c["subject"] for c in log.structured["commits"]]
    assert subjects == ["third: rotate the token", "second: helper", "first: the app"]
    assert log.structured["commits"][1]["body"] == "The body explains why." and not log.structured["more"]
    page = run("git_log", limit=1, skip=1)
    assert page.structured is not None and [c["subject"] for c in page.structured["commits"]] == ["second: helper"]
    assert page.structured["more"] and "skip=2" in page.text
    by_path = run("git_log", path="src/app.py")
    assert by_path.structured is not None and len(by_path.structured["commits"]) == 2
    with_files = run("git_log", files=True)
    assert with_files.structured is not None
    first = with_files.structured["commits"][2]
    assert {f["path"] for f in first["files"]} == {"src/app.py", "README.md", "id_deploy.txt"}
    assert first["files_withheld"] == 1
    assert with_files.structured["commits"][0]["files"] == [] and with_files.structured["commits"][0][
        "files_withheld"] == 1
    _no_secret(with_files)
    grep = run("git_log", grep="HELPER")
    assert grep.structured is not None and [c["subject"] for c in grep.structured["commits"]] == ["second: helper"]
    ranged = run("git_log", revision="HEAD~2..HEAD")
    assert ranged.structured is not None and len(ranged.structured["commits"]) == 2


def test_show_prints_a_commit_and_withholds_protected_files(repo: Path, run: Call) -> None:
    second = run("git_show", revision="HEAD~1")
    assert not second.is_error and "second: helper" in second.text and "The body explains why." in second.text
    assert "+def helper():" in second.text and "-    return 1" in second.text
    first = run("git_show", revision="HEAD~2")  # the root commit: its diff against the empty tree
    assert "+# app" in first.text and "protected file(s) left out" in first.text
    _no_secret(first)
    third = run("git_show")
    assert "third: rotate the token" in third.text and "(no changes)" in third.text
    _no_secret(third)
    narrowed = run("git_show", revision="HEAD~2", path="README.md")
    assert "+# app" in narrowed.text and "app.py" not in narrowed.text


def test_blame_a_line_range(repo: Path, run: Call) -> None:
    blame = run("git_blame", path="src/app.py", start_line=4, end_line=6)
    assert not blame.is_error and blame.structured is not None
    lines = blame.structured["lines"]
    assert [(entry["line"], entry["text"]) for entry in lines] == [(4, ""), (5, "def helper():"), (6, "    return 3")]
    assert {entry["summary"] for entry in lines} == {"second: helper"} and lines[0]["author"] == "Ada"
    (repo / "src/app.py").write_text("def main():\n    return 2\n\n\ndef helper():\n    return 4\n")
    mixed = run("git_blame", path="src/app.py")
    assert mixed.structured is not None and mixed.structured["lines"][5]["commit"] == ""
    assert mixed.structured["lines"][0]["summary"] == "first: the app"
    old = run("git_blame", path="src/app.py", revision="HEAD~2")
    assert old.structured is not None and old.structured["total_lines"] == 2
    assert old.structured["lines"][1]["text"] == "    return 1"


def test_bad_input_is_refused_with_a_fix(repo: Path, tmp_path: Path, run: Call) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    git(outside, "init", "-q")
    (repo / "escape").symlink_to(outside, target_is_directory=True)
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    git(repo, "add", "logo.png")
    git(repo, "commit", "-qm", "logo")
    before = git(repo, "rev-parse", "HEAD"), (repo / ".git/index").read_bytes()
    for name, arguments, kind, words in [
        ("git_log", {"revision": "--output=/tmp/x"}, ErrorKind.INVALID_INPUT, "option"),
        ("git_log", {"revision": "no-such-branch"}, ErrorKind.NOT_FOUND, "does not know"),
        ("git_log", {"grep": "["}, ErrorKind.INVALID_INPUT, "git log failed"),
        ("git_show", {"revision": "HEAD~1..HEAD"}, ErrorKind.INVALID_INPUT, "range"),
        ("git_show", {"revision": "HEAD^{tree}"}, ErrorKind.NOT_FOUND, "as a commit"),
        ("git_show", {"revision": "HEAD:src/app.py"}, ErrorKind.INVALID_INPUT, "characters"),
        ("git_status", {"path": "escape"}, ErrorKind.PERMISSION, "outside the workspace"),
        ("git_log", {"path": "../"}, ErrorKind.PERMISSION, "outside the workspace"),
        ("git_blame", {"path": ".env"}, ErrorKind.PERMISSION, "blacklisted"),
        ("git_blame", {"path": "id_deploy.txt"}, ErrorKind.PERMISSION, "private key"),
        ("git_blame", {"path": "id_deploy.txt", "revision": "HEAD"}, ErrorKind.PERMISSION, "private key"),
        ("git_blame", {"path": "logo.png"}, ErrorKind.INVALID_INPUT, "binary"),
        ("git_blame", {"path": "src/app.py", "start_line": 99}, ErrorKind.INVALID_INPUT, "past the end"),
        ("git_blame", {"path": "src/app.py", "start_line": 3, "end_line": 2}, ErrorKind.INVALID_INPUT, "before"),
        ("git_blame", {"path": "src"}, ErrorKind.INVALID_INPUT, "folder"),
        ("git_blame", {"path": "missing.py"}, ErrorKind.NOT_FOUND, "does not exist"),
        ("git_blame", {"path": "src/app.py", "revision": "nope"}, ErrorKind.NOT_FOUND, "does not know"),
    ]:
        outcome = run(name, **arguments)
        assert outcome.is_error and outcome.errors[0].kind is kind and words in outcome.text, (name, arguments,
                                                                                              outcome.text)
        assert outcome.errors[0].hint, outcome.text
        assert SECRET not in outcome.text and "b3BlbnNzaC1rZXktdjEAAAAA" not in outcome.text
    (repo / "new.py").write_text("x = 1\n")
    untracked = run("git_blame", path="new.py")
    assert untracked.is_error and "not tracked" in untracked.text
    assert (git(repo, "rev-parse", "HEAD"), (repo / ".git/index").read_bytes()) == before


def test_outside_repositories_are_refused(root: Path, tmp_path: Path, catalog: Catalog) -> None:
    """A repository above the root, or a gitdir: pointer out of it, is never read."""
    above = tmp_path / "above"
    above.mkdir()
    git(above, "init", "-q")
    inner = above / "project"
    inner.mkdir()
    (inner / "a.txt").write_text("a\n")
    ctx = ToolContext(Workspace.create([inner]))
    for name in ("git_status", "git_log", "git_show"):
        outcome = catalog.call(name, {}, ctx)
        assert outcome.is_error and "outside the workspace" in outcome.text, (name, outcome.text)


# -- committing --------------------------------------------------------------------------------


def _approving(catalog: Catalog, answers: list[bool], asked: list[ApprovalRequest],
               auto_approve: tuple[str, ...] = ()) -> ToolSurface:
    async def confirm(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answers.pop(0)

    return chain(CatalogSurface(catalog), [Approval(ApprovalPolicy(auto_approve=auto_approve), confirm,
                                                    catalog=catalog)])


@pytest.mark.anyio
async def test_commit_asks_a_person_even_when_auto_approved_and_commits_only_the_named_paths(
        repo: Path, catalog: Catalog) -> None:
    ctx = ToolContext(Workspace.create([repo]))
    (repo / "src/app.py").write_text("def main():\n    return 5\n")
    (repo / "README.md").write_text("# app, staged but not named\n")
    git(repo, "add", "README.md")
    (repo / "src/new.py").write_text("NEW = True\n")
    (repo / ".env").write_text("TOKEN=never-committed\n")
    head = git(repo, "rev-parse", "HEAD")
    asked: list[ApprovalRequest] = []
    surface = _approving(catalog, [True, False, True, True], asked, auto_approve=("*",))
    arguments = {"paths": ["src", ".env"], "message": "Return five\n\nAnd add new.py."}
    refused = await surface.call("git_commit", arguments, ctx)  # approved, but the tool refuses a secret
    assert refused.is_error and "blacklisted" in refused.text and git(repo, "rev-parse", "HEAD") == head
    assert asked[0].preview is None
    arguments["paths"] = ["src"]
    denied = await surface.call("git_commit", arguments, ctx)
    assert denied.is_error and "not approved" in denied.text and git(repo, "rev-parse", "HEAD") == head
    assert len(asked) == 2 and asked[1].preview is not None
    preview = asked[1].preview.text
    assert "+    return 5" in preview and "+NEW = True" in preview and "README" not in preview
    assert "never-committed" not in preview
    done = await surface.call("git_commit", arguments, ctx)
    assert not done.is_error, done.text
    assert done.structured is not None and {f["path"] for f in done.structured["files"]} == {"src/app.py",
                                                                                            "src/new.py"}
    assert git(repo, "log", "-1", "--format=%B").strip() == "Return five\n\nAnd add new.py."
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["src/app.py", "src/new.py"]
    assert git(repo, "diff", "--cached", "--name-only").split() == ["README.md"]  # still staged, not committed
    assert "never-committed" not in git(repo, "show", "HEAD")
    again = await surface.call("git_commit", arguments, ctx)
    assert again.is_error and "nothing to commit" in again.text and len(asked) == 4


def test_commit_without_anyone_to_ask_is_refused(repo: Path, run: Call) -> None:
    (repo / "src/app.py").write_text("changed\n")
    head = git(repo, "rev-parse", "HEAD"), (repo / ".git/index").read_bytes()
    outcome = run("git_commit", paths=["src/app.py"], message="try")
    assert outcome.is_error and outcome.errors[0].kind is ErrorKind.PERMISSION and "approval" in outcome.text
    assert (git(repo, "rev-parse", "HEAD"), (repo / ".git/index").read_bytes()) == head
    for arguments, words in [
        ({"paths": [], "message": "x"}, "paths is empty"),
        ({"paths": ["src/app.py"], "message": "  "}, "message is empty"),
        ({"paths": ["README.md"], "message": "x"}, "nothing to commit"),
        ({"paths": [".git"], "message": "x"}, "git directory"),
        ({"paths": ["../x"], "message": "x"}, "outside the workspace"),
    ]:
        refused = run("git_commit", **arguments)
        assert refused.is_error and words in refused.text, (arguments, refused.text)


def test_commit_runs_no_hook_or_filter_and_a_failure_leaves_the_index_as_it_was(
        repo: Path, tmp_path: Path, catalog: Catalog) -> None:
    marker = tmp_path / "ran"
    hook = f"#!/bin/sh\ntouch {marker}\n"
    for name in ("pre-commit", "commit-msg", "post-commit", "prepare-commit-msg"):
        (repo / ".git/hooks" / name).write_text(hook)
        (repo / ".git/hooks" / name).chmod(0o755)
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    (repo / ".gitattributes").write_text("*.py filter=evil\n")
    (repo / "src/app.py").write_text("def main():\n    return 6\n")
    ctx = ToolContext(Workspace.create([repo]), call=CallInfo(approved=True))
    done = catalog.call("git_commit", {"paths": ["src/app.py", ".gitattributes"], "message": "six"}, ctx)
    assert not done.is_error, done.text
    assert not marker.exists()
    (repo / "src/app.py").write_text("def main():\n    return 7\n")
    (repo / "src/other.py").write_text("y = 1\n")
    index = (repo / ".git/index").read_bytes()
    (repo / ".git/index.lock").write_text("")  # another git holds the index: the commit fails
    failed = catalog.call("git_commit", {"paths": ["src"], "message": "seven"}, ctx)
    assert failed.is_error and "index is as it was" in failed.text
    (repo / ".git/index.lock").unlink()
    assert (repo / ".git/index").read_bytes() == index and git(repo, "log", "-1", "--format=%s").strip() == "six"


def test_commit_preview_and_identity(repo: Path, tmp_path: Path, catalog: Catalog,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    (repo / "src/app.py").write_text("x\n")
    context = ToolContext(Workspace.create([repo]), call=CallInfo(approved=True))
    shown = preview_call(catalog, "git_commit", {"paths": ["src/app.py"], "message": "m"}, context)
    assert shown is not None and shown.kind == "diff" and "+x" in shown.text and "git commit -m 'm'" in shown.text
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home/.config"))
    outcome = catalog.call("git_commit", {"paths": ["src/app.py"], "message": "m"}, context)
    assert outcome.is_error and "user.name" in outcome.text and "git config" in outcome.text
    (tmp_path / "home").mkdir()
    (tmp_path / "home/.gitconfig").write_text("[user]\n\tname = Grace\n\temail = grace@example.com\n"
                                              "[core]\n\thooksPath = /nonexistent\n")
    done = catalog.call("git_commit", {"paths": ["src/app.py"], "message": "m"}, context)
    assert not done.is_error, done.text
    assert git(repo, "log", "-1", "--format=%an <%ae>").strip() == "Grace <grace@example.com>"


@pytest.mark.anyio
async def test_git_tools_over_stdio_with_the_commit_asked_by_elicitation(repo: Path, tmp_path: Path) -> None:
    """A real ``codeward serve``: the reads, their refusals, and a commit the client's user declines, then accepts."""
    import sys

    from mcp import Client, StdioServerParameters
    from mcp_types import ElicitResult

    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "escape").symlink_to(outside, target_is_directory=True)
    asked: list[str] = []
    answers = [False, True]

    async def elicit(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"commit": answers.pop(0)})

    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(repo)],
                                   env=every_tool_env(PYTHONUNBUFFERED="1"))
    async with Client(server, elicitation_callback=elicit) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"git_status", "git_log", "git_show", "git_blame", "git_commit"} <= set(tools)
        assert tools["git_log"].annotations is not None and tools["git_log"].annotations.read_only_hint
        assert tools["git_commit"].annotations is not None and not tools["git_commit"].annotations.read_only_hint
        assert "a person approves" in (tools["git_commit"].description or "")

        log = await client.call_tool("git_log", {"files": True})
        assert not log.is_error and log.structured_content is not None
        assert log.structured_content["commits"][0]["subject"] == "third: rotate the token"
        shown = await client.call_tool("git_show", {"revision": "HEAD~2"})
        blame = await client.call_tool("git_blame", {"path": "src/app.py", "start_line": 5, "end_line": 5})
        assert blame.structured_content is not None and blame.structured_content["lines"][0]["text"] == \
            "def helper():"
        for result in (log, shown, blame):
            text = "\n".join(getattr(block, "text", "") for block in result.content)
            assert SECRET not in text and "b3BlbnNzaC1rZXktdjEAAAAA" not in text
        for name, arguments, words in [("git_status", {"path": "escape"}, "outside the workspace"),
                                       ("git_log", {"revision": "--all"}, "option"),
                                       ("git_blame", {"path": ".env"}, "blacklisted")]:
            refused = await client.call_tool(name, arguments)
            text = "\n".join(getattr(block, "text", "") for block in refused.content)
            assert refused.is_error and words in text, (name, text)

        (repo / "src/app.py").write_text("def main():\n    return 9\n")
        head = git(repo, "rev-parse", "HEAD")
        declined = await client.call_tool("git_commit", {"paths": ["src/app.py"], "message": "nine"})
        assert declined.is_error and git(repo, "rev-parse", "HEAD") == head
        accepted = await client.call_tool("git_commit", {"paths": ["src/app.py"], "message": "nine"})
        assert not accepted.is_error and accepted.structured_content is not None
        assert accepted.structured_content["files"] == [{"status": "modified", "path": "src/app.py",
                                                         "from_path": ""}]
    assert len(asked) == 2 and "+    return 9" in asked[0] and "nine" in asked[0]
    assert git(repo, "log", "-1", "--format=%s").strip() == "nine" and not any(outside.iterdir())


def test_a_repository_without_commits_is_answered_plainly(root: Path, catalog: Catalog) -> None:
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    ctx = ToolContext(Workspace.create([root]))
    status = catalog.call("git_status", {}, ctx)
    assert status.structured is not None and status.structured["commit"] == "" and "no commits yet" in status.text
    log = catalog.call("git_log", {}, ctx)
    assert not log.is_error and log.structured is not None and log.structured["commits"] == []
    for name, arguments in (("git_show", {}), ("git_blame", {"path": "a.txt"})):
        outcome = catalog.call(name, arguments, ctx)
        assert outcome.is_error and "no commits yet" in outcome.text, (name, outcome.text)
