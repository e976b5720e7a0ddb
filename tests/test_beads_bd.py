"""Delegation to the bd CLI. The real bd cannot be installed here (its packages download a
prebuilt binary at install time), so a stand-in executable answers like `bd ... --json` does
and records the command lines it was given — in the project's .beads/, the one place it can
write from the sandbox bd runs in (bd runs the scripts of .beads/hooks/, which an agent can write)."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeward.engines.beads import beads_init
from codeward.engines.beads.tracker import BeadsSettings
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]
LOG_NAME = "fake-bd-calls.jsonl"

FAKE_BD = textwrap.dedent('''\
    import json, os, sys, time
    args = sys.argv[1:]
    with open({log!r}, "a") as log:
        log.write(json.dumps({{"args": args, "cwd": os.getcwd()}}) + "\\n")
    issue = {{"id": "app-7f3a", "title": "Fix login", "description": "", "status": "open", "priority": 1,
             "issue_type": "bug", "created_at": "2025-10-20T16:47:16.830853-07:00",
             "updated_at": "2025-10-20T16:47:16.830853-07:00", "labels": ["auth"]}}
    command = args[0]
    if command == "list":
        blocked = dict(issue, id="app-9c1d", title="Ship it", dependency_count=1,
                       dependencies=[{{"id": "app-7f3a", "title": "Fix login", "status": "open",
                                      "dependency_type": "blocks"}}])
        print(json.dumps([issue, blocked]))
    elif command == "ready":
        print(json.dumps([issue]))
    elif command == "create":
        title = args[1]
        if title == "boom":
            print("Error: database is locked by another bd process", file=sys.stderr)
            sys.exit(1)
        if title == "chatty":
            print("Created issue app-1234: chatty")
            sys.exit(0)
        if title == "hang":
            time.sleep(30)
        made = dict(issue, title=title, priority=int(args[args.index("-p") + 1]),
                    issue_type=args[args.index("-t") + 1])
        if "--deps" in args:
            made["dependencies"] = [{{"issue_id": "app-7f3a", "depends_on_id": d, "type": "blocks"}}
                                    for d in args[args.index("--deps") + 1].split(",")]
        print(json.dumps(made, indent=2))
    elif command == "update":
        print(json.dumps([dict(issue, id=args[1], status=args[args.index("--status") + 1])]))
''')


@pytest.fixture
def fake_bd(tmp_path: Path, root: Path, ctx: ToolContext) -> Path:
    """A bd stand-in on the configured command path; returns its log of received command lines."""
    beads_init(root, prefix="app")
    log = root / ".beads" / LOG_NAME
    script = tmp_path / "bin" / "bd"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\n" + FAKE_BD.format(log=str(log)))
    script.chmod(0o755)
    ctx.services = ctx.services.with_values(BeadsSettings(bd_command=str(script), timeout=5))
    return log


def without_log(files: dict[str, bytes]) -> dict[str, bytes]:
    """The project without the stand-in's log and codeward's own record of the call (``.codeward/``)."""
    return {name: data for name, data in files.items() if not name.endswith(LOG_NAME)
            and not name.startswith(".codeward/")}


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_list_and_ready_use_bd_json(call: Call, fake_bd: Path, root: Path) -> None:
    listed = call("bd_list")
    assert not listed.is_error, listed.text
    assert listed.text.splitlines() == ["ID: app-7f3a, Status: open, Title: Fix login",
                                        "ID: app-9c1d, Status: open, Title: Ship it"]
    assert listed.structured is not None and listed.structured["backend"] == "bd"
    assert listed.structured["beads"][1]["depends_on"] == ["app-7f3a"]
    ready = call("bd_ready")
    assert ready.text == "ID: app-7f3a, Status: open, Title: Fix login"
    status = call("bd_list", status="closed")
    assert not status.is_error
    assert [c["args"] for c in calls(fake_bd)] == [["list", "--json"], ["ready", "--json"],
                                                    ["list", "--status", "closed", "--json"]]
    assert {c["cwd"] for c in calls(fake_bd)} == {str(root.resolve())}


def test_create_and_update_pass_every_field(call: Call, fake_bd: Path) -> None:
    created = call("bd_create", title="Fix login", description="500 on submit", priority=1, issue_type="bug",
                   dependencies=["app-1111", " app-2222 "])
    assert not created.is_error, created.text
    assert created.text == ("Created app-7f3a: Fix login (status open, priority 1, bug)\n"
                            "Depends on: app-1111, app-2222")
    updated = call("bd_update", bead_id="app-7f3a", status="in_progress", assignee="ana")
    assert not updated.is_error and "status in_progress" in updated.text
    assert [c["args"] for c in calls(fake_bd)] == [
        ["create", "Fix login", "-p", "1", "-t", "bug", "-d", "500 on submit", "--deps", "app-1111,app-2222",
         "--json"],
        ["update", "app-7f3a", "--status", "in_progress", "--assignee", "ana", "--json"],
    ]


def test_bd_failure_is_reported_with_its_message(call: Call, fake_bd: Path, root: Path) -> None:
    before = without_log(snapshot(root))
    out = call("bd_create", title="boom")
    assert out.is_error and out.errors[0].kind is ErrorKind.INVALID_INPUT
    assert "`bd create boom -p 2 -t task` failed (exit 1): Error: database is locked" in out.text
    assert without_log(snapshot(root)) == before


def test_non_json_output_is_a_clear_error(call: Call, fake_bd: Path) -> None:
    out = call("bd_create", title="chatty")
    assert out.is_error and "printed something that is not JSON" in out.text and "backend='builtin'" in out.text


def test_hung_bd_is_killed_at_the_timeout(call: Call, fake_bd: Path, ctx: ToolContext) -> None:
    settings = ctx.services.get(BeadsSettings)
    ctx.services = ctx.services.with_values(BeadsSettings(bd_command=settings.bd_command, timeout=0.5))
    out = call("bd_create", title="hang")
    assert out.is_error and out.errors[0].kind is ErrorKind.TIMEOUT
    assert "did not finish within 0.5 s" in out.text


def test_missing_bd_when_required(call: Call, root: Path, ctx: ToolContext) -> None:
    beads_init(root)
    ctx.services = ctx.services.with_values(BeadsSettings(backend="bd", bd_command="bd-not-installed-here"))
    out = call("bd_list")
    assert out.is_error and out.errors[0].kind is ErrorKind.UNAVAILABLE
    assert "'bd-not-installed-here' is not on PATH" in out.text


def test_auto_falls_back_to_the_builtin_store(call: Call, root: Path, ctx: ToolContext) -> None:
    beads_init(root, prefix="app")
    ctx.services = ctx.services.with_values(BeadsSettings(bd_command="bd-not-installed-here"))
    out = call("bd_create", title="local")
    assert not out.is_error and out.structured is not None and out.structured["backend"] == "built-in store"
    assert '"title":"local"' in (root / ".beads" / "issues.jsonl").read_text()


def test_no_workspace_error_comes_before_bd_is_run(call: Call, fake_bd: Path, root: Path) -> None:
    shutil.rmtree(root / ".beads")
    out = call("bd_ready")
    assert out.is_error and out.text.startswith("ERROR (not_found): no active workspace to run beads tools.")
    assert not fake_bd.exists()
