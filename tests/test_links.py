"""Links judged as the kernel follows them: every ``..`` applied after the link before it.

Compared with the kernel itself (``os.path.realpath`` on a real tree, and the shell's ``cd -P``),
never with ``normpath``, which is what made ``a/b/c/sub/../../../../x`` look inside a project.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codeward.engines.files.links import climbs_out_of_link, kernel_resolve, link_refusal
from codeward.kernel.workspace import Workspace


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "a/b/c").mkdir(parents=True)
    (root / "d/e").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src/app.py").write_text("x\n")
    os.symlink("/usr/lib", root / "a/b/c/sub")
    os.symlink("../../d", root / "a/b/down")
    os.symlink(".", root / "here")
    return root


@pytest.mark.parametrize("rel", ["a/b/c/sub/../../../../etc", "a/b/down/e/../../src", "here/here/../x",
                                 "d/e/../../a/b/c/sub/..", "a/b/c/sub/x86_64-linux-gnu/../../bin", "src/../a/./b"])
def test_kernel_resolve_agrees_with_the_kernel(tree: Path, rel: str) -> None:
    path = f"{tree}/{rel}"
    assert kernel_resolve(path) == os.path.realpath(path)
    if os.path.isdir(path):  # the shell's own walk, physical
        shell = subprocess.run(["sh", "-c", f'cd -P "{path}" && pwd -P'], capture_output=True, text=True, check=True)
        assert kernel_resolve(path) == shell.stdout.strip()


def test_a_loop_is_none(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    assert kernel_resolve(f"{tmp_path}/a/x") is None


def test_climbing_out_of_a_linked_folder_is_named(tree: Path) -> None:
    folder = str(tree)
    assert climbs_out_of_link(folder, "a/b/c/sub/../x") == f"{tree}/a/b/c/sub"
    assert climbs_out_of_link(folder, "a/b/c/sub/x86_64-linux-gnu/../../x") == f"{tree}/a/b/c/sub"
    assert climbs_out_of_link(folder, "here/..") == f"{tree}/here"
    assert climbs_out_of_link(folder, "../project/src/app.py") == ""  # from the link's own folder
    assert climbs_out_of_link(folder, "d/e/../../src") == ""  # real folders
    assert climbs_out_of_link(folder, "a/b/c/sub/x86_64-linux-gnu/../libc.so") == ""  # inside the linked folder


def test_a_link_is_judged_where_it_lands(tree: Path, tmp_path: Path) -> None:
    workspace = Workspace.create([tree])
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tree / "data")  # the person's own link out of the project

    def refusal(name: str, target: str) -> str:
        return link_refusal(workspace, tree / name, target)

    assert "pointing outside the workspace" in refusal("esc", "data/secret.txt")
    assert "pointing outside the workspace" in refusal("esc", "../outside")
    assert "climbs (..) out of the folder the link a/b/c/sub" in refusal("esc", "a/b/c/sub/../../../../etc/passwd")
    if os.path.islink("/usr/lib/ssl/private"):  # Debian's: a link to /etc/ssl/private
        assert "outside" in refusal("esc", "/usr/lib/ssl/private")
        assert "climbs" in refusal("esc", "/usr/lib/ssl/private/../../..")
    assert refusal("ok", "src/app.py") == "" and refusal("ok", "a/b/down/e") == ""
    assert refusal("py", "/usr/bin/env") == "" and refusal("sys", "a/b/c/sub") == ""
    assert "protected" in refusal("g", ".git/config") and "protected" in refusal("e", ".env")
    os.symlink("loop", tree / "loop")
    assert refusal("x", "loop/y") == "a symlink loop"


def test_a_view_of_what_a_run_will_make_is_followed_too(tree: Path) -> None:
    """A link judged before the links on its way exist on the host (a run's layer, applied in name order)."""
    workspace = Workspace.create([tree])
    pending = {f"{tree}/zzz": "."}

    def view(path: str) -> str | None:
        return pending.get(path) or (os.readlink(path) if os.path.islink(path) else None)

    assert link_refusal(workspace, tree / "aaa", "zzz/../outside") == ""  # the host alone: inside, lexically
    assert "climbs" in link_refusal(workspace, tree / "aaa", "zzz/../outside", view)
