"""File tools through the catalog: exact edits, preserved encodings, clear refusals, bounded output."""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Settings, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]


def test_read_file_pages_with_offset_and_limit(root: Path, call: Call) -> None:
    (root / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    page = call("read_file", path="long.txt", offset=11, limit=5)
    assert page.text.startswith("line 11\nline 12\n") and "line 16" not in page.text
    assert "[lines 11-15 of 100; continue with offset=16]" in page.text
    last = call("read_file", path="long.txt", offset=99)
    assert last.text == "line 99\nline 100\n"
    past = call("read_file", path="long.txt", offset=500)
    assert past.is_error and "past the end (100 lines)" in past.text


def test_read_file_refuses_binary_files(root: Path, call: Call) -> None:
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    outcome = call("read_file", path="blob.bin")
    assert outcome.is_error and "binary file (300 bytes)" in outcome.text


def test_edit_file_replaces_exactly_one_occurrence(root: Path, call: Call) -> None:
    original = "alpha\nbeta\ngamma\n"
    (root / "a.txt").write_text(original)
    outcome = call("edit_file", path="a.txt", old_string="beta", new_string="BETA")
    assert not outcome.is_error and "line 2" in outcome.text
    assert (root / "a.txt").read_text() == "alpha\nBETA\ngamma\n"


def test_edit_file_absent_string_names_the_closest_line(root: Path, call: Call) -> None:
    (root / "a.py").write_text("def handler(request):\n    return request\n")
    before = snapshot(root)
    outcome = call("edit_file", path="a.py", old_string="def handler(req):", new_string="x")
    assert outcome.is_error and outcome.errors[0].kind is ErrorKind.NOT_FOUND
    assert "closest line is 1" in outcome.text and "def handler(request):" in outcome.text
    assert snapshot(root) == before


def test_edit_file_ambiguous_string_lists_lines_and_changes_nothing(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("x = 1\ny = 2\nx = 1\n")
    before = snapshot(root)
    outcome = call("edit_file", path="a.txt", old_string="x = 1", new_string="x = 3")
    assert outcome.is_error and outcome.errors[0].kind is ErrorKind.CONFLICT
    assert "occurs 2 times" in outcome.text and "lines 1, 3" in outcome.text and "replace_all" in outcome.text
    assert snapshot(root) == before
    done = call("edit_file", path="a.txt", old_string="x = 1", new_string="x = 3", replace_all=True)
    assert not done.is_error and (root / "a.txt").read_text() == "x = 3\ny = 2\nx = 3\n"


def test_edit_file_dry_run_returns_a_diff_and_writes_nothing(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("one\ntwo\n")
    before = snapshot(root)
    outcome = call("edit_file", path="a.txt", old_string="two", new_string="deux", dry_run=True)
    assert "-two\n+deux" in outcome.text and "--- a/a.txt" in outcome.text and "dry run" in outcome.text
    assert snapshot(root) == before


def test_edits_keep_bom_crlf_encoding_and_mode(root: Path, call: Call) -> None:
    target = root / "win.txt"
    target.write_bytes(codecs.BOM_UTF8 + b"first\r\nsecond\r\nthird\r\n")
    target.chmod(0o751)
    call("edit_file", path="win.txt", old_string="second", new_string="2nd")
    call("set_file_slice", path="win.txt", start_line=3, end_line=3, new_content="3rd\n")
    assert target.read_bytes() == codecs.BOM_UTF8 + b"first\r\n2nd\r\n3rd\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    utf16 = root / "u16.txt"
    utf16.write_bytes(codecs.BOM_UTF16_LE + "caf\u00e9\n".encode("utf-16-le"))
    call("edit_file", path="u16.txt", old_string="caf\u00e9", new_string="th\u00e9")
    assert utf16.read_bytes() == codecs.BOM_UTF16_LE + "th\u00e9\n".encode("utf-16-le")


def test_latin1_bytes_survive_an_edit_elsewhere_in_the_file(root: Path, call: Call) -> None:
    target = root / "legacy.txt"
    target.write_bytes(b"caf\xe9\nplain\n")
    call("edit_file", path="legacy.txt", old_string="plain", new_string="edited")
    assert target.read_bytes() == b"caf\xe9\nedited\n"


def test_set_file_slice_replaces_inserts_and_checks_ranges(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("1\n2\n3\n")
    call("set_file_slice", path="a.txt", start_line=2, end_line=2, new_content="two")
    assert (root / "a.txt").read_text() == "1\ntwo\n3\n"
    call("set_file_slice", path="a.txt", start_line=2, end_line=1, new_content="inserted\n")
    assert (root / "a.txt").read_text() == "1\ninserted\ntwo\n3\n"
    before = snapshot(root)
    for start, end, fragment in ((0, 1, "1 or more"), (3, 1, "before start_line"), (2, 9, "past the end")):
        outcome = call("set_file_slice", path="a.txt", start_line=start, end_line=end, new_content="x")
        assert outcome.is_error and fragment in outcome.text
    assert snapshot(root) == before


def test_get_file_slice_is_one_based_and_inclusive(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("a\nb\nc\nd\n")
    assert call("get_file_slice", path="a.txt", start_line=2, end_line=3).text == "b\nc\n"


def test_write_file_refuses_to_clobber_without_overwrite(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("keep\n")
    outcome = call("write_file", path="a.txt", content="lost")
    assert outcome.is_error and outcome.errors[0].kind is ErrorKind.CONFLICT and "overwrite" in outcome.text
    assert (root / "a.txt").read_text() == "keep\n"
    assert not call("write_file", path="a.txt", content="new\n", overwrite=True).is_error
    assert (root / "a.txt").read_text() == "new\n"


def test_no_temp_files_are_left_behind(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("x\n")
    for i in range(5):
        call("edit_file", path="a.txt", old_string=f"{'x' if i == 0 else i - 1}", new_string=str(i))
    assert sorted(p.name for p in root.iterdir() if p.name != ".codeward") == ["a.txt"]  # checkpoints live there


def test_concurrent_edits_to_one_file_are_serialized(root: Path, catalog: Catalog, ctx: ToolContext) -> None:
    markers = [f"marker{i:03}" for i in range(40)]
    (root / "shared.txt").write_text("".join(f"{m}\n" for m in markers))

    def edit(marker: str) -> None:
        catalog.call("edit_file", {"path": "shared.txt", "old_string": marker, "new_string": marker.upper()}, ctx)

    threads = [threading.Thread(target=edit, args=(m,)) for m in markers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (root / "shared.txt").read_text() == "".join(f"{m.upper()}\n" for m in markers)


def test_output_past_the_cap_is_cut_with_a_marker_and_saved(root: Path, catalog: Catalog) -> None:
    for number in range(300):
        (root / f"file_{number:04}.txt").write_text("")
    ctx = ToolContext(Workspace.create([root]), settings=Settings(output_cap_chars=1000))
    outcome = catalog.call("search_files", {"path": ".", "pattern": "*.txt"}, ctx)
    text = "\n".join(f"file_{number:04}.txt" for number in range(300))
    assert outcome.truncated and outcome.text.startswith(text[:1000])
    assert f"output truncated: {len(text):,} characters, showing the first 1,000" in outcome.text
    saved = outcome.text.split("saved as ")[1].split(":")[0]
    assert (root / saved).read_text() == text
    assert "offset/limit" in outcome.text


def test_a_read_past_the_cap_is_a_page_cut_at_a_line_and_writes_nothing(root: Path, catalog: Catalog) -> None:
    text = "".join(f"row {i:06}\n" for i in range(5000))
    (root / "big.txt").write_text(text)
    ctx = ToolContext(Workspace.create([root]), settings=Settings(output_cap_chars=1000))
    pages: list[str] = []
    offset = 1
    while True:
        outcome = catalog.call("read_file", {"path": "big.txt", "offset": offset}, ctx)
        assert not outcome.truncated and not outcome.is_error and len(outcome.text) <= 1000
        body, _, note = outcome.text.rpartition("\n[lines ")
        if not _:
            pages.append(outcome.text)
            break
        pages.append(body)
        read = body.count("\n")
        assert note == f"{offset}-{offset + read - 1} of 5000; the page stops at the output cap; continue with " \
                       f"offset={offset + read}]"
        offset += read
    assert "".join(pages) == text and len(pages) > 50
    assert not (root / ".codeward").exists()


def test_a_line_longer_than_a_page_and_a_long_slice_say_where_to_go_on(root: Path, catalog: Catalog) -> None:
    (root / "min.js").write_text("x" * 5000 + "\nsecond\n")
    ctx = ToolContext(Workspace.create([root]), settings=Settings(output_cap_chars=2000))
    first = catalog.call("read_file", {"path": "min.js"}, ctx)
    assert not first.truncated and first.text.startswith("x" * 1600) and "x" * 1601 not in first.text
    assert first.text.endswith("[line 1 is 5,001 characters, more than one answer holds: showing its first 1,600 "
                               "(search_text finds text inside it). Continue with offset=2.]")
    assert catalog.call("read_file", {"path": "min.js", "offset": 2}, ctx).text == "second\n"
    (root / "rows.txt").write_text("".join(f"row {n:04}\n" for n in range(1, 1001)))
    sliced = catalog.call("get_file_slice", {"path": "rows.txt", "start_line": 10, "end_line": 900}, ctx)
    body, _, note = sliced.text.rpartition("\n[")
    last = int(body.rstrip("\n").rsplit(" ", 1)[1])
    assert not sliced.truncated and body.startswith("row 0010\n") and len(sliced.text) <= 2000
    assert note == f"lines 10-{last} of the 10-900 asked: the answer stops at the output cap; continue with " \
                   f"start_line={last + 1}]"


def test_unknown_arguments_and_missing_ones_are_named(call: Call) -> None:
    outcome = call("get_file_slice", path="a.txt", start=1)
    assert outcome.is_error
    assert "missing required argument 'start_line' (an integer)" in outcome.text
    assert "unknown argument 'start'" in outcome.text


@pytest.mark.parametrize("tool", ["read_file", "get_tree", "list_directory", "search_files"])
def test_every_file_tool_has_a_typed_schema_and_refuses_unknown_arguments(catalog: Catalog, call: Call,
                                                                           tool: str) -> None:
    spec = catalog.get(tool)
    assert spec is not None
    schema = spec.input_schema
    assert schema["type"] == "object" and schema["properties"]
    assert all(prop.get("type") for prop in schema["properties"].values())
    # The lean listing leaves ``additionalProperties: false`` out (and descriptions a name already says,
    # issue 33); the server still refuses what is not there.
    assert "additionalProperties" not in schema
    outcome = call(tool, path=".", no_such_argument=1)
    assert outcome.is_error and "unknown argument 'no_such_argument'" in outcome.text


def test_get_tree_honours_gitignore_and_depth(root: Path, call: Call) -> None:
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("")
    (root / "app.log").write_text("")
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "deep.txt").write_text("")
    (root / "a" / ".gitignore").write_text("secret_dir/\n")
    (root / "a" / "secret_dir").mkdir()
    tree = call("get_tree", path=".", max_depth=2).text
    assert "build" not in tree and "app.log" not in tree and "secret_dir" not in tree
    assert "a/" in tree and "b/" in tree and "deep.txt" not in tree
    assert "deep.txt" in call("get_tree", path=".", max_depth=4).text


def test_bytes_that_are_not_utf8_reach_the_client_as_replacement_characters(root: Path, call: Call) -> None:
    (root / "stray.txt").write_bytes("café \xff\n".encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    (root / b"na\xefve.txt".decode("utf-8", "surrogateescape")).write_bytes(b"")
    for outcome in (call("read_file", path="stray.txt"), call("list_directory", path=".")):
        outcome.text.encode("utf-8")  # a lone surrogate here makes the whole JSON message invalid
    read = call("read_file", path="stray.txt").text
    assert read.startswith("café \ufffd\n") and "not valid UTF-8: 1 byte could not be decoded" in read
    assert "na\ufffdve.txt" in call("list_directory", path=".").text


def test_a_file_in_a_legacy_encoding_is_read_in_it_and_named(root: Path, call: Call) -> None:
    (root / "legacy.txt").write_bytes("caf\xe9 na\xefve\n".encode("latin-1"))
    read = call("read_file", path="legacy.txt").text
    assert read == "café naïve\n\n[encoding: cp1252 (detected; the file is not UTF-8); edits write it back in cp1252]"
    assert not call("edit_file", path="legacy.txt", old_string="naïve", new_string="naïf").is_error
    assert (root / "legacy.txt").read_bytes() == b"caf\xe9 na\xeff\n"
    refused = call("edit_file", path="legacy.txt", old_string="café", new_string="カフェ")
    assert refused.is_error and "cannot be encoded as cp1252" in refused.text
    assert (root / "legacy.txt").read_bytes() == b"caf\xe9 na\xeff\n"


def test_ambiguous_edit_names_the_first_lines_and_only_scans_for_those(root: Path, call: Call) -> None:
    (root / "few.txt").write_text("a\ne e\nb\ne\n")
    outcome = call("edit_file", path="few.txt", old_string="e", new_string="E")
    assert outcome.is_error and "occurs 3 times in few.txt (lines 2, 2, 4)" in outcome.text
    # 200,000 matches: line numbers used to be counted from the start of the file for each one
    # (27 s here for this 400 kB file, minutes for a few MB); only the first ten are needed.
    (root / "many.txt").write_text("e\n" * 200_000)
    before = snapshot(root)
    outcome = call("edit_file", path="many.txt", old_string="e", new_string="E")
    assert outcome.is_error and "occurs 200000 times in many.txt (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)" in outcome.text
    assert snapshot(root) == before
    done = call("edit_file", path="many.txt", old_string="e\ne\n", new_string="", replace_all=True)
    assert not done.is_error and "100000 occurrences" in done.text and (root / "many.txt").read_text() == ""


def test_fifos_are_refused_without_waiting_for_a_writer(root: Path, call: Call) -> None:
    os.mkfifo(root / "pipe")
    finished = threading.Event()

    def unblock_a_stuck_reader() -> None:  # opening for writing only succeeds once a reader waits
        while not finished.wait(0.05):
            with contextlib.suppress(OSError):
                os.close(os.open(root / "pipe", os.O_WRONLY | os.O_NONBLOCK))

    helper = threading.Thread(target=unblock_a_stuck_reader, daemon=True)
    helper.start()
    try:
        outcomes = [call("read_file", path="pipe"), call("edit_file", path="pipe", old_string="a", new_string="b")]
    finally:
        finished.set()
        helper.join()
    for outcome in outcomes:
        assert outcome.is_error and "pipe is not a regular file (a FIFO, socket or device)" in outcome.text


def test_files_past_the_text_limit_are_refused_before_reading(root: Path, call: Call) -> None:
    from codeward.engines.files.textfile import MAX_TEXT_FILE_BYTES

    with open(root / "huge.log", "wb") as handle:  # sparse: no disk used
        handle.truncate(MAX_TEXT_FILE_BYTES + 1)
    before = snapshot(root)
    for outcome in (call("read_file", path="huge.log", limit=10),
                    call("edit_file", path="huge.log", old_string="a", new_string="b")):
        assert outcome.is_error and outcome.errors[0].kind is ErrorKind.TOO_LARGE
        assert f"huge.log is {MAX_TEXT_FILE_BYTES + 1:,} bytes" in outcome.text and "grep" in outcome.text
    assert snapshot(root) == before


def test_spilled_output_never_lands_outside_through_a_symlinked_folder(root: Path, tmp_path: Path,
                                                                       catalog: Catalog) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".codeward").symlink_to(elsewhere, target_is_directory=True)  # a cloned repository can ship this
    (root / "big.txt").write_text("row\n" * 1000)
    ctx = ToolContext(Workspace.create([root]), settings=Settings(output_cap_chars=100))
    outcome = catalog.call("read_file", {"path": "big.txt"}, ctx)
    assert outcome.truncated and "Narrow the request" in outcome.text and "saved as" not in outcome.text
    assert list(elsewhere.iterdir()) == []


def test_spilled_output_with_a_lone_surrogate_is_saved_not_raised(root: Path, catalog: Catalog) -> None:
    (root / "a.txt").write_text("a\n")
    ctx = ToolContext(Workspace.create([root]), settings=Settings(output_cap_chars=100))
    arguments = {"path": "a.txt", "old_string": "a", "new_string": "\ud800" * 300, "dry_run": True}
    outcome = catalog.call("edit_file", arguments, ctx)  # JSON allows "\ud800"; the diff echoes it
    assert outcome.truncated and "saved as" in outcome.text and "\ufffd" in outcome.text


def test_appending_after_a_last_line_without_newline_keeps_both_lines(root: Path, call: Call) -> None:
    (root / "a.txt").write_text("a\nb")
    call("set_file_slice", path="a.txt", start_line=3, end_line=2, new_content="c\n")
    assert (root / "a.txt").read_text() == "a\nb\nc\n"
    call("set_file_slice", path="a.txt", start_line=4, end_line=3, new_content="d")
    assert (root / "a.txt").read_text() == "a\nb\nc\nd\n"  # the file ended with a newline: it still does


def test_a_refused_write_file_leaves_no_new_folders(root: Path, call: Call) -> None:
    outcome = call("write_file", path="new/deep/f.txt", content="x\ud800")  # JSON can carry a lone surrogate
    assert outcome.is_error and "cannot be encoded" in outcome.text
    assert list(root.iterdir()) == []
    (root / "file").write_text("")
    blocked = call("write_file", path="file/sub/f.txt", content="x")
    assert blocked.is_error and "Hint:" in blocked.text and sorted(p.name for p in root.iterdir()) == ["file"]


def test_files_with_the_longest_names_can_be_edited(root: Path, call: Call) -> None:
    name = "n" * 252 + ".py"  # 255 bytes: the temporary sibling's name must not grow past that
    (root / name).write_text("old\n")
    outcome = call("edit_file", path=name, old_string="old", new_string="new")
    assert not outcome.is_error, outcome.text
    assert (root / name).read_text() == "new\n"
    assert sorted(p.name for p in root.iterdir() if p.name != ".codeward") == [name]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_an_edit_keeps_the_file_owner(root: Path, call: Call) -> None:
    target = root / "owned.txt"
    target.write_text("a\n")
    os.chown(target, 4321, 4322)
    call("edit_file", path="owned.txt", old_string="a", new_string="b")
    info = target.stat()
    assert target.read_text() == "b\n" and (info.st_uid, info.st_gid) == (4321, 4322)


def test_a_call_carrying_too_much_text_is_refused_before_any_tool_runs(call: Call, root: Path) -> None:
    from codeward.kernel.catalog import MAX_ARGUMENT_CHARS

    before = snapshot(root)
    outcome = call("write_file", path="huge.txt", content="x" * (MAX_ARGUMENT_CHARS + 1))
    assert outcome.is_error
    carried = len("path") + len("huge.txt") + len("content") + MAX_ARGUMENT_CHARS + 1
    assert f"hold {carried:,} characters" in outcome.text
    assert "set_file_slice" in outcome.text
    assert snapshot(root) == before
    nested = call("edit_file", path="a.txt", edits=[{"old_text": "a", "new_text": "b" * MAX_ARGUMENT_CHARS}])
    assert nested.is_error and "characters; a call takes up to" in nested.text
    assert snapshot(root) == before
    fits = call("write_file", path="big.txt", content="y" * 1_000_000)
    assert not fits.is_error and (root / "big.txt").stat().st_size == 1_000_000


def test_saved_outputs_are_pruned_to_the_newest(root: Path, catalog: Catalog) -> None:
    ctx = ToolContext(Workspace.create([root]), settings=Settings(output_cap_chars=100, spill_keep=3))
    spill = root / ".codeward" / "outputs"
    spill.mkdir(parents=True)
    (spill / "mine.md").write_text("a note the user keeps here\n")
    (root / "elsewhere.txt").write_text("not an output\n")
    (spill / "linked.txt").symlink_to(root / "elsewhere.txt")
    shown = []
    for number in range(5):
        (root / f"big{number}").mkdir()
        for row in range(20):
            (root / f"big{number}" / f"row{row}.txt").write_text("")
        outcome = catalog.call("search_files", {"path": f"big{number}", "pattern": "*.txt"}, ctx)
        shown.append(outcome.text.split("saved as ")[1].split(":")[0])
        os.utime(root / shown[-1], ns=(number * 10**9, number * 10**9))  # distinct ages, oldest first
    kept = sorted(path.name for path in spill.iterdir() if path.suffix == ".txt" and not path.is_symlink())
    assert kept == sorted(Path(name).name for name in shown[-3:])
    assert (spill / "mine.md").exists() and (spill / "linked.txt").is_symlink()
    assert (root / "elsewhere.txt").read_text() == "not an output\n"


def test_path_locks_serialize_one_file_and_are_dropped_after(root: Path, catalog: Catalog) -> None:
    ctx = ToolContext(Workspace.create([root]))
    (root / "counter.txt").write_text("0\n")

    def bump() -> None:
        for _ in range(20):
            with catalog.locks.hold([str(root / "counter.txt")]):
                value = int((root / "counter.txt").read_text())
                (root / "counter.txt").write_text(f"{value + 1}\n")

    workers = [threading.Thread(target=bump) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert (root / "counter.txt").read_text() == "80\n"
    for number in range(50):
        assert not catalog.call("write_file", {"path": f"f{number}.txt", "content": "x"}, ctx).is_error
    assert len(catalog.locks) == 0
