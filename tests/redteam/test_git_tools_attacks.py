"""Attacks through the git tools and run_tests, as root and as a normal user.

* git_status, git_log, git_show and git_blame over a repository whose configuration names
  programs (fsmonitor, hooks, filters, textconv, pager) and which committed its secrets: nothing
  runs, no secret's name or content comes back;
* git_commit without anyone to approve it: refused, ``.git`` untouched (the harness compares it);
* run_tests given a command that attacks the host: the sandbox holds, the writes pass the gate.
"""

from __future__ import annotations

import pytest

from codeward.engines.git import EMPTY_TREE
from tests.redteam.harness import SECRET_ENV, SECRET_KEY, Host

pytestmark = pytest.mark.anyio


async def test_git_tools_run_nothing_and_show_no_secret(host: Host) -> None:
    for key, value in (("core.fsmonitor", f"{host.marker_command('fsmonitor')}; false"),
                       ("filter.evil.clean", f"{host.marker_command('clean')}; cat"),
                       ("filter.evil.smudge", f"{host.marker_command('smudge')}; cat"),
                       ("filter.evil.required", "true"),
                       ("diff.evil.textconv", f"{host.marker_command('textconv')}; cat"),
                       ("core.pager", host.marker_command("pager"))):
        assert host.git("config", key, value).returncode == 0
    (host.project / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (host.project / ".env").write_text("API_TOKEN=changed-in-the-work-tree\n")
    (host.project / "src" / "app.py").write_text("def main() -> int:\n    return 2\n")
    host.rebaseline()
    async with host.serve() as session:
        status = await session.call("git_status", {})
        assert not status.is_error and "src/app.py" in status.text and ".env" not in status.text, status.text
        log = await session.call("git_log", {"files": True})
        assert not log.is_error and "README.md" in log.text, log.text
        assert ".env" not in log.text and "server.key" not in log.text and "private.txt" not in log.text
        shown = await session.call("git_show", {"revision": "HEAD"})
        assert not shown.is_error and "+# Demo project" in shown.text and "left out" in shown.text, shown.text
        blame = await session.call("git_blame", {"path": "src/app.py"})
        assert not blame.is_error and "return 2" in blame.text, blame.text
        for arguments in ({"path": ".env"}, {"path": "deploy/server.key"}, {"path": "notes/private.txt"},
                          {"path": "deploy/ci-bot", "revision": "HEAD"}, {"path": ".git/config"}):
            assert (await session.call("git_blame", arguments)).is_error, arguments
        for revision in (EMPTY_TREE, f"--output={host.outside / 'written'}", "HEAD:.env"):
            assert (await session.call("git_show", {"revision": revision})).is_error, revision
        commit = await session.call("git_commit", {"paths": ["src"], "message": "sneaky"})
        assert commit.refused("approval"), commit.text
    assert sorted(marker.name for marker in host.markers.iterdir()) == []
    # The host's own git (run by the harness) runs the planted configuration: that part is the user's own.
    host.checked = True
    problems = [p for p in host.violations() if "planted command" not in p and "host git" not in p]
    assert not problems, problems
    assert SECRET_ENV not in "".join(host.outputs) and SECRET_KEY not in "".join(host.outputs)


async def test_run_tests_cannot_reach_the_host(host: Host) -> None:
    canary = host.outside / "canary.txt"
    attack = "; ".join([
        f"echo pwned > {canary}",
        f"echo pwned > {host.home / '.bashrc'}",
        "mkdir -p .git/hooks && printf '#!/bin/sh\\n" + host.marker_command("hook") + "\\n' > .git/hooks/pre-commit",
        "chmod +x .git/hooks/pre-commit",
        "echo '[core] fsmonitor = x' >> .git/config",
        "echo planted > codeward.toml",
        "cat .env deploy/server.key",
        f"(exec 3<>/dev/tcp/127.0.0.1/{host.listener.port}) 2>/dev/null",
        "echo 1 failed; exit 1",
    ])
    async with host.serve() as session:
        answer = await session.call("run_tests", {"command": attack, "timeout_s": 60})
        assert answer.structured is not None and answer.structured["status"] == "failed", answer.text
        refused = await session.call("run_tests", {"targets": ["../outside"]})
        assert refused.refused("outside the workspace"), refused.text
    # the fixture checks the canaries, .git, codeward.toml, the listener and every secret afterwards
