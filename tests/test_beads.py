"""Beads tools over the built-in store of .beads/issues.jsonl, through the catalog."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import codeward.tools.beads
from codeward.engines.beads import beads_init
from codeward.engines.beads.tracker import BeadsSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]
BUILTIN = BeadsSettings(backend="builtin")
NO_WORKSPACE = "ERROR (not_found): no active workspace to run beads tools."


@pytest.fixture
def beads(root: Path, ctx: ToolContext) -> Path:
    """An initialized Beads workspace using the built-in store; returns the issues file."""
    ctx.services = ctx.services.with_values(BUILTIN)
    beads_init(root, prefix="proj")
    return root / ".beads" / "issues.jsonl"


def lines(issues: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in issues.read_text().splitlines() if line.strip()]


def create(call: Call, title: str, **extra: Any) -> str:
    out = call("bd_create", title=title, **extra)
    assert not out.is_error, out.text
    assert out.structured is not None
    return str(out.structured["bead"]["id"])


def test_every_tool_needs_a_beads_workspace(call: Call, root: Path, ctx: ToolContext) -> None:
    ctx.services = ctx.services.with_values(BUILTIN)
    (root / "README.md").write_text("project\n")
    before = snapshot(root)
    for name, arguments in [("bd_list", {}), ("bd_ready", {}), ("bd_create", {"title": "x"}),
                            ("bd_update", {"bead_id": "proj-1", "status": "closed"})]:
        out = call(name, **arguments)
        assert out.is_error and out.text.startswith(NO_WORKSPACE), out.text
        assert "codeward beads init" in out.text
    assert snapshot(root) == before and not (root / ".beads").exists()


def test_init_creates_the_workspace_once(root: Path) -> None:
    message = beads_init(root, prefix="shop")
    assert "Initialized a Beads workspace" in message and "'shop'" in message
    directory = root / ".beads"
    assert (directory / "issues.jsonl").read_text() == ""
    assert 'issue-prefix: "shop"' in (directory / "config.yaml").read_text()
    (directory / "issues.jsonl").write_text('{"id":"shop-1","title":"kept"}\n')
    again = beads_init(root)
    assert "already exists" in again and "nothing to do" in again
    assert (directory / "issues.jsonl").read_text() == '{"id":"shop-1","title":"kept"}\n'


def test_init_refuses_bad_prefix_and_non_folders(root: Path) -> None:
    with pytest.raises(ValueError, match="prefix 'Bad Prefix!'"):
        beads_init(root, prefix="Bad Prefix!")
    assert not (root / ".beads").exists()
    (root / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        beads_init(root / "file.txt")


def test_init_derives_the_prefix_from_the_folder(tmp_path: Path) -> None:
    project = tmp_path / "My Web_App"
    project.mkdir()
    assert "'my-web-app'" in beads_init(project)


def test_create_ready_update_list(call: Call, beads: Path) -> None:
    schema = create(call, "Design the schema", description="Tables for orders", priority=1, issue_type="feature")
    migrate = create(call, "Write migrations", dependencies=[schema])
    deploy = create(call, "Deploy", dependencies=[migrate, schema], priority=0)
    assert all(i.startswith("proj-") and len(i) == len("proj-") + 4 for i in (schema, migrate, deploy))

    ready = call("bd_ready")
    assert ready.text == f"ID: {schema}, Status: open, Title: Design the schema"

    closed = call("bd_update", bead_id=schema, status="closed")
    assert not closed.is_error and closed.structured is not None
    assert closed.text.startswith(f"Updated {schema}: Design the schema (status closed")
    assert closed.structured["bead"]["closed_at"] is not None
    ready = call("bd_ready")
    assert ready.text == f"ID: {migrate}, Status: open, Title: Write migrations"  # deploy still waits on migrate

    call("bd_update", bead_id=migrate, status="closed")
    assert call("bd_ready").text == f"ID: {deploy}, Status: open, Title: Deploy"

    listing = call("bd_list")
    assert listing.text.splitlines() == [
        f"ID: {schema}, Status: closed, Title: Design the schema",
        f"ID: {migrate}, Status: closed, Title: Write migrations",
        f"ID: {deploy}, Status: open, Title: Deploy",
    ]
    only_open = call("bd_list", status="open")
    assert only_open.text == f"ID: {deploy}, Status: open, Title: Deploy"
    stored = {row["id"]: row for row in lines(beads)}
    assert stored[schema]["issue_type"] == "feature" and stored[schema]["priority"] == 1
    assert stored[schema]["description"] == "Tables for orders"
    assert [d["depends_on_id"] for d in stored[deploy]["dependencies"]] == [migrate, schema]
    assert stored[deploy]["dependencies"][0] | {"created_at": "", "created_by": ""} == {
        "issue_id": deploy, "depends_on_id": migrate, "type": "blocks", "created_at": "", "created_by": ""}


def test_ready_rule_with_statuses_types_and_priorities(call: Call, beads: Path) -> None:
    rows = [
        {"id": "proj-a", "title": "closed base", "status": "closed", "priority": 2,
         "created_at": "2024-01-01T00:00:00Z", "closed_at": "2024-01-02T00:00:00Z"},
        {"id": "proj-b", "title": "in progress", "status": "in_progress", "priority": 0},
        {"id": "proj-c", "title": "waits on in-progress", "status": "open", "priority": 0,
         "dependencies": [{"issue_id": "proj-c", "depends_on_id": "proj-b", "type": "blocks"}]},
        {"id": "proj-d", "title": "only related to open work", "status": "open", "priority": 3,
         "created_at": "2024-01-01T00:00:00Z",
         "dependencies": [{"issue_id": "proj-d", "depends_on_id": "proj-b", "type": "related"},
                          {"issue_id": "proj-d", "depends_on_id": "proj-b", "type": "discovered-from"}]},
        {"id": "proj-e", "title": "after the closed base", "status": "open", "priority": 1,
         "dependencies": [{"issue_id": "proj-e", "depends_on_id": "proj-a", "type": "blocks"}]},
        {"id": "proj-f", "title": "waits on a missing bead", "status": "open", "priority": 0,
         "dependencies": [{"issue_id": "proj-f", "depends_on_id": "proj-gone", "type": "blocks"}]},
        {"id": "proj-g", "title": "blocked", "status": "blocked", "priority": 0},
        {"id": "proj-h", "title": "deferred", "status": "deferred", "priority": 0},
        {"id": "proj-i", "title": "deleted", "status": "tombstone", "priority": 0},
        {"id": "proj-j", "title": "also priority 3, newer", "status": "open", "priority": 3,
         "created_at": "2024-06-01T00:00:00Z"},
    ]
    beads.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ready = call("bd_ready")
    assert ready.structured is not None
    assert [b["id"] for b in ready.structured["beads"]] == ["proj-e", "proj-d", "proj-j"]
    listed = call("bd_list")
    assert "proj-i" not in listed.text and len(listed.text.splitlines()) == 9


def test_closing_and_reopening_sets_and_clears_closed_at(call: Call, beads: Path) -> None:
    bead = create(call, "Flaky test")
    call("bd_update", bead_id=bead, status="closed")
    assert lines(beads)[0]["closed_at"]
    reopened = call("bd_update", bead_id=bead, status="open", priority=0, assignee="sam")
    assert not reopened.is_error, reopened.text
    row = lines(beads)[0]
    assert "closed_at" not in row and row["status"] == "open" and row["priority"] == 0 and row["assignee"] == "sam"
    assert row["updated_at"] >= row["created_at"]


def test_fields_written_by_bd_survive_a_round_trip(call: Call, beads: Path) -> None:
    other = ('{"id":"proj-x1","title":"Kept as is","description":"d","design":"two tables","status":"open",'
             '"priority":1,"issue_type":"epic","assignee":"ana","created_at":"2025-10-20T16:47:16.830853-07:00",'
             '"updated_at":"2025-10-20T16:47:16.830853-07:00","labels":["backend","db"],'
             '"external_ref":"gh-42","comments":[{"id":1,"issue_id":"proj-x1","author":"ana","text":"hi",'
             '"created_at":"2025-10-20T16:47:16Z"}]}')
    target = ('{"id":"proj-x2","title":"Changed","description":"","status":"open","priority":2,'
              '"issue_type":"task","created_at":"2025-10-20T16:47:16Z","updated_at":"2025-10-20T16:47:16Z",'
              '"notes":"keep me","dependencies":[{"issue_id":"proj-x2","depends_on_id":"proj-x1","type":"blocks",'
              '"created_at":"2025-10-20T16:47:16Z","created_by":"ana"}]}')
    beads.write_text(other + "\n" + target + "\n")
    assert not call("bd_update", bead_id="proj-x2", status="in_progress").is_error
    first, second = beads.read_text().splitlines()
    assert first == other
    changed = json.loads(second)
    assert changed["notes"] == "keep me" and changed["status"] == "in_progress"
    assert changed["dependencies"] == json.loads(target)["dependencies"]
    assert list(changed)[:6] == ["id", "title", "description", "status", "priority", "issue_type"]


def test_prefix_follows_existing_ids_without_config(call: Call, beads: Path) -> None:
    (beads.parent / "config.yaml").unlink()
    beads.write_text('{"id":"legacy-7f3a","title":"old"}\n')
    assert create(call, "new").startswith("legacy-")


@pytest.mark.parametrize(("arguments", "kind", "fragment"), [
    ({"title": "x", "priority": 5}, ErrorKind.INVALID_INPUT, "argument 'priority'"),
    ({"title": "x", "priority": -1}, ErrorKind.INVALID_INPUT, "argument 'priority'"),
    ({"title": "x", "issue_type": "story"}, ErrorKind.INVALID_INPUT, "argument 'issue_type'"),
    ({"title": ""}, ErrorKind.INVALID_INPUT, "argument 'title'"),
    ({"title": "   "}, ErrorKind.INVALID_INPUT, "title is blank"),
    ({"title": "x" * 501}, ErrorKind.INVALID_INPUT, "argument 'title'"),
    ({"title": "x", "dependencies": "proj-1"}, ErrorKind.INVALID_INPUT, "argument 'dependencies'"),
    ({"title": "x", "dependencies": ["proj-nope"]}, ErrorKind.NOT_FOUND, "dependencies not found: proj-nope"),
    ({"description": "no title"}, ErrorKind.INVALID_INPUT, "missing required argument 'title'"),
])
def test_bad_create_changes_nothing(call: Call, root: Path, beads: Path, arguments: dict[str, Any],
                                    kind: ErrorKind, fragment: str) -> None:
    create(call, "existing")
    before = snapshot(root)
    out = call("bd_create", **arguments)
    assert out.is_error and out.errors[0].kind is kind and fragment in out.text, out.text
    assert snapshot(root) == before


@pytest.mark.parametrize(("arguments", "kind", "fragment"), [
    ({"bead_id": "proj-zzzz", "status": "closed"}, ErrorKind.NOT_FOUND, "no bead with id 'proj-zzzz'"),
    ({"bead_id": "{id}", "status": "done"}, ErrorKind.INVALID_INPUT, "argument 'status'"),
    ({"bead_id": "{id}"}, ErrorKind.INVALID_INPUT, "nothing to change"),
    ({"bead_id": "{id}", "priority": 9}, ErrorKind.INVALID_INPUT, "argument 'priority'"),
    ({"bead_id": "", "status": "closed"}, ErrorKind.INVALID_INPUT, "argument 'bead_id'"),
])
def test_bad_update_changes_nothing(call: Call, root: Path, beads: Path, arguments: dict[str, Any],
                                    kind: ErrorKind, fragment: str) -> None:
    bead = create(call, "existing")
    arguments = {k: v.format(id=bead) if isinstance(v, str) else v for k, v in arguments.items()}
    before = snapshot(root)
    out = call("bd_update", **arguments)
    assert out.is_error and out.errors[0].kind is kind and fragment in out.text, out.text
    assert snapshot(root) == before


def test_unknown_id_suggests_close_matches(call: Call, beads: Path) -> None:
    bead = create(call, "existing")
    out = call("bd_update", bead_id=bead[:-1], status="closed")
    assert out.is_error and f"Did you mean {bead}?" in out.text


@pytest.mark.parametrize(("content", "fragment"), [
    ('{"id":"proj-1","title":"ok"}\n{"id": "proj-2", "title": \n', "line 2 of .beads/issues.jsonl is not valid JSON"),
    ('{"id":"proj-1"}\n', "line 1 of .beads/issues.jsonl is not a bead (title: Field required)"),
    ('[1, 2]\n', "line 1 of .beads/issues.jsonl is not a bead"),
    ('{"id":"proj-1","title":"a"}\n<<<<<<< HEAD\n{"id":"proj-2","title":"b"}\n=======\n'
     '{"id":"proj-3","title":"c"}\n>>>>>>> feature\n', "git merge conflict marker on line 2"),
])
def test_damaged_file_is_reported_and_never_rewritten(call: Call, root: Path, beads: Path, content: str,
                                                      fragment: str) -> None:
    beads.write_text(content)
    before = snapshot(root)
    for name, arguments in [("bd_list", {}), ("bd_ready", {}), ("bd_create", {"title": "new"}),
                            ("bd_update", {"bead_id": "proj-1", "status": "closed"})]:
        out = call(name, **arguments)
        assert out.is_error and fragment in out.text, (name, out.text)
        assert "Hint:" in out.text
    assert snapshot(root) == before


def test_beads_folder_linked_outside_the_workspace_is_refused(call: Call, root: Path, tmp_path: Path,
                                                               ctx: ToolContext) -> None:
    ctx.services = ctx.services.with_values(BUILTIN)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    beads_init(outside)
    (root / ".beads").symlink_to(outside / ".beads")
    before = snapshot(outside)
    out = call("bd_create", title="escape")
    assert out.is_error and out.errors[0].kind is ErrorKind.PERMISSION, out.text
    assert call("bd_list").is_error
    assert snapshot(outside) == before


def test_crlf_file_keeps_its_line_endings(call: Call, beads: Path) -> None:
    beads.write_bytes(b'{"id":"proj-1","title":"windows"}\r\n')
    create(call, "second")
    data = beads.read_bytes()
    assert data.count(b"\r\n") == 2 and data.count(b"\n") == 2


def test_concurrent_threads_lose_nothing(catalog: Catalog, beads: Path, ctx: ToolContext) -> None:
    barrier = threading.Barrier(4)
    failures: list[str] = []

    def writer(n: int) -> None:
        barrier.wait()
        for i in range(10):
            out = catalog.call("bd_create", {"title": f"thread {n} bead {i}"}, ctx)
            if out.is_error:
                failures.append(out.text)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    rows = lines(beads)
    assert sorted(r["title"] for r in rows) == sorted(f"thread {n} bead {i}" for n in range(4) for i in range(10))
    assert len({r["id"] for r in rows}) == 40


def _write_beads_in_another_process(root: str, label: str, count: int, barrier: Any) -> None:
    catalog = Catalog.from_modules([codeward.tools.beads])
    ctx = ToolContext(Workspace.create([root]), services=Services(BUILTIN))
    barrier.wait()
    for i in range(count):
        out = catalog.call("bd_create", {"title": f"{label} {i}"}, ctx)
        if out.is_error:
            raise SystemExit(out.text)


def test_two_processes_writing_at_once_lose_nothing(root: Path, beads: Path) -> None:
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(2)
    count = 25
    workers = [spawn.Process(target=_write_beads_in_another_process, args=(str(root), label, count, barrier))
               for label in ("alpha", "beta")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    rows = lines(beads)
    expected = sorted(f"{label} {i}" for label in ("alpha", "beta") for i in range(count))
    assert sorted(r["title"] for r in rows) == expected
    assert len({r["id"] for r in rows}) == 2 * count
    assert not [p for p in os.listdir(beads.parent) if p.endswith(".codeward-tmp")]
