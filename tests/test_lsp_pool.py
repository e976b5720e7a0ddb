"""The language servers' life around the tools: the index answers while a server starts, a missing server is named
with its install command, a crashed one is restarted once and reported, idle ones stop, no isolating sandbox
means no server — and positions and edits land where the server meant them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward.config.lsp import LspSettings
from codeward.config.sandbox import SandboxSettings
from codeward.engines.lsp.answers import RenameDraft, write_rename
from codeward.engines.lsp.pool import Phase, Server, servers_of
from codeward.engines.lsp.positions import EditConflict, Encoding, Span, TextEdit, apply_edits, lines_of
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.host_run import EVERY_WRITE, NEEDS_PERSON
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Workspace
from codeward.serving.stack import call_steps
from codeward.tools import default_catalog
from tests.conftest import snapshot
from tests.lsp_support import Tools, located_or_skip

pytestmark = pytest.mark.xdist_group("lsp-pool")

RING = """\
struct ring { int head; };

int ring_size(const struct ring *r) { return r->head; }

int ring_twice(const struct ring *r) { return ring_size(r) * 2; }
"""
MAIN = """\
struct ring;
int ring_size(const struct ring *r);

int main(void) { return ring_size(0); }
"""


def c_project(root: Path) -> None:
    (root / "ring.c").write_text(RING)
    (root / "main.c").write_text(MAIN)
    entries = [{"directory": str(root), "file": str(root / name), "arguments": ["cc", "-c", name]}
               for name in ("ring.c", "main.c")]
    import json

    (root / "compile_commands.json").write_text(json.dumps(entries))


def tools_for(root: Path, **settings: Any) -> Tools:
    context = ToolContext(Workspace.create([root]), services=Services(LspSettings(**settings)))
    return Tools(default_catalog().with_steps(call_steps()), context)


def wait_until(condition: Any, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def clangd_tools(root: Path) -> Iterator[Tools]:
    located_or_skip("c")
    c_project(root)
    tools = tools_for(root, startup_wait_s=300.0)
    try:
        yield tools
    finally:
        tools.ctx.services.runtimes.close()


def the_server(tools: Tools) -> Server:
    servers = servers_of(tools.ctx.services).servers()
    assert len(servers) == 1, servers
    return servers[0]


def test_the_index_answers_at_once_while_the_server_starts_then_the_server(root: Path) -> None:
    located_or_skip("c")
    c_project(root)
    tools = tools_for(root)  # startup_wait_s = 0: never wait for a starting server
    try:
        first = tools("find_references", path="ring.c", name="ring_size")
        assert not first.is_error and first.structured is not None
        assert first.structured["name_based"] and first.structured["engine"] == "symbol index (name-based)"
        assert "clangd" in first.text and "is starting" in first.text and "call again" in first.text
        assert [r["path"] for r in first.structured["references"]] == ["main.c", "main.c", "ring.c", "ring.c"]
        server = the_server(tools)
        assert server.ready.wait(300) and server.phase is Phase.READY, server.problem
        second = tools.ok("find_references", path="ring.c", name="ring_size")
        assert second["engine"].startswith("clangd") and not second["name_based"]
        assert second["total"] == 4 and sum(r["definition"] for r in second["references"]) >= 1
    finally:
        tools.ctx.services.runtimes.close()


def test_a_missing_server_is_named_with_its_install_command(root: Path) -> None:
    c_project(root)
    tools = tools_for(root, commands={"c": root / "no-such-clangd", "typescript": root / "no-such-tls"})
    try:
        found = tools.ok("find_references", path="ring.c", name="ring_size")
        assert found["name_based"] and found["total"] == 4
        answer = tools("find_references", path="ring.c", name="ring_size").text
        assert "apt install clangd" in answer and "no-such-clangd" in answer
        (root / "cart.js").write_text("export function total(cart) { return cart.length; }\n")
        info = tools("symbol_info", path="cart.js", name="total")
        assert not info.is_error and "npm install -g typescript-language-server typescript" in info.text
        assert not tools("code_get_outline", path="ring.c").is_error  # the tree-sitter tools keep working
    finally:
        tools.ctx.services.runtimes.close()


def test_a_crashed_server_is_restarted_once_and_reported(clangd_tools: Tools) -> None:
    tools = clangd_tools
    assert tools.ok("find_references", path="ring.c", name="ring_size")["engine"].startswith("clangd")
    first = the_server(tools)
    assert first.boxed is not None
    os.killpg(first.boxed.proc.pid, signal.SIGKILL)
    wait_until(lambda: not first.alive())
    again = tools("find_references", path="ring.c", name="ring_size")
    assert not again.is_error and "clangd exited" in again.text and "restarted it once" in again.text
    assert again.structured is not None and again.structured["engine"].startswith("clangd")
    second = the_server(tools)
    assert second is not first and second.restarts == 1 and second.boxed is not None
    os.killpg(second.boxed.proc.pid, signal.SIGKILL)
    wait_until(lambda: not second.alive())
    left = tools("find_references", path="ring.c", name="ring_size")
    assert not left.is_error and left.structured is not None and left.structured["name_based"]
    assert "restarted once already" in left.text


def test_an_idle_server_is_stopped(root: Path) -> None:
    located_or_skip("c")
    c_project(root)
    tools = tools_for(root, startup_wait_s=300.0, idle_s=0.5)
    try:
        assert tools.ok("find_references", path="ring.c", name="ring_size")["engine"].startswith("clangd")
        server = the_server(tools)
        assert server.boxed is not None
        process = server.boxed.proc
        wait_until(lambda: not servers_of(tools.ctx.services).servers(), timeout=60)
        wait_until(lambda: process.poll() is not None, timeout=30)
    finally:
        tools.ctx.services.runtimes.close()


def test_no_server_starts_where_the_sandbox_refuses(root: Path) -> None:
    located_or_skip("c")
    c_project(root)
    services = Services(LspSettings(startup_wait_s=60.0), SandboxSettings(backend="docker"))
    tools = Tools(default_catalog().with_steps(call_steps()), ToolContext(Workspace.create([root]), services=services))
    try:
        answer = tools("find_references", path="ring.c", name="ring_size")
        assert not answer.is_error and answer.structured is not None and answer.structured["name_based"]
        assert "runs code execution only" in answer.text and "bubblewrap" in answer.text, answer.text
        assert [(server.phase, server.boxed) for server in servers_of(tools.ctx.services).servers()] == \
            [(Phase.FAILED, None)]
    finally:
        tools.ctx.services.runtimes.close()


def test_the_operators_process_backend_runs_a_server_and_every_answer_says_not_isolated(root: Path) -> None:
    located_or_skip("c")
    c_project(root)
    services = Services(LspSettings(startup_wait_s=300.0), SandboxSettings(backend="process"))
    tools = Tools(default_catalog().with_steps(call_steps()), ToolContext(Workspace.create([root]), services=services))
    try:
        answer = tools("find_references", path="ring.c", name="ring_size")
        assert not answer.is_error and answer.structured is not None, answer.text
        assert answer.structured["engine"].startswith("clangd") and not answer.structured["name_based"]
        assert "NOT isolated" in answer.text, answer.text
        server = the_server(tools)
        assert server.boxed is not None and server.boxed.backend == "process" and not server.boxed.isolated
    finally:
        tools.ctx.services.runtimes.close()


def test_paging_through_references(clangd_tools: Tools) -> None:
    first = clangd_tools.ok("find_references", path="ring.c", name="ring_size", limit=3)
    assert first["total"] == 4 and len(first["references"]) == 3 and first["next_offset"] == 3
    rest = clangd_tools.ok("find_references", path="ring.c", name="ring_size", limit=3, offset=3)
    assert len(rest["references"]) == 1 and rest["next_offset"] is None
    assert first["references"] + rest["references"] == clangd_tools.ok("find_references", path="ring.c",
                                                                       name="ring_size")["references"]


def test_definition_info_and_diagnostics_from_the_server(clangd_tools: Tools, root: Path) -> None:
    tools = clangd_tools
    found = tools.ok("find_definition", path="main.c", line=4, column=25)
    assert [(d["path"], d["line"]) for d in found["definitions"]] == [("ring.c", 3)]
    info = tools.ok("symbol_info", path="ring.c", name="ring_size")
    assert "int ring_size(const struct ring *r)" in info["info"]
    (root / "broken.c").write_text("int f(void) { return undeclared_thing; }\n")
    problems = tools.ok("get_diagnostics", path="broken.c")
    assert problems["engine"].startswith("clangd") and not problems["syntax_only"]
    assert any("undeclared_thing" in d["message"] for d in problems["diagnostics"]), problems


BAD_RENAMES = [
    ({"path": "ring.c", "name": "ring_size", "new_name": "1x"}, ErrorKind.INVALID_INPUT, "not a valid C or C++"),
    ({"path": "ring.c", "name": "ring_size", "new_name": "while"}, ErrorKind.INVALID_INPUT, "not a valid C or C++"),
    ({"path": "ring.c", "name": "ring_size", "new_name": "ring_size"}, ErrorKind.INVALID_INPUT, "already named"),
    ({"path": "ring.c", "name": "nope", "new_name": "x"}, ErrorKind.NOT_FOUND, "no symbol named 'nope'"),
    ({"path": "ring.c", "new_name": "x"}, ErrorKind.INVALID_INPUT, "name, or line and column"),
    ({"path": "ring.c", "name": "ring_size", "line": 3, "column": 5, "new_name": "x"}, ErrorKind.INVALID_INPUT,
     "not both"),
    ({"path": "ring.c", "line": 2, "column": 1, "new_name": "x"}, ErrorKind.INVALID_INPUT, "not on a name"),
    ({"path": "ring.c", "line": 99, "column": 1, "new_name": "x"}, ErrorKind.INVALID_INPUT, "past the end"),
    ({"path": "../outside.c", "name": "x", "new_name": "y"}, ErrorKind.PERMISSION, "outside the workspace"),
    ({"path": "missing.c", "name": "x", "new_name": "y"}, ErrorKind.NOT_FOUND, "missing.c"),
]


@pytest.mark.parametrize(("arguments", "kind", "words"), BAD_RENAMES)
def test_bad_input_is_refused_and_changes_nothing(root: Path, call: Any, arguments: dict[str, Any], kind: ErrorKind,
                                                  words: str) -> None:
    c_project(root)
    before = snapshot(root)
    outcome = call("rename_symbol", **arguments)
    assert outcome.is_error and outcome.errors[0].kind is kind and words in outcome.text, outcome.text
    if words not in ("not a valid C or C++", "already named"):  # the same refusal for a question
        found = call("find_references", **{k: v for k, v in arguments.items() if k != "new_name"})
        assert found.is_error and found.errors[0].kind is kind and words in found.text, found.text
    assert {k: v for k, v in snapshot(root).items() if not k.startswith(".codeward")} == \
        {k: v for k, v in before.items() if not k.startswith(".codeward")}


def test_a_rename_reaching_outside_or_a_protected_file_writes_nothing(root: Path, tmp_path: Path,
                                                                      ctx: ToolContext) -> None:
    """The server's edit is checked file by file before anything is written (a server could name any file)."""
    c_project(root)
    (root / ".git").mkdir()
    (root / ".git" / "config.c").write_text("int ring_size;\n")
    outside = tmp_path / "elsewhere.c"
    outside.write_text("int ring_size;\n")
    before = snapshot(root)

    def edit(path: Path) -> dict[Path, list[TextEdit]]:
        return {root / "ring.c": [TextEdit(Span(2, 4, 2, 13), "ring_count")],
                path: [TextEdit(Span(0, 4, 0, 13), "ring_count")]}

    draft = RenameDraft("clangd", False, {}, [], [], 0, [])
    for target, kind in ((outside, ErrorKind.PERMISSION), (root / ".git" / "config.c", ErrorKind.PERMISSION)):
        refused = write_rename(ctx, "ring_size", "ring_count", draft, edit(target), True, "refuse")
        assert not refused.ok and refused.errors[0].kind is kind, refused.errors
        assert "Nothing was changed" in refused.error_text() or "outside the workspace" in refused.error_text()
    assert snapshot(root) == before and outside.read_text() == "int ring_size;\n"


