"""search_text through the catalog: ripgrep's matching behind the gate, stable pages, clear refusals."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeward.engines.files import ripgrep
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Workspace
from codeward.tools import search
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]

pytestmark = pytest.mark.skipif(ripgrep.find_binary() is None, reason="ripgrep is not installed")


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def _data(outcome: ToolOutcome) -> dict[str, Any]:
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    return outcome.structured


def _hits(outcome: ToolOutcome) -> list[tuple[str, int]]:
    return [(m["path"], m["line"]) for m in _data(outcome)["matches"]]


def test_regex_literal_case_and_word(root: Path, call: Call) -> None:
    _write(root, {"a.py": "def run():\n    return runner.Run()\n", "b.txt": "a+b\nab\n"})
    assert _hits(call("search_text", pattern=r"\brun\b", case="sensitive")) == [("a.py", 1)]
    assert _hits(call("search_text", pattern="Run")) == [("a.py", 2)]  # smart: a capital makes it exact
    assert _hits(call("search_text", pattern="run")) == [("a.py", 1), ("a.py", 2)]
    assert _hits(call("search_text", pattern="run", word=True, case="sensitive")) == [("a.py", 1)]
    assert _hits(call("search_text", pattern="RUN", case="insensitive")) == [("a.py", 1), ("a.py", 2)]
    assert _hits(call("search_text", pattern="a+b", literal=True)) == [("b.txt", 1)]
    assert _hits(call("search_text", pattern="a+b")) == [("b.txt", 2)]


def test_matches_carry_columns_and_context(root: Path, call: Call) -> None:
    _write(root, {"m.py": "one\ntwo\nnéedle = 3\nfour\nfive\nsix\nneedle\n"})
    data = _data(call("search_text", pattern="= 3", context=1))
    match = data["matches"][0]
    assert (match["line"], match["column"]) == (3, 8)  # characters, not bytes
    assert match["before"] == ["two"] and match["after"] == ["four"]
    outcome = call("search_text", pattern="needle|néedle", context=1)
    assert outcome.text.splitlines() == [
        "2 matching lines in 1 file for 'needle|néedle' in . (showing 1-2)",
        "m.py", "  2- two", "  3: néedle = 3", "  4- four", "  --", "  6- six", "  7: needle"]


def test_globs_and_file_types_filter(root: Path, call: Call) -> None:
    _write(root, {"src/a.py": "hit\n", "src/b.js": "hit\n", "tests/t.py": "hit\n", "doc.md": "hit\n"})
    assert [p for p, _ in _hits(call("search_text", pattern="hit", glob=["*.py"]))] == ["src/a.py", "tests/t.py"]
    assert [p for p, _ in _hits(call("search_text", pattern="hit", glob=["*.py", "!tests/**"]))] == ["src/a.py"]
    assert [p for p, _ in _hits(call("search_text", pattern="hit", file_type="js"))] == ["src/b.js"]
    assert [p for p, _ in _hits(call("search_text", pattern="hit", path="src"))] == ["src/a.py", "src/b.js"]


def test_pages_are_stable_and_complete(root: Path, call: Call) -> None:
    files = {f"d{d}/f{f}.txt": "".join(f"hit {d}.{f}.{n}\n" for n in range(7)) for d in range(4) for f in range(6)}
    _write(root, files)
    first = _data(call("search_text", pattern="hit", limit=50))
    assert (first["total"], first["total_files"], first["complete"]) == (168, 24, True)
    seen: list[tuple[str, int]] = []
    offset: int | None = 0
    while offset is not None:
        page = _data(call("search_text", pattern="hit", limit=50, offset=offset))
        seen += [(m["path"], m["line"]) for m in page["matches"]]
        offset = page["next_offset"]
    assert seen == sorted(seen, key=lambda hit: (hit[0].split("/"), hit[1])) and len(set(seen)) == 168
    assert _data(call("search_text", pattern="hit", limit=10, offset=500))["matches"] == []


def test_files_and_count_modes(root: Path, call: Call) -> None:
    _write(root, {"a.txt": "x x x\nx\n", "b/c.txt": "x\n", "d.txt": "none\n"})
    files = _data(call("search_text", pattern="x", mode="files"))
    assert [f["path"] for f in files["files"]] == ["a.txt", "b/c.txt"] and files["total"] == 2
    counted = _data(call("search_text", pattern="x", mode="count"))
    assert [(f["path"], f["matches"]) for f in counted["files"]] == [("a.txt", 4), ("b/c.txt", 1)]
    assert (counted["total"], counted["total_files"]) == (5, 2)
    page = _data(call("search_text", pattern="x", mode="files", limit=1))
    assert page["next_offset"] == 1 and len(page["files"]) == 1


def test_gitignore_is_honoured_from_the_root_down_to_a_searched_subfolder(root: Path, call: Call) -> None:
    _write(root, {".gitignore": "build/\n/top_only.txt\n", "top_only.txt": "hit\n", "build/x.txt": "hit\n",
                  "pkg/.gitignore": "/sub/gen/\n*.log\n", "pkg/sub/gen/g.txt": "hit\n", "pkg/sub/ok.txt": "hit\n",
                  "pkg/sub/debug.log": "hit\n", "pkg/sub/build/y.txt": "hit\n", "pkg/sub/more/top_only.txt": "hit\n"})
    everywhere = [p for p, _ in _hits(call("search_text", pattern="hit"))]
    assert everywhere == ["pkg/sub/more/top_only.txt", "pkg/sub/ok.txt"]
    below = [p for p, _ in _hits(call("search_text", pattern="hit", path="pkg/sub"))]
    assert below == everywhere  # the parents' rules apply to a subfolder search, anchored where they belong
    with_ignored = {p for p, _ in _hits(call("search_text", pattern="hit", include_ignored=True))}
    assert {"build/x.txt", "pkg/sub/gen/g.txt", "pkg/sub/debug.log"} <= with_ignored


def test_ignore_files_above_the_workspace_are_not_read(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    inner = outer / "project"
    _write(outer, {".gitignore": "secret_plan.txt\n*.py\n", "project/secret_plan.txt": "hit\n",
                   "project/a.py": "hit\n"})
    ctx = ToolContext(Workspace.create([inner]))
    from codeward.tools import default_catalog
    outcome = default_catalog().call("search_text", {"pattern": "hit"}, ctx)
    assert sorted(p for p, _ in _hits(outcome)) == ["a.py", "secret_plan.txt"]


def test_hidden_files_are_searched_but_vcs_and_codeward_state_never(root: Path, call: Call) -> None:
    _write(root, {".github/ci.yml": "hit\n", ".git/config": "hit\n", ".codeward/outputs/x.txt": "hit\n",
                  "sub/.git/HEAD": "hit\n", ".hg/store": "hit\n"})
    assert [p for p, _ in _hits(call("search_text", pattern="hit"))] == [".github/ci.yml"]
    assert _hits(call("search_text", pattern="hit", hidden=False)) == []
    assert _hits(call("search_text", pattern="hit", glob=[".git/**"], include_ignored=True)) == []


@pytest.mark.parametrize("name", [".env", "credentials.toml", "config.toml", "chat_history.toml", "server.pem",
                                  "deploy/id_rsa", "nested/.ENV", "app/.env.local"])
def test_blacklisted_files_never_appear(root: Path, call: Call, name: str) -> None:
    _write(root, {name: "TOKEN=hunter2\n", "ok.txt": "TOKEN=public\n"})
    for extra in ({}, {"glob": [Path(name).name]}, {"include_ignored": True, "hidden": True},
                  {"mode": "files"}, {"mode": "count"}):
        outcome = call("search_text", pattern="TOKEN", **extra)
        assert "hunter2" not in outcome.text and Path(name).name not in outcome.text.lower().replace("ok.txt", "")
    refused = call("search_text", pattern="TOKEN", path=name)
    assert refused.is_error and refused.errors[0].kind is ErrorKind.PERMISSION


def test_a_private_key_under_any_name_never_appears_in_any_mode(root: Path, call: Call) -> None:
    """Its lines, its name and its match counts (a count per pattern would spell the key out) all stay out."""
    _write(root, {"deploy/ci-bot": "-----BEGIN OPENSSH PRIVATE KEY-----\nKEYBODYb3Blbn\n"
                                   "-----END OPENSSH PRIVATE KEY-----\n", "ok.txt": "a PRIVATE note\n"})
    for extra in ({}, {"mode": "files"}, {"mode": "count"}, {"context": 3}, {"hidden": True, "include_ignored": True}):
        outcome = call("search_text", pattern="KEYBODY|PRIVATE", **extra)
        assert "ci-bot" not in outcome.text and "KEYBODYb3" not in outcome.text, (extra, outcome.text)
        assert "ok.txt" in outcome.text and "1 " in outcome.text, outcome.text
    for path in ("deploy", "deploy/ci-bot"):
        outcome = call("search_text", pattern="KEYBODY|PRIVATE", path=path)
        assert not outcome.is_error and outcome.text.startswith("no matches"), outcome.text


def test_symlinks_out_never_appear_and_are_refused_as_paths(root: Path, tmp_path: Path, call: Call) -> None:
    outside = tmp_path / "outside"
    _write(outside, {"secret.txt": "hit outside\n", "dir/deep.txt": "hit outside\n"})
    _write(root, {"in.txt": "hit inside\n"})
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "linkdir").symlink_to(outside / "dir", target_is_directory=True)
    (root / "alias.txt").symlink_to(root / "in.txt")
    for mode in ("matches", "files", "count"):
        outcome = call("search_text", pattern="hit", mode=mode, include_ignored=True)
        assert "outside" not in outcome.text and "link" not in outcome.text and "in.txt" in outcome.text
    for target in ("link.txt", "linkdir", "../outside"):
        refused = call("search_text", pattern="hit", path=target)
        assert refused.is_error and refused.errors[0].kind is ErrorKind.PERMISSION, target
        assert "outside the workspace" in refused.text


def test_bad_input_gets_clear_errors_and_changes_nothing(root: Path, call: Call) -> None:
    _write(root, {"a.txt": "text\n", "blob.bin": b"\x7fELF\x00\x01\x02needle\x00" * 50,
                  "late.bin": b"needle\n" + b"x\n" * 6000 + b"needle\x00\n"})
    os.mkfifo(root / "pipe")
    before = snapshot(root)
    cases: list[tuple[dict[str, Any], ErrorKind, str]] = [
        ({"pattern": "("}, ErrorKind.INVALID_INPUT, "not a valid regular expression"),
        ({"pattern": "a(?=b)"}, ErrorKind.INVALID_INPUT, "look-around"),
        ({"pattern": ""}, ErrorKind.INVALID_INPUT, "pattern is empty"),
        ({"pattern": "x", "path": "missing"}, ErrorKind.NOT_FOUND, "does not exist"),
        ({"pattern": "x", "path": "blob.bin"}, ErrorKind.INVALID_INPUT, "binary file"),
        ({"pattern": "needle", "path": "late.bin"}, ErrorKind.INVALID_INPUT, "binary file"),
        ({"pattern": "x", "path": "pipe"}, ErrorKind.INVALID_INPUT, "not a regular file"),
        ({"pattern": "x", "file_type": "nosuchtype"}, ErrorKind.INVALID_INPUT, "not a type ripgrep knows"),
        ({"pattern": "x", "file_type": "py;rm"}, ErrorKind.INVALID_INPUT, "not a type name"),
        ({"pattern": "x", "glob": ["src/{a"]}, ErrorKind.INVALID_INPUT, "glob"),
        ({"pattern": "x", "glob": ["!"]}, ErrorKind.INVALID_INPUT, "glob"),
        ({"pattern": "x", "path": "/etc"}, ErrorKind.PERMISSION, "outside the workspace"),
    ]
    for arguments, kind, words in cases:
        outcome = call("search_text", **arguments)
        assert outcome.is_error and outcome.errors[0].kind is kind, (arguments, outcome.text)
        assert words in outcome.text and outcome.errors[0].hint, (arguments, outcome.text)
    assert snapshot(root) == before


def test_option_like_patterns_and_names_are_data(root: Path, call: Call) -> None:
    _write(root, {"-e": "--pre=touch PWNED\n", "--files": "--files\n"})
    outcome = call("search_text", pattern="--pre=touch PWNED", literal=True)
    assert _hits(outcome) == [("-e", 1)]
    assert _hits(call("search_text", pattern="--files", path="--files", literal=True)) == [("--files", 1)]
    assert not (root / "PWNED").exists()


def test_binary_files_are_skipped_in_folder_searches(root: Path, call: Call) -> None:
    _write(root, {"blob.bin": b"needle\x00\x01" * 10, "a.txt": "needle\n"})
    assert _hits(call("search_text", pattern="needle")) == [("a.txt", 1)]


def test_huge_results_are_capped_and_still_page_in_order(root: Path, call: Call, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(search, "SCAN_CAP", 300)
    _write(root, {f"f{n:02d}.txt": "x\n" * 40 for n in range(20)})
    first = _data(call("search_text", pattern="x", limit=100))
    assert first["complete"] is False and first["total"] == 300 and "more than 300" in call(
        "search_text", pattern="x", limit=1).text
    assert [(m["path"], m["line"]) for m in first["matches"]][:2] == [("f00.txt", 1), ("f00.txt", 2)]
    later = _data(call("search_text", pattern="x", limit=100, offset=700))
    assert (later["matches"][0]["path"], later["matches"][0]["line"]) == ("f17.txt", 21)
    assert later["next_offset"] == 800
    counted = _data(call("search_text", pattern="x", mode="count"))
    assert counted["total"] == 800 and counted["complete"] is True


def test_a_capped_search_says_more_than_only_of_what_it_stopped_counting(root: Path, call: Call,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "SCAN_CAP", 300)
    monkeypatch.setattr(search, "FILES_COUNTED_PAST_THE_CAP", 20)
    _write(root, {f"f{n:02d}.txt": "x\n" * 40 for n in range(20)})  # exactly 20 files: counted, not "more than"
    exact = _data(call("search_text", pattern="x"))
    assert (exact["total_files"], exact["files_complete"], exact["complete"]) == (20, True, False)
    assert call("search_text", pattern="x").text.startswith("more than 300 matching lines in 20 files for 'x'")
    _write(root, {"f20.txt": "x\n"})  # one more than the files counted past the cap
    floor = _data(call("search_text", pattern="x"))
    assert (floor["total_files"], floor["files_complete"]) == (20, False)
    assert call("search_text", pattern="x").text.startswith("more than 300 matching lines in more than 20 files")


def test_long_lines_are_cut_around_the_match(root: Path, call: Call) -> None:
    _write(root, {"min.js": "a" * 100_000 + "NEEDLE" + "b" * 100_000 + "\n"})
    outcome = call("search_text", pattern="NEEDLE")
    match = _data(outcome)["matches"][0]
    assert "NEEDLE" in match["text"] and len(match["text"]) < 500
    assert match["text"].startswith("…") and match["text"].endswith("…")
    assert len(outcome.text) < 1000


def test_undecodable_bytes_and_odd_names_come_back_displayable(root: Path, call: Call) -> None:
    _write(root, {"latin.txt": b"caf\xe9 needle\n", "utf16.txt": "needle ü\n".encode("utf-16")})
    (root / "new\nline.txt").write_text("needle\n")
    data = _data(call("search_text", pattern="needle"))
    by_path = {m["path"]: m["text"] for m in data["matches"]}
    assert by_path["latin.txt"] == "caf\ufffd needle"
    assert by_path["utf16.txt"] == "needle ü"
    assert "new\nline.txt" in by_path


def test_a_cancelled_search_stops(root: Path, catalog: Catalog, workspace: Workspace) -> None:
    _write(root, {"a.txt": "x\n"})
    cancelled = threading.Event()
    cancelled.set()
    outcome = catalog.call("search_text", {"pattern": "x"}, ToolContext(workspace, cancelled=cancelled))
    assert outcome.is_error and "cancelled" in outcome.text


def test_parent_ignore_patterns_are_reanchored() -> None:
    text = ripgrep.reanchored_ignores([("", "/top\nany\n"), ("a/b", "# c\n/x\ny/z\n!/keep\n*.o\nd/\n**/e/f\n")])
    assert text.splitlines() == ["/top", "any", "# c", "/a/b/x", "/a/b/y/z", "!/a/b/keep", "*.o", "d/", "**/e/f"]
