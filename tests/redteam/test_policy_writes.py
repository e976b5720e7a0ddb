"""Attacks 1 and 2 of the issue through the tools that write: the agent plants a command in git
metadata for the host's next ``git status``, or rewrites its own policy. Every write path of
every tool is tried; each is refused saying that this is a human act, and the host is checked.

(The same attacks through ``run_shell`` and code execution belong to the sandbox's suite.)
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.redteam.harness import Host, Session

pytestmark = pytest.mark.anyio


ANALYSIS = {"files_analyzed": 1, "total_issues": 0}


def fsmonitor_config(host: Host) -> str:
    return f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = {host.marker_command('fsmonitor')}; false\n"


def hook(host: Host) -> str:
    return f"#!/bin/sh\n{host.marker_command('hook')}\n"


async def refused(session: Session, tool: str, arguments: dict[str, Any], *fragments: str) -> None:
    answer = await session.call(tool, arguments)
    assert answer.refused(*fragments, "human act"), f"{tool}({arguments}) was not refused as policy: {answer.text}"


async def test_git_metadata_is_never_writable_through_any_file_tool(host: Host) -> None:
    planted = fsmonitor_config(host)
    async with host.serve() as session:
        for path in (".git/config", ".GIT/config", "./src/../.git/config", ".git/hooks/pre-commit",
                     ".git/hooks/post-checkout", ".git/info/attributes", ".git/commondir"):
            await refused(session, "write_file", {"path": path, "content": planted, "overwrite": True}, ".git")
        await refused(session, "edit_file", {"path": ".git/config", "old_string": "[core]", "new_string": planted},
                      ".git")
        await refused(session, "set_file_slice", {"path": ".git/config", "start_line": 1, "end_line": 1,
                                                  "new_content": planted}, ".git")
        # a nested repository, a new .git folder, and a gitdir: file pointing at a planted config
        await refused(session, "write_file", {"path": "vendor/lib/.git/config", "content": planted}, ".git")
        await refused(session, "write_file", {"path": "sub/.git", "content": "gitdir: ../planted\n"}, ".git")
        await refused(session, "write_file", {"path": ".git", "content": "gitdir: planted\n", "overwrite": True},
                      ".git")
        # other tools' write paths: a moved definition, a report
        await refused(session, "py_move_def", {"src_path": "src/app.py", "dest_path": ".git/hooks/pre-commit.py",
                                               "name": "main"}, ".git")
        await refused(session, "coding_analyze_project", {"path": "src", "output_path": ".git/config",
                                                          "report_format": "json"}, ".git")
        await refused(session, "coding_generate_report", {"analysis_results": ANALYSIS, "output_path": ".git/hooks/x",
                                                          "format": "markdown"}, ".git")
    assert not (host.project / "sub").exists() and not (host.project / "vendor").exists()


async def test_a_project_without_git_cannot_be_given_one(host: Host) -> None:
    for path in sorted(host.project.joinpath(".git").rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() or path.is_symlink() else path.rmdir()
    host.project.joinpath(".git").rmdir()
    host.rebaseline()
    async with host.serve() as session:
        await refused(session, "write_file", {"path": ".git/config", "content": fsmonitor_config(host)}, ".git")
        await refused(session, "write_file", {"path": ".git/HEAD", "content": "ref: refs/heads/main\n"}, ".git")
        await refused(session, "write_file", {"path": ".git", "content": "gitdir: elsewhere\n"}, ".git")
    assert not host.project.joinpath(".git").exists()
    host.checked = True  # no repository to run the host's git in: the file checks are the test
    problems = [p for p in host.violations() if "host git" not in p]
    assert not problems, problems


async def test_the_agent_cannot_change_its_own_policy(host: Host) -> None:
    (host.project / "ci").mkdir()
    (host.project / "ci" / "other.toml").write_text("[server]\nblacklist = []\n")
    if host.principal.uid != os.geteuid():
        for path in (host.project / "ci", host.project / "ci" / "other.toml"):
            os.chown(path, host.principal.uid, host.principal.gid)
    host.rebaseline()
    loosened = "[shell]\nsandbox = false\n"
    async with host.serve() as session:
        await refused(session, "write_file", {"path": "codeward.toml", "content": loosened, "overwrite": True},
                      "codeward.toml")
        await refused(session, "edit_file", {"path": "codeward.toml", "old_string": "notes/private.txt",
                                             "new_string": "nothing"}, "codeward.toml")
        await refused(session, "set_file_slice", {"path": "codeward.toml", "start_line": 1, "end_line": 3,
                                                  "new_content": loosened}, "codeward.toml")
        await refused(session, "coding_analyze_project", {"path": "src", "output_path": "codeward.toml",
                                                          "report_format": "json"}, "codeward.toml")
        await refused(session, "coding_generate_report", {"analysis_results": ANALYSIS, "output_path": "CODEWARD.TOML",
                                                          "format": "markdown"}, "codeward.toml")
        # a config codeward would find from a subfolder, the shell's environment file, codeward's state
        await refused(session, "write_file", {"path": "src/codeward.toml", "content": loosened}, "codeward.toml")
        await refused(session, "write_file", {"path": "mcp_env.toml", "content": "[env]\nPATH = '/tmp'\n"},
                      "mcp_env.toml")
        await refused(session, "write_file", {"path": ".codeward/logs/shell.jsonl", "content": "{}\n"}, ".codeward")
        await refused(session, "write_file", {"path": ".codeward/gateway-pins.json", "content": "{}"}, ".codeward")
        # the policy is still in force: the configured secret stays unreadable
        secret = await session.call("read_file", {"path": "notes/private.txt"})
        assert secret.is_error
    async with host.serve(config=host.project / "ci" / "other.toml") as session:
        await refused(session, "write_file", {"path": "ci/other.toml", "content": loosened, "overwrite": True},
                      "other.toml")
