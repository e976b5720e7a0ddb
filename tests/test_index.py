"""The symbol index on small fixture projects: what it finds, and how it keeps up with edits."""

from __future__ import annotations

import functools
import os
import sqlite3
import textwrap
import threading
from pathlib import Path

import pytest

from codeward.apps.cli.index import run_index_cli
from codeward.engines.code_intel import symbol_index
from codeward.engines.code_intel.symbol_index import MAX_FILE_BYTES, SymbolIndex, default_index_path
from codeward.kernel.workspace import Workspace

BASE_PY = '''\
"""The base module."""


class Base:
    """A base class."""

    def run(self):
        return helper()


def helper():
    return 1
'''

IMPL_PY = '''\
from pkg.base import Base, helper


class Child(Base):
    @property
    def value(self):
        return 2

    def run(self):
        return helper() + super().run()


class GrandChild(Child):
    pass


# helper is mentioned in a comment here
TEXT = "helper in a string"
'''


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def project(root: Path) -> Path:
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/base.py", BASE_PY)
    write(root, "pkg/impl.py", IMPL_PY)
    write(root, "lib/util.c", "#include \"util.h\"\nint add(int a, int b) { return a + b; }\n"
                              "struct point { int x; int y; };\n")
    write(root, "lib/util.h", "#define MAXV 10\nint add(int a, int b);\n")
    write(root, "web/app.ts", "class Widget extends Component {\n  render(): void { draw(); }\n}\n"
                              "function draw(): void {}\n")
    write(root, ".gitignore", "ignored/\n")
    write(root, "ignored/skip.py", "def hidden():\n    pass\n")
    return root


def open_index(workspace: Workspace) -> SymbolIndex:
    opened = SymbolIndex.open(workspace)
    assert opened.ok, opened.error_text()
    return opened.data


def names(index: SymbolIndex, query: str, **kwargs: object) -> list[tuple[str, str, str, int, int]]:
    symbols, _total = index.find(query, **kwargs)  # type: ignore[arg-type]
    return [(s.qualname, s.kind, s.path, s.line, s.end_line) for s in symbols]


