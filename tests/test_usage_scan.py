"""Repository-wide usages read only what the workspace shows now, and place every use exactly.

The index remembers which files use a name; between a refresh and a question those files
can be swapped for symlinks, FIFOs or files the workspace now blacklists. None of that may
be read.
"""

from __future__ import annotations

import os
import pickle
import textwrap
import threading
from pathlib import Path

import pytest

from codeward.engines.code_intel.symbol_index import SymbolIndex
from codeward.engines.code_intel.usage_scan import Usage
from codeward.kernel.workspace import Workspace

USER_PY = "from pkg.api import target\n\nvalue = target()\n"
API_PY = "def target():\n    return 1\n"
OUTSIDE_PY = "SECRET = 'outside'\ntarget()  # outside the workspace\n"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def indexed(workspace: Workspace) -> SymbolIndex:
    opened = SymbolIndex.open(workspace)
    assert opened.ok, opened.error_text()
    index = opened.data
    index.refresh()
    return index


def rows(usages: list[Usage]) -> list[tuple[str, int, int, str, bool]]:
    return [(u.path, u.line, u.column, u.text, u.definition) for u in usages]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    write(directory, "user.py", OUTSIDE_PY)
    write(directory, "api.py", OUTSIDE_PY)
    return directory


@pytest.fixture
def project(root: Path) -> Path:
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/api.py", API_PY)
    write(root, "pkg/user.py", USER_PY)
    write(root, "app/main.py", "from pkg.api import target\nprint(target())\n")
    return root


def test_a_file_swapped_for_a_symlink_outside_is_not_read(project: Path, workspace: Workspace,
                                                          outside: Path) -> None:
    with indexed(workspace) as index:
        assert [u.path for u in index.usages("target")[0]] == [
            "app/main.py", "app/main.py", "pkg/api.py", "pkg/user.py", "pkg/user.py"]
        (project / "pkg" / "user.py").unlink()
        (project / "pkg" / "user.py").symlink_to(outside / "user.py")
        usages, total = index.usages("target")
        assert [u.path for u in usages] == ["app/main.py", "app/main.py", "pkg/api.py"] and total == 3
        assert not any("outside" in u.text for u in usages)


def test_a_folder_swapped_for_a_symlink_outside_is_not_read(project: Path, workspace: Workspace,
                                                            outside: Path) -> None:
    with indexed(workspace) as index:
        (project / "pkg").rename(project / "old_pkg")
        (project / "pkg").symlink_to(outside, target_is_directory=True)
        usages, _total = index.usages("target")
        assert [u.path for u in usages] == ["app/main.py", "app/main.py"]
        assert not any("outside" in u.text for u in usages)


def test_a_symlink_to_a_file_inside_is_followed(project: Path, workspace: Workspace) -> None:
    write(project, "lib/real.py", "x = target\n")
    with indexed(workspace) as index:
        (project / "pkg" / "user.py").unlink()
        (project / "pkg" / "user.py").symlink_to(project / "lib" / "real.py")
        found = [(u.path, u.line, u.text) for u in index.usages("target")[0]]
        assert ("pkg/user.py", 1, "x = target") in found and ("lib/real.py", 1, "x = target") in found


def test_files_blacklisted_since_indexing_are_not_read(project: Path, workspace: Workspace) -> None:
    write(project, "pkg/api_secret.py", "KEY = target()\n")
    write(project, "Keys/api.py", "KEY = target()\n")
    with indexed(workspace) as index:
        assert {u.path for u in index.usages("target")[0]} >= {"pkg/api_secret.py", "Keys/api.py"}
    stricter = Workspace.create([project], extra_blacklist=["*_secret.py", "keys/"])
    with SymbolIndex.open(stricter).data as index:  # the same index, asked through the stricter gate
        paths = {u.path for u in index.usages("target")[0]}
        assert paths == {"app/main.py", "pkg/api.py", "pkg/user.py"}  # 'Keys/' too: globs ignore case


