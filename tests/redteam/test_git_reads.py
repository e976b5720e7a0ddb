"""Attack 3 of the issue through ``get_git_diff``: a committed secret read through git history,
the empty tree as a base, a blob id as a revision, a ``gitdir:`` pointer to a repository
outside the roots, and repository configuration that would run a command on a read."""

from __future__ import annotations

import os

import pytest

from codeward.engines.git import EMPTY_TREE
from tests.redteam.harness import SECRET_ENV, Host

pytestmark = pytest.mark.anyio


async def test_committed_secrets_never_come_back_through_git(host: Host) -> None:
    (host.project / ".env").write_text("API_TOKEN=the-work-tree-value\n")  # differs from the committed secret
    blob = host.git("rev-parse", "HEAD:.env").stdout.strip()
    readme = host.git("rev-parse", "HEAD:README.md").stdout.strip()
    host.rebaseline()
    async with host.serve() as session:
        for revisions in ({}, {"base_rev": "HEAD"}, {"base_rev": EMPTY_TREE},
                          {"base_rev": EMPTY_TREE, "head_rev": "HEAD"}, {"base_rev": "HEAD", "head_rev": EMPTY_TREE},
                          {"base_rev": ""}):
            answer = await session.call("get_git_diff", {"path": ".", **revisions})
            assert not answer.is_error, answer.text
            for name in (".env", "deploy/server.key", "notes/private.txt"):
                assert f"a/{name}" not in answer.text and f"b/{name}" not in answer.text, (revisions, answer.text)
        whole = await session.call("get_git_diff", {"path": ".", "base_rev": EMPTY_TREE})
        assert "src/app.py" in whole.text and "README.md" in whole.text  # the rest is shown
        answer = await session.call("get_git_diff", {"path": ".", "base_rev": blob, "head_rev": readme})
        assert answer.refused("commit or tree")
        for path in (".env", "deploy/server.key", "notes/private.txt"):
            assert (await session.call("get_git_diff", {"path": path, "base_rev": EMPTY_TREE})).is_error
    assert SECRET_ENV not in "".join(host.outputs)  # the fixture checks every secret too


async def test_a_gitdir_pointer_to_a_repository_outside_is_refused(host: Host) -> None:
    other = host.outside / "other-project"
    (other / "private.md").write_text("OUTSIDE-REPOSITORY-CONTENT\n")
    os.chown(other / "private.md", host.principal.uid, host.principal.gid)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "x")):
        assert host.git(*args, cwd=other).returncode == 0
    planted = host.project / "docs"
    planted.mkdir()
    (planted / ".git").write_text(f"gitdir: {other / '.git'}\n")  # as a script might have left it
    if host.principal.uid != os.geteuid():
        for path in (planted, planted / ".git"):
            os.chown(path, host.principal.uid, host.principal.gid)
    host.rebaseline()
    async with host.serve() as session:
        answer = await session.call("get_git_diff", {"path": "docs", "base_rev": EMPTY_TREE})
        assert answer.refused("outside the workspace")
        assert "OUTSIDE-REPOSITORY-CONTENT" not in answer.text and "private.md" not in answer.text
    # The host's own git in docs/ would follow the pointer: that is the user's repository, not a planted command.
    host.checked = True
    problems = [p for p in host.violations() if "planted command" in p or "appeared" in p or "secret" in p]
    assert not problems, problems


async def test_repository_configuration_runs_nothing_when_codeward_reads_git(host: Host) -> None:
    for key, value in (("core.fsmonitor", f"{host.marker_command('fsmonitor')}; false"),
                       ("diff.external", host.marker_command("external")),
                       ("filter.evil.clean", f"{host.marker_command('clean')}; cat"),
                       ("filter.evil.required", "true"),
                       ("diff.evil.textconv", f"{host.marker_command('textconv')}; cat"),
                       ("core.pager", host.marker_command("pager"))):
        assert host.git("config", key, value).returncode == 0
    (host.project / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (host.project / "src" / "app.py").write_text("def main() -> int:\n    return 2\n")
    host.rebaseline()
    async with host.serve() as session:
        answer = await session.call("get_git_diff", {"path": "."})
        assert not answer.is_error and "return 2" in answer.text, answer.text
        answer = await session.call("get_git_diff", {"path": "src/app.py", "base_rev": EMPTY_TREE})
        assert not answer.is_error, answer.text
    assert sorted(marker.name for marker in host.markers.iterdir()) == []
    host.checked = True  # the host's own git runs these commands: that is the user's configuration, shown above