def test_definitions_across_languages(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        stats = index.refresh()
        assert stats.parsed == stats.scanned == 6  # .gitignored file left out
        assert default_index_path(project).is_file()
        assert names(index, "Base") == [("Base", "class", "pkg/base.py", 4, 8)]
        assert names(index, "Child.run") == [("Child.run", "method", "pkg/impl.py", 9, 10)]
        # A decorator belongs to its definition's line range.
        assert names(index, "value") == [("Child.value", "method", "pkg/impl.py", 5, 7)]
        assert names(index, "helper") == [("helper", "function", "pkg/base.py", 11, 12)]
        assert names(index, "TEXT") == [("TEXT", "variable", "pkg/impl.py", 18, 18)]
        # The C definition sorts before the header's prototype.
        assert names(index, "add") == [("add", "function", "lib/util.c", 2, 2),
                                       ("add", "prototype", "lib/util.h", 2, 2)]
        assert names(index, "MAXV") == [("MAXV", "macro", "lib/util.h", 1, 1)]
        assert names(index, "point") == [("point", "struct", "lib/util.c", 3, 3)]
        assert names(index, "Widget.render") == [("Widget.render", "method", "web/app.ts", 2, 2)]
        assert names(index, "hidden") == []
        widget = index.find("Widget")[0][0]
        assert widget.bases == ("Component",) and widget.language == "typescript"
        assert index.find("Child")[0][0].bases == ("Base",)


def test_patterns_kinds_and_scopes(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        index.refresh()
        assert {q for q, *_ in names(index, "*Child")} == {"Child", "GrandChild"}
        assert {q for q, *_ in names(index, "Child.*")} == {"Child.value", "Child.run"}
        assert {q for q, *_ in names(index, r"^(Base|Child)\.run$", mode="regex")} == {"Base.run", "Child.run"}
        assert {q for q, *_ in names(index, "run", kinds=["method"])} == {"Base.run", "Child.run"}
        assert names(index, "add", under="lib/util.h") == [("add", "prototype", "lib/util.h", 2, 2)]
        assert names(index, "add", language="c") == [("add", "function", "lib/util.c", 2, 2)]
        assert index.closest_names("Chlid")[:1] == ["Child"]
        assert index.closest_names("Chlid.run")[0] == "Child.run"


def test_usages_skip_comments_and_strings(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        index.refresh()
        assert dict(index.files_using("helper")) == {"pkg/base.py": 2, "pkg/impl.py": 2}
        usages, total = index.usages("helper")
        found = [(u.path, u.line, u.column, u.definition) for u in usages]
        assert found == [("pkg/base.py", 8, 16, False), ("pkg/base.py", 11, 5, True),
                         ("pkg/impl.py", 1, 28, False), ("pkg/impl.py", 10, 16, False)]
        assert total == 4
        assert usages[3].text == "        return helper() + super().run()"


def test_subclasses_are_transitive(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        index.refresh()
        found = [(s.qualname, base, depth) for s, base, depth in index.subclasses("pkg.base.Base")]
        assert found == [("Child", "Base", 1), ("GrandChild", "Child", 2)]
        assert index.subclasses("Base", transitive=False)[0][0].qualname == "Child"
        assert index.subclasses("Nothing") == []


def test_incremental_edit_delete_rename(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        index.refresh()
        impl = project / "pkg" / "impl.py"
        impl.write_text(IMPL_PY.replace("class GrandChild(Child):", "class Renamed(Child):"), encoding="utf-8")
        stats = index.refresh()
        assert (stats.parsed, stats.removed) == (1, 0)
        assert names(index, "GrandChild") == [] and names(index, "Renamed")[0][2] == "pkg/impl.py"
        assert dict(index.files_using("Renamed")) == {"pkg/impl.py": 1}

        (project / "web" / "app.ts").unlink()
        stats = index.refresh()
        assert (stats.parsed, stats.removed) == (0, 1)
        assert names(index, "Widget") == [] and index.files_using("draw") == []

        (project / "lib" / "util.c").rename(project / "lib" / "math.c")
        stats = index.refresh()
        assert (stats.parsed, stats.removed) == (1, 1)
        assert names(index, "add", language="c") == [("add", "function", "lib/math.c", 2, 2)]
        assert index.counts()["files"] == 5


def test_unchanged_tree_parses_nothing(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        assert index.refresh().parsed == 6
        again = index.refresh()
        assert (again.scanned, again.parsed, again.removed, again.changed) == (6, 0, 0, False)
        # Same size, new mtime: parsed again (the index trusts (mtime, size), not contents).
        base = project / "pkg" / "base.py"
        info = base.stat()
        os.utime(base, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
        assert index.refresh().parsed == 1


def test_index_survives_reopen_and_schema_change(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        index.refresh()
    with open_index(workspace) as index:
        assert index.refresh().parsed == 0 and names(index, "Base")
    with sqlite3.connect(default_index_path(project)) as db:
        db.execute("PRAGMA user_version = 999")
    with open_index(workspace) as index:
        assert index.counts()["files"] == 0  # an index from another version is rebuilt
        assert index.refresh().parsed == 6


def test_concurrent_refreshes_do_not_duplicate(project: Path, workspace: Workspace) -> None:
    errors: list[BaseException] = []

    def refresh() -> None:
        try:
            with open_index(workspace) as index:
                index.refresh()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=refresh) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with open_index(workspace) as index:
        assert index.counts()["files"] == 6
        assert len(names(index, "Base")) == 1


def test_gate_symlinks_big_and_binary_files(project: Path, workspace: Workspace, tmp_path: Path) -> None:
    outside = write(tmp_path, "outside/secret.py", "def outside_secret():\n    pass\n")
    (project / "pkg" / "link.py").symlink_to(outside)
    write(project, "pkg/big.py", "x = 1\n" * (MAX_FILE_BYTES // 6 + 1))
    (project / "pkg" / "blob.py").write_bytes(b"\x00\x01binary\x00" * 10)
    with open_index(workspace) as index:
        stats = index.refresh()
        assert names(index, "outside_secret") == []
        assert stats.skipped == 1
        assert [f.split(":")[0] for f in stats.failed] == ["pkg/blob.py"]
        assert names(index, "x") == []


def test_unicode_identifiers(root: Path, workspace: Workspace) -> None:
    write(root, "m.py", "def größe(x):\n    return x\n\n\nwert = größe(2)  # größe\n")
    with open_index(workspace) as index:
        index.refresh()
        assert names(index, "größe") == [("größe", "function", "m.py", 1, 2)]
        usages, _total = index.usages("größe")
        assert [(u.line, u.column, u.definition) for u in usages] == [(1, 5, True), (5, 8, False)]


def test_pool_build_matches_in_process_build(root: Path, tmp_path: Path) -> None:
    for number in range(80):
        write(root, f"mod{number:02d}.py", f"class C{number}(Base):\n    def m{number}(self):\n"
                                           f"        return f{(number + 1) % 80}()\n\n\ndef f{number}():\n"
                                           "    return 0\n")
    workspace = Workspace.create([root])
    pooled = SymbolIndex.open(workspace, db_path=tmp_path / "pool.sqlite").data
    serial = SymbolIndex.open(workspace, db_path=tmp_path / "serial.sqlite").data
    with pooled, serial:
        assert pooled.refresh(workers=2).parsed == 80
        assert serial.refresh(workers=1).parsed == 80
        for query in ("C7", "C7.m7", "f42", "*"):
            assert names(pooled, query, limit=1000) == names(serial, query, limit=1000)
        assert pooled.files_using("f42") == serial.files_using("f42") == [("mod41.py", 1), ("mod42.py", 1)]


@pytest.mark.parametrize("fault", ["raises_eof", "unpicklable_result", "result_fails_to_load", "worker_dies"])
def test_a_batch_the_pool_cannot_return_is_tagged_in_process(
    fault: str, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tests import index_faults

    for number in range(80):
        write(root, f"mod{number:02d}.py", f"class C{number}(Base):\n    def m{number}(self):\n"
                                           f"        return f{(number + 1) % 80}()\n\n\ndef f{number}():\n"
                                           "    return 0\n")
    workspace = Workspace.create([root])
    monkeypatch.setattr(symbol_index, "_tag_in_pool",
                        functools.partial(symbol_index._tag_in_pool, work=getattr(index_faults, fault)))
    pooled = SymbolIndex.open(workspace, db_path=tmp_path / "pool.sqlite").data
    serial = SymbolIndex.open(workspace, db_path=tmp_path / "serial.sqlite").data
    with pooled, serial, caplog.at_level("WARNING", logger="codeward.engines.code_intel.symbol_index"):
        assert pooled.refresh(workers=2).parsed == 80
        assert serial.refresh(workers=1).parsed == 80
        assert pooled.counts() == serial.counts()
        for query in ("C7", "C7.m7", "f7", "f42", "*"):
            assert names(pooled, query, limit=1000) == names(serial, query, limit=1000)
        assert pooled.files_using("f7") == [("mod06.py", 1), ("mod07.py", 1)]
        assert pooled.usages("f8")[0] == serial.usages("f8")[0]
    assert "in this process" in caplog.text


def test_cancelled_refresh_keeps_a_consistent_index(project: Path, workspace: Workspace) -> None:
    cancelled = threading.Event()
    cancelled.set()
    with open_index(workspace) as index:
        stats = index.refresh(cancelled=cancelled)
        assert stats.cancelled and stats.parsed == 0
        assert index.refresh().parsed == 6


def test_run_index_cli(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_index_cli(str(project), rebuild=False) == 0
    err = capsys.readouterr().err
    assert "6 source files, 6 (re)indexed" in err
    assert default_index_path(project).is_file()
    assert run_index_cli(str(project), rebuild=True) == 0
    assert "6 (re)indexed" in capsys.readouterr().err
    assert run_index_cli(str(project / "pkg" / "base.py"), rebuild=False) == 2
    assert "not a directory" in capsys.readouterr().err


def test_a_damaged_index_is_rebuilt(project: Path, workspace: Workspace) -> None:
    db_path = default_index_path(project)
    db_path.parent.mkdir()
    db_path.write_bytes(b"this is not an SQLite database" * 100)
    opened = SymbolIndex.open(workspace)
    assert opened.ok and "unreadable" in opened.notes[0]
    with opened.data as index:
        assert index.refresh().parsed == 6 and names(index, "Base")


def test_index_directory_symlinked_outside_is_refused(project: Path, workspace: Workspace, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".codeward").symlink_to(elsewhere)
    opened = SymbolIndex.open(workspace)
    assert not opened.ok and opened.errors[0].kind.value == "permission"
    assert list(elsewhere.iterdir()) == []


def test_readers_do_not_wait_for_a_refresh(project: Path, workspace: Workspace) -> None:
    with open_index(workspace) as index:
        index.refresh()
    (project / "pkg" / "extra.py").write_text("def extra():\n    pass\n", encoding="utf-8")
    inside = threading.Event()
    release = threading.Event()

    def hold(done: int, total: int | None, message: str) -> None:
        if message.startswith("indexing"):
            inside.set()
            release.wait(10)

    def refresh() -> None:
        with open_index(workspace) as writer:
            writer.refresh(progress=hold)

    worker = threading.Thread(target=refresh)
    worker.start()
    try:
        assert inside.wait(10)
        # The writer holds the refresh lock and an open write transaction: a reader opens and reads.
        with open_index(workspace) as reader:
            assert names(reader, "Base") == [("Base", "class", "pkg/base.py", 4, 8)]
            assert names(reader, "extra") == []
    finally:
        release.set()
        worker.join()
    with open_index(workspace) as reader:
        assert names(reader, "extra") == [("extra", "function", "pkg/extra.py", 1, 2)]


def test_a_refresh_where_most_files_changed(tmp_path: Path) -> None:
    """Most files rewritten at once (a branch switch): old rows go, new ones come, lookups still use indexes."""
    root = tmp_path / "tree"
    for number in range(12):
        write(root, f"m{number}.py", f"def old_{number}():\n    return shared()\n\n\ndef shared():\n    return 0\n")
    workspace = Workspace.create([root])
    with SymbolIndex.open(workspace, db_path=tmp_path / "index.sqlite").data as index:
        index.refresh()
        for number in range(9):
            path = write(root, f"m{number}.py", f"def new_{number}():\n    return other()\n")
            os.utime(path, ns=(2_000_000_000, 2_000_000_000))
        stats = index.refresh()
        assert (stats.parsed, stats.removed) == (9, 0)
        assert index.find("old_3") == ([], 0)
        assert [s.path for s in index.find("new_3")[0]] == ["m3.py"]
        assert [path for path, _count in index.files_using("shared")] == ["m10.py", "m11.py", "m9.py"]
        assert len(index.files_using("other")) == 9
        plans = index.connection.execute("EXPLAIN QUERY PLAN SELECT * FROM symbols WHERE name = 'x'").fetchall()
        assert any("symbols_name" in str(row) for row in plans)


def test_usages_from_stored_offsets_equal_a_fresh_scan(tmp_path: Path) -> None:
    """Unchanged files answer from the offsets and line checkpoints the index stored; a file
    touched since is scanned afresh. Both must give the same usages, byte for byte."""
    root = tmp_path / "tree"
    body = "".join(f"def f{n}(value):\n    return value + {n}  # value in a comment\n" for n in range(400))
    write(root, "big.py", body + "x = value = f'{value!r} and \"value\"'\n")  # crosses many 4 KiB checkpoints
    (root / "crlf.py").write_bytes(b"value = 1\r\nprint(value, value)\r\n# value\r\n")
    write(root, "uni.py", "ünï = 'é'; value = ünï\nvalue\n")
    workspace = Workspace.create([root])
    with SymbolIndex.open(workspace, db_path=tmp_path / "index.sqlite").data as index:
        index.refresh()
        stored = index.usages("value", limit=100_000)
        assert stored[1] == 400 * 2 + 2 + 3 + 2
        seen = {(u.path, u.line, u.column, u.text) for u in stored[0]}
        assert {("crlf.py", 2, 7, "print(value, value)"), ("crlf.py", 2, 14, "print(value, value)"),
                ("uni.py", 1, 12, "ünï = 'é'; value = ünï")} <= seen
        last = [u for u in stored[0] if u.path == "big.py"][-1]
        assert (last.line, last.text) == (801, "x = value = f'{value!r} and \"value\"'")
        for name in ("big.py", "crlf.py", "uni.py"):
            os.utime(root / name, ns=(3_000_000_000, 3_000_000_000))  # changed since indexed: scanned afresh
        assert index.usages("value", limit=100_000) == stored


def test_git_does_not_pick_up_the_index(tmp_path: Path) -> None:
    import subprocess

    root = tmp_path / "repo"
    write(root, "m.py", "def f():\n    return 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with SymbolIndex.open(Workspace.create([root])).data as index:
        index.refresh()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, check=True,
                            capture_output=True, text=True).stdout.split("\n")
    assert sorted(line for line in status if line) == ["?? .codeward/.gitignore", "?? m.py"]
    # A .gitignore the user wrote (or a link planted there) is left as it is.
    (root / ".codeward" / ".gitignore").write_text("# mine\n")
    outside = tmp_path / "outside.txt"
    with SymbolIndex.open(Workspace.create([root])).data as index:
        index.refresh()
    assert (root / ".codeward" / ".gitignore").read_text() == "# mine\n"
    (root / ".codeward" / ".gitignore").unlink()
    (root / ".codeward" / ".gitignore").symlink_to(outside)
    with SymbolIndex.open(Workspace.create([root])).data as index:
        index.refresh()
    assert not outside.exists()