def test_a_rename_reaching_a_host_run_file_asks_a_person_and_writes_all_once_they_agree(root: Path,
                                                                                       ctx: ToolContext) -> None:
    """A file the person's tools run later (here a git hook folder) needs a person: the refusal keeps the
    source the approval layer asks about, and nothing is written until then; with consent, every file."""
    c_project(root)
    (root / ".githooks").mkdir()
    (root / ".githooks" / "check.c").write_text("int ring_size;\n")
    before = snapshot(root)
    edits = {root / "ring.c": [TextEdit(Span(2, 4, 2, 13), "ring_count")],
             root / ".githooks" / "check.c": [TextEdit(Span(0, 4, 0, 13), "ring_count")]}
    draft = RenameDraft("clangd", False, {}, [], [], 0, [])
    refused = write_rename(ctx, "ring_size", "ring_count", draft, edits, True, "refuse")
    assert not refused.ok and refused.errors[0].kind is ErrorKind.PERMISSION, refused.errors
    assert refused.errors[0].source == NEEDS_PERSON and "Nothing was changed" in refused.error_text()
    assert snapshot(root) == before
    agreed = ctx.child(workspace=ctx.workspace.with_host_run_consent(EVERY_WRITE))
    written = write_rename(agreed, "ring_size", "ring_count", draft, edits, True, "refuse")
    assert written.ok, written.errors
    assert (root / ".githooks" / "check.c").read_text() == "int ring_count;\n"
    assert "int ring_count(const struct ring *r)" in (root / "ring.c").read_text()


