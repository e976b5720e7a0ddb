"""undo against the tree itself: after any mix of file and folder operations, going back to a checkpoint
leaves exactly the tree (paths, kinds, modes, bytes, empty folders) that was there before it.

Each generated case starts from a copy of a real project's sources, runs a few operations through the
official client (writes into new folders, edits, slices, folders made, moves, deletions, patches), and
compares a hash of the whole tree with the one taken before each operation.
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.differential.support import BOUNDED, World, mcp_session, tree_digest, unpack

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "notes", "lib", "x"])
CONTENT = st.lists(st.sampled_from(["a = 1", "def f():", "    return 2", "", "# é"]), max_size=4).map(
    lambda lines: "".join(line + "\n" for line in lines))

pytestmark = pytest.mark.xdist_group("differential-undo")
"""One worker runs the module: its tests share one server (made once, not once per worker)."""


class Undos(World):
    @property
    def seed(self) -> Path:
        """What each case starts from: a real project's sources, a nested folder, an empty one."""
        return self.root.parent / "seed"

    def newest_checkpoint(self) -> int:
        listed = self.session.data("list_checkpoints")["checkpoints"]
        return int(listed[0]["id"]) if listed else 0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Undos]:
    base = tmp_path_factory.mktemp("undo")
    root = base / "workspace"
    root.mkdir()
    seed = base / "seed"
    tomli = unpack("tomli", base)
    shutil.copytree(tomli / "src" / "tomli", seed / "tomli")
    (seed / "docs" / "guide").mkdir(parents=True)
    (seed / "docs" / "guide" / "intro.md").write_text("# Intro\n\nRead me.\n")
    (seed / "empty").mkdir()
    os.chmod(seed / "tomli" / "_re.py", 0o755)
    with mcp_session(root) as session:
        yield Undos(root, session)


def entries(top: Path) -> tuple[list[str], list[str]]:
    """Files and folders under ``top``, relative."""
    files, folders = [], []
    for folder, dirs, names in os.walk(top):
        rel = Path(folder).relative_to(top)
        folders += [(rel / name).as_posix() for name in dirs]
        files += [(rel / name).as_posix() for name in names]
    return sorted(files), sorted(folders)


@st.composite
def operation(draw: st.DrawFn, top: Path, case: str) -> tuple[str, dict[str, Any]]:
    files, folders = entries(top)
    new_path = "/".join(draw(st.lists(WORDS, min_size=1, max_size=3)))
    kinds = ["write_file", "make_directory", "apply_patch"]
    if files:
        kinds += ["edit_file", "set_file_slice", "write_file", "move_path", "delete_path"]
    if folders:
        kinds += ["move_path", "delete_path"]
    kind = draw(st.sampled_from(kinds))
    if kind == "write_file":
        overwrite = draw(st.booleans())
        if files and overwrite:
            return kind, {"path": f"{case}/{draw(st.sampled_from(files))}", "content": draw(CONTENT),
                          "overwrite": True}
        return kind, {"path": f"{case}/{new_path}.txt", "content": draw(CONTENT)}
    if kind == "make_directory":
        return kind, {"path": f"{case}/{new_path}"}
    if kind == "edit_file":
        path = draw(st.sampled_from(files))
        body = (top / path).read_text(errors="replace")
        start = draw(st.integers(0, max(len(body) - 1, 0)))
        return kind, {"path": f"{case}/{path}", "old_string": body[start:start + 6] or "zz",
                      "new_string": draw(CONTENT) or "y", "replace_all": True}
    if kind == "set_file_slice":
        path = draw(st.sampled_from(files))
        count = len((top / path).read_text(errors="replace").split("\n"))
        start = draw(st.integers(1, count))
        return kind, {"path": f"{case}/{path}", "start_line": start,
                      "end_line": draw(st.integers(start - 1, count - 1)), "new_content": draw(CONTENT)}
    if kind == "move_path":
        source = draw(st.sampled_from(files + folders))
        return kind, {"source": f"{case}/{source}", "destination": f"{case}/{new_path}"}
    if kind == "delete_path":
        return kind, {"path": f"{case}/{draw(st.sampled_from(files + folders))}", "recursive": True}
    return kind, {"patch": _patch(top, case, draw(st.sampled_from([None, *files])), f"{new_path}/made.txt",
                                  draw(CONTENT) or "made\n")}


def _patch(top: Path, case: str, deleted: str | None, created: str, content: str) -> str:
    """A patch creating ``created`` (in new folders) and, when given, deleting ``deleted``."""
    parts = [f"--- /dev/null\n+++ b/{case}/{created}\n@@ -0,0 +1,{content.count(chr(10))} @@\n"
             + "".join(f"+{line}\n" for line in content.splitlines())]
    if deleted is not None:
        old = (top / deleted).read_text(errors="replace")
        if old.endswith("\n") and "\r" not in old:
            parts.append("".join(difflib.unified_diff(old.splitlines(keepends=True), [],
                                                      f"a/{case}/{deleted}", "/dev/null")))
    return "".join(parts)


@settings(BOUNDED, max_examples=25)  # each case is a handful of writes and two undos: the slowest kind
@given(data=st.data())
def test_undo_to_any_checkpoint_gives_back_the_tree_as_it_was(world: Undos, data: st.DataObject) -> None:
    # Each case starts a history of its own, as a new session on a new project would: the store reads
    # every record it keeps on each call, and hundreds of cases' records would only make this test slow.
    shutil.rmtree(world.root / ".codeward" / "checkpoints", ignore_errors=True)
    case = f"case{next(world.counter)}"
    top = world.root / case
    shutil.copytree(world.seed, top)
    start = tree_digest(top)
    before: list[tuple[int, str]] = []  # (checkpoint, the tree just before it)
    last = world.newest_checkpoint()
    for _ in range(data.draw(st.integers(2, 6))):
        digest = tree_digest(top)
        kind, arguments = data.draw(operation(top, case))
        result = world.session.call(kind, **arguments)
        event(f"{kind}: {'refused' if result.is_error else 'done'}")
        newest, changed = world.newest_checkpoint(), tree_digest(top) != digest
        assert not (result.is_error and changed), (kind, arguments)  # a refusal changes nothing
        assert (newest > last) == changed, (kind, arguments)  # every change is recorded, and only a change
        if changed:
            before.append((newest, digest))
            last = newest
    if not before:
        return
    middle = data.draw(st.sampled_from(before))
    undone = world.session.data("undo", checkpoint=middle[0])
    assert undone["skipped"] == [] and tree_digest(top) == middle[1]
    if middle != before[0]:
        world.session.data("undo", checkpoint=before[0][0])
    assert tree_digest(top) == start


def test_undoing_a_write_file_removes_the_folders_it_made(world: Undos) -> None:
    """The reported case: undo of write_file left the folders it had created (apply_patch's did not)."""
    case = f"case{next(world.counter)}"
    shutil.copytree(world.seed, world.root / case)
    start = tree_digest(world.root / case)
    world.session.ok("write_file", path=f"{case}/reports/2024/may/summary.md", content="# May\n")
    world.session.ok("apply_patch", patch=f"--- /dev/null\n+++ b/{case}/plans/q3/goals.md\n@@ -0,0 +1 @@\n+grow\n")
    world.session.ok("move_path", source=f"{case}/docs/guide/intro.md", destination=f"{case}/manual/parts/intro.md")
    world.session.ok("undo", steps=3)
    assert tree_digest(world.root / case) == start
    assert not (world.root / case / "reports").exists() and not (world.root / case / "manual").exists()
