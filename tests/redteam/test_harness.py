"""The harness itself: the server runs as the principal, and every host check can fail.

A check that cannot fail proves nothing, so each is shown catching the attack it exists for,
planted by hand (not through codeward).
"""

from __future__ import annotations

import socket
import subprocess

import pytest

from tests.redteam.harness import SECRET_ENV, Host

pytestmark = pytest.mark.anyio


async def test_the_server_runs_as_the_principal_and_a_harmless_session_is_clean(host: Host) -> None:
    async with host.serve() as session:
        answer = await session.call("write_file", {"path": "notes/new.txt", "content": "hello\n"})
        assert not answer.is_error, answer.text
        listed = await session.call("list_directory", {"path": "."})
        assert "README.md" in listed.text and ".env" not in listed.text
    assert (host.project / "notes" / "new.txt").stat().st_uid == host.principal.uid
    host.assert_clean()


def test_a_planted_fsmonitor_is_caught_by_the_host_git_status(host: Host) -> None:
    host.git("config", "core.fsmonitor", f"{host.marker_command('fsmonitor')}; false")
    problems = host.violations()
    host.checked = True
    assert any("planted command ran on the host: fsmonitor" in p for p in problems), problems
    assert any(".git/config changed" in p for p in problems), problems


def test_a_planted_hook_in_a_nested_repository_is_caught_by_the_host_git_commit(host: Host) -> None:
    nested = host.project / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    hook = nested / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{host.marker_command('hook')}\n")
    hook.chmod(0o755)
    if host.principal.uid:
        subprocess.run(["chown", "-R", f"{host.principal.uid}:{host.principal.gid}", str(host.project)], check=True)
    problems = host.violations()
    host.checked = True
    assert any("planted command ran on the host: hook" in p for p in problems), problems
    assert any("pre-commit appeared" in p for p in problems), problems


def test_canaries_config_listener_and_secrets_are_all_checked(host: Host) -> None:
    (host.outside / "canary.txt").write_text("changed\n")
    (host.outside / "dropped.txt").write_text("new\n")
    (host.project / "codeward.toml").write_text("[shell]\nsandbox = false\n")
    with socket.create_connection(("127.0.0.1", host.listener.port)) as conn:
        conn.recv(64)
    host.record(f"here it is: API_TOKEN={SECRET_ENV}")
    problems = host.violations()
    host.checked = True
    text = "\n".join(problems)
    for expected in ("canary.txt changed", "dropped.txt appeared", "codeward.toml changed",
                     "reached the host listener", f"secret {SECRET_ENV}"):
        assert expected in text, problems