@pytest.mark.parametrize("encoding", list(Encoding))
def test_columns_survive_every_position_encoding(encoding: Encoding) -> None:
    line = "naïve = '😀' + 名前 + x"
    for index in range(len(line) + 1):
        assert encoding.to_index(line, encoding.from_index(line, index)) == index
    emoji = line.index("😀")
    after = emoji + 1
    assert Encoding.UTF16.from_index(line, after) - Encoding.UTF16.from_index(line, emoji) == 2
    assert Encoding.UTF8.from_index(line, after) - Encoding.UTF8.from_index(line, emoji) == 4
    assert Encoding.UTF32.from_index(line, after) - Encoding.UTF32.from_index(line, emoji) == 1


def test_edits_apply_at_once_keeping_line_endings_and_refusing_overlaps() -> None:
    text = "a = 1\r\nb = a\r\nc = a + a"
    renamed = apply_edits(text, [TextEdit(Span(0, 0, 0, 1), "alpha"), TextEdit(Span(1, 4, 1, 5), "alpha"),
                                 TextEdit(Span(2, 4, 2, 5), "alpha"), TextEdit(Span(2, 8, 2, 9), "alpha")])
    assert renamed == "alpha = 1\r\nb = alpha\r\nc = alpha + alpha"
    assert lines_of(renamed) == ["alpha = 1", "b = alpha", "c = alpha + alpha"]
    with pytest.raises(EditConflict):
        apply_edits(text, [TextEdit(Span(0, 0, 0, 3), "x"), TextEdit(Span(0, 2, 0, 4), "y")])
    with pytest.raises(EditConflict):
        apply_edits(text, [TextEdit(Span(9, 0, 9, 1), "x")])


def test_answers_follow_the_disk(clangd_tools: Tools, root: Path) -> None:
    """A file changed after the server read it (by an editor, the shell, codeward's own writes) is read again."""
    tools = clangd_tools
    before = tools.ok("find_references", path="ring.c", name="ring_size")
    assert before["engine"].startswith("clangd") and before["total"] == 4
    (root / "main.c").write_text(MAIN + "\nint again(void) { return ring_size(1) + ring_size(2); }\n")
    after = tools.ok("find_references", path="ring.c", name="ring_size")
    assert after["total"] == 6 and sum(r["path"] == "main.c" for r in after["references"]) == 4, after
    renamed = tools.ok("rename_symbol", path="ring.c", name="ring_size", new_name="ring_count", apply=True)
    assert renamed["applied"] and renamed["edits"] == 6
    again = tools.ok("find_references", path="ring.c", name="ring_count")
    assert again["total"] == 6 and not again["unsure"], again
