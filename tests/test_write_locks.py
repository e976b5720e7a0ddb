"""The write lock every codeward process on a root shares, and the repository test after the write.

Two processes (two agent sessions on one project, replicas on shared storage) share no memory;
the lock is an ``flock`` on ``.codeward/locks/repository-names.lock``. Here a second process really
holds it. What the lock cannot rule out (NFS without ``lockd``, another writer) the re-check after
the write takes back. The races themselves run through real servers in
``tests/redteam/test_write_races.py``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeward.kernel import path_locks
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.path_locks import hold_roots
from codeward.kernel.repository_guard import RepositoryGuard
from codeward.kernel.result import ErrorKind
from codeward.kernel.state_dir import WRITE_LOCK, LockBusy, StateDir
from codeward.kernel.workspace import Workspace

HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from codeward.kernel.state_dir import WRITE_LOCK, StateDir
    with StateDir(Path(sys.argv[1])).locked(WRITE_LOCK, 10):
        print("held", flush=True)
        sys.stdin.read()
""")


@contextmanager
def another_process_holds(root: Path) -> Iterator[None]:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def test_the_lock_excludes_another_process_and_is_dropped_when_it_ends(root: Path) -> None:
    with another_process_holds(root), pytest.raises(LockBusy, match="another codeward process has held"), \
            StateDir(root).locked(WRITE_LOCK, 0.2):
        pass
    with StateDir(root).locked(WRITE_LOCK, 0.2):  # the holder is gone
        lock = root / ".codeward" / WRITE_LOCK
        assert stat.S_IMODE(lock.stat().st_mode) == 0o644  # any user who can read it can take it


def test_a_write_that_could_make_a_repository_waits_for_the_other_process(root: Path, catalog: Catalog,
                                                                          ctx: ToolContext,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(path_locks, "CROSS_PROCESS_WAIT_SECONDS", 0.3)
    with another_process_holds(root):
        busy = catalog.call("write_file", {"path": "s/HEAD", "content": "ref: refs/heads/main\n"}, ctx)
        ordinary = catalog.call("write_file", {"path": "s/notes.txt", "content": "x\n"}, ctx)  # takes no such lock
    assert busy.is_error and busy.errors[0].kind is ErrorKind.UNAVAILABLE and "nothing was written" in busy.text
    assert not (root / "s/HEAD").exists() and not ordinary.is_error
    assert not catalog.call("write_file", {"path": "s/HEAD", "content": "ref: refs/heads/main\n"}, ctx).is_error


def test_a_root_whose_state_folder_is_not_codewards_is_passed_over(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / ".codeward")
    with hold_roots([root], timeout=0.2):  # no lock there (the re-check still holds), and nothing made through it
        pass
    assert list(elsewhere.iterdir()) == []


def test_the_recheck_takes_back_what_completed_a_repository(root: Path) -> None:
    workspace = Workspace.create([root])
    folder = root / "s"
    folder.mkdir()
    guard = RepositoryGuard(workspace, [folder / "HEAD"])
    (folder / "HEAD").write_text("ref: refs/heads/main\n")  # this write
    (folder / "objects").mkdir()  # another writer's, unseen by this one's check
    problem = guard.check()
    assert "made a folder git opens as a repository" in problem and "removed" in problem
    assert not (folder / "HEAD").exists() and (folder / "objects").is_dir()  # only what this write made
    untouched = RepositoryGuard(workspace, [root / "t/HEAD"])
    (root / "t").mkdir()
    (root / "t/HEAD").write_text("x\n")
    assert untouched.check() == "" and (root / "t/HEAD").exists()