def test_a_fifo_swapped_in_is_skipped_without_blocking(project: Path, workspace: Workspace) -> None:
    with indexed(workspace) as index:
        (project / "pkg" / "user.py").unlink()
        os.mkfifo(project / "pkg" / "user.py")
        result: list[list[str]] = []
        worker = threading.Thread(target=lambda: result.append([u.path for u in index.usages("target")[0]]),
                                  daemon=True)
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), "reading a FIFO blocked"
        assert result == [["app/main.py", "app/main.py", "pkg/api.py"]]


def test_deleted_and_edited_files_since_indexing(project: Path, workspace: Workspace) -> None:
    with indexed(workspace) as index:
        (project / "app" / "main.py").unlink()
        # Edited after indexing: the comment and string spans are found again, in memory.
        write(project, "pkg/user.py", "# target in a comment\ns = 'target'\ny = target\n")
        assert rows(index.usages("target")[0]) == [
            ("pkg/api.py", 1, 5, "def target():", True), ("pkg/user.py", 3, 5, "y = target", False)]


def test_positions_columns_and_line_text(root: Path, workspace: Workspace) -> None:
    (root / "m.py").write_bytes(
        "def größe(größe):  # größe\n"
        "    return größe + größe\r\n"
        "s = 'größe'\n"
        "t = größe_2 + _größe + größe\n"
        "größe".encode())
    with indexed(workspace) as index:
        usages, total = index.usages("größe")
        assert rows(usages) == [
            ("m.py", 1, 5, "def größe(größe):  # größe", True),
            ("m.py", 1, 11, "def größe(größe):  # größe", True),
            ("m.py", 2, 12, "    return größe + größe", False),
            ("m.py", 2, 20, "    return größe + größe", False),
            ("m.py", 4, 24, "t = größe_2 + _größe + größe", False),
            ("m.py", 5, 1, "größe", False),
        ]
        assert total == 6
        first, total = index.usages("größe", limit=2)
        assert rows(first) == rows(usages)[:2] and total == 6


def test_dotted_names_and_limits_across_files(root: Path, workspace: Workspace) -> None:
    for number in range(5):
        write(root, f"m{number}.py", "self.step()\nself . step = 1\nstep()\n# self.step\n")
    with indexed(workspace) as index:
        usages, total = index.usages("self.step")
        assert [(u.path, u.line, u.column) for u in usages[:2]] == [("m0.py", 1, 1), ("m0.py", 2, 1)]
        assert len(usages) == total == 10
        few, total = index.usages("step", limit=3)
        assert [(u.path, u.line, u.column) for u in few] == [("m0.py", 1, 6), ("m0.py", 2, 8), ("m0.py", 3, 1)]
        assert total == 15  # the files past the limit are counted from the index, not read


def test_negated_secret_globs_keep_their_meaning(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    workspace = Workspace.create([root], blacklist=["*.pem", "!public.pem", "vault/"])
    assert workspace.blacklist_reason(root / "certs" / "server.pem")
    assert not workspace.blacklist_reason(root / "certs" / "public.pem")
    assert workspace.blacklist_reason(root / "Vault" / "x.py") and not workspace.blacklist_reason(root / "vaults.py")
    for name in ("server.pem", "public.pem"):
        (root / name).write_text("pem\n")
    with workspace.reader(root) as reader:
        assert reader.read("server.pem") is None
        read = reader.read("public.pem")
        assert read is not None and read[0] == b"pem\n"
    # Index worker processes get the workspace pickled, checks already made included.
    copied = pickle.loads(pickle.dumps(workspace))
    assert copied.blacklist_reason(root / "server.pem") and not copied.blacklist_reason(root / "public.pem")
    # Answers are remembered per workspace (the same files are asked about again and again),
    # but the memo stays home: a pickled workspace carries the policy only.
    assert "_blacklist_memo" in workspace.__dict__ and "_blacklist_memo" not in pickle.loads(
        pickle.dumps(workspace)).__dict__
    for _ in range(2):
        assert workspace.blacklist_reason(root / "certs" / "server.pem")
        assert not workspace.blacklist_reason(root / "certs" / "public.pem")
