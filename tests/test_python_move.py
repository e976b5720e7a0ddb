"""``py_move_def`` across modules, through the catalog: every import form rewritten byte for byte,
the moved code's own imports carried, refusals that change nothing, dry runs, one undoable checkpoint.

Each project here is small and synthetic so that the expected text of every file can be written
out; ``tests/test_refactor_fixtures_mcp.py`` does the same on real third-party packages and runs
their own test suites.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot

Py = Callable[..., ToolOutcome]

OLD = '''\
"""Old home."""

import os

__all__ = ["f", "g"]


def _helper() -> str:
    return os.sep


# f's own comment travels with it.
def f() -> str:
    return "f" + _helper()


def g() -> str:
    return "g"
'''

IMPORTERS = {
    "pkg/__init__.py": 'from .old import f, g\n\n__all__ = ["f", "g"]\n',
    "pkg/new.py": '"""New home."""\n\nimport sys\n\n\ndef h() -> str:\n    return sys.platform\n',
    "pkg/a.py": "from pkg.old import f, g\n\n\ndef a() -> str:\n    return f() + g()\n",
    "pkg/b.py": "import pkg.old\n\n\ndef b() -> str:\n    return pkg.old.f()\n",
    "pkg/c.py": "from . import old as o\n\n\ndef c() -> str:\n    return o.f()\n",
    "pkg/d.py": "from .old import *\n\n\ndef d() -> str:\n    return f()\n",
    "pkg/e.py": ("from pkg import new\n\n\ndef e(old: object) -> object:\n"
                 "    return old.f  # a parameter, not the module\n"),
    "tests/test_a.py": ('from unittest import mock\n\nfrom pkg.old import f as ff\n\n\n'
                        'def test_f() -> None:\n    with mock.patch("pkg.old.f"):\n        assert ff()\n'),
}

EXPECTED = {
    "pkg/old.py": '"""Old home."""\n\nimport os\n\n__all__ = ["g"]\n\n\ndef _helper() -> str:\n    return os.sep\n'
                  '\n\ndef g() -> str:\n    return "g"\n',
    "pkg/new.py": ('"""New home."""\n\nimport sys\nfrom .old import _helper\n\n\ndef h() -> str:\n'
                   '    return sys.platform\n\n\n# f\'s own comment travels with it.\ndef f() -> str:\n'
                   '    return "f" + _helper()\n'),
    "pkg/__init__.py": 'from .old import g\nfrom .new import f\n\n__all__ = ["f", "g"]\n',
    "pkg/a.py": "from pkg.old import g\nfrom pkg.new import f\n\n\ndef a() -> str:\n    return f() + g()\n",
    "pkg/b.py": "import pkg.old\nimport pkg.new\n\n\ndef b() -> str:\n    return pkg.new.f()\n",
    "pkg/c.py": "from . import old as o\nfrom . import new\n\n\ndef c() -> str:\n    return new.f()\n",
    "pkg/d.py": "from .old import *\nfrom .new import f\n\n\ndef d() -> str:\n    return f()\n",
    "pkg/e.py": IMPORTERS["pkg/e.py"],
    "tests/test_a.py": IMPORTERS["tests/test_a.py"].replace("from pkg.old import f as ff",
                                                             "from pkg.new import f as ff"),
}


def write_project(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def texts(root: Path, names: list[str]) -> dict[str, str]:
    return {name: (root / name).read_text() for name in names}


def assert_refused(outcome: ToolOutcome, root: Path, before: dict[str, bytes], *words: str) -> None:
    assert outcome.is_error, outcome.text
    assert snapshot(root) == before, "a refused move changed files on disk"
    for word in words:
        assert word in outcome.text, f"{word!r} missing from: {outcome.text}"


def imports_cleanly(root: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.fixture
def py(catalog: Catalog, ctx: ToolContext) -> Py:
    def run(tool_name: str, /, **arguments: Any) -> ToolOutcome:
        return catalog.call(tool_name, arguments, ctx)

    return run


@pytest.fixture
def project(root: Path) -> Path:
    write_project(root, {"pkg/old.py": OLD, **IMPORTERS})
    return root


def test_a_move_rewrites_every_import_of_the_name(py: Py, project: Path) -> None:
    outcome = py("py_move_def", src_path="pkg/old.py", dest_path="pkg/new.py", name="f")
    assert not outcome.is_error, outcome.text
    assert texts(project, list(EXPECTED)) == EXPECTED
    assert "Updated 6 references to it in 6 files" in outcome.text
    assert 'tests/test_a.py:7: with mock.patch("pkg.old.f"):  (a string naming pkg.old.f (now pkg.new.f))' \
        in outcome.text
    assert "pkg/e.py" not in outcome.text  # a parameter named like the module is none of its business
    checked = imports_cleanly(project, "import pkg.a, pkg.b, pkg.c, pkg.d, pkg\n"
                                       "assert pkg.a.a() == pkg.b.b() + 'g' == pkg.c.c() + 'g' == pkg.d.d() + 'g'\n"
                                       "assert pkg.f is pkg.new.f and not hasattr(pkg.old, 'f')")
    assert checked.returncode == 0, checked.stderr


def test_a_file_that_does_not_parse_is_listed_as_unsure(py: Py, project: Path) -> None:
    (project / "pkg" / "broken.py").write_text("from pkg.old import f\n\ndef oops(:\n")
    outcome = py("py_move_def", src_path="pkg/old.py", dest_path="pkg/new.py", name="f")
    assert not outcome.is_error, outcome.text
    assert "pkg/broken.py: not checked, it does not parse (it mentions f)" in outcome.text
    assert (project / "pkg" / "broken.py").read_text() == "from pkg.old import f\n\ndef oops(:\n"


def test_the_same_move_shown_as_a_diff_writes_nothing(py: Py, project: Path) -> None:
    before = snapshot(project)
    outcome = py("py_move_def", src_path="pkg/old.py", dest_path="pkg/new.py", name="f", apply=False)
    assert not outcome.is_error, outcome.text
    assert snapshot(project) == before
    assert "changes 8 files (dry run: nothing written; apply=true writes it)" in outcome.text
    assert "--- a/pkg/c.py\n+++ b/pkg/c.py\n" in outcome.text
    assert "-    return o.f()\n+    return new.f()\n" in outcome.text


def test_a_move_is_one_checkpoint_that_undo_reverts(py: Py, project: Path) -> None:
    before = snapshot(project)
    moved = py("py_move_def", src_path="pkg/old.py", dest_path="pkg/brand_new.py", name="f")
    assert not moved.is_error, moved.text
    assert moved.checkpoint is not None
    assert (project / "pkg" / "brand_new.py").exists()
    undone = py("undo")
    assert not undone.is_error, undone.text
    after = {name: data for name, data in snapshot(project).items() if not name.startswith(".codeward/")}
    assert after == before


def test_the_moved_code_takes_future_and_type_checking_imports(py: Py, root: Path) -> None:
    write_project(root, {
        "lib/__init__.py": "",
        "lib/shapes.py": ("from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
                          "if TYPE_CHECKING:\n    from decimal import Decimal\n\n\n"
                          "def area(side: Decimal) -> Decimal:\n    return side * side\n"),
    })
    outcome = py("py_move_def", src_path="lib/shapes.py", dest_path="lib/geometry.py", name="area")
    assert not outcome.is_error, outcome.text
    assert (root / "lib" / "geometry.py").read_text() == (
        "from __future__ import annotations\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from decimal import Decimal\n\n\ndef area(side: Decimal) -> Decimal:\n    return side * side\n")


def test_the_old_module_imports_the_name_back_when_it_still_uses_it(py: Py, root: Path) -> None:
    write_project(root, {
        "app/__init__.py": "",
        "app/core.py": "from .util import clamp\n\n\ndef scale(x):\n    return double(clamp(x))\n\n\n"
                       "def double(x):\n    return 2 * x\n",
        "app/util.py": "def clamp(x):\n    return max(0, x)\n",
    })
    outcome = py("py_move_def", src_path="app/core.py", dest_path="app/util.py", name="double")
    assert not outcome.is_error, outcome.text
    assert (root / "app" / "core.py").read_text() == ("from .util import clamp, double\n\n\ndef scale(x):\n"
                                                      "    return double(clamp(x))\n")
    checked = imports_cleanly(root, "from app.core import scale\nassert scale(3) == 6")
    assert checked.returncode == 0, checked.stderr


def test_a_rename_within_the_file_keeps_its_importers_working(py: Py, root: Path) -> None:
    write_project(root, {"m.py": "def old():\n    return 1\n", "user.py": "from m import old\n\nprint(old())\n"})
    outcome = py("py_move_def", src_path="m.py", dest_path="m.py", name="old", dest_name="new")
    assert not outcome.is_error, outcome.text
    assert (root / "m.py").read_text() == "def new():\n    return 1\n"
    assert (root / "user.py").read_text() == "from m import new as old\n\nprint(old())\n"


def test_refusals_name_the_problem_and_change_nothing(py: Py, project: Path) -> None:
    (project / "pkg" / "taken.py").write_text("def f():\n    return 0\n")
    (project / "pkg" / "other_os.py").write_text("os = object()\n")
    (project / "notes.txt").write_text("notes\n")
    (project.parent / "outside.py").write_text("")
    before = snapshot(project)
    cases: list[tuple[dict[str, Any], tuple[str, ...]]] = [
        ({"src_path": "pkg/missing.py", "dest_path": "pkg/new.py", "name": "f"}, ("not found",)),
        ({"src_path": "pkg/old.py", "dest_path": "../outside.py", "name": "f"}, ("outside the workspace",)),
        ({"src_path": "pkg/old.py", "dest_path": ".codeward/x.py", "name": "f"}, (".codeward",)),
        ({"src_path": "pkg/old.py", "dest_path": "notes.txt", "name": "f"}, ("not a Python file",)),
        ({"src_path": "pkg/old.py", "dest_path": "pkg/taken.py", "name": "f"}, ("f already exists in pkg/taken.py",)),
        ({"src_path": "pkg/old.py", "dest_path": "pkg/other_os.py", "name": "_helper"},
         ("the moved code uses os, which the destination binds to something else (line 1)",)),
        ({"src_path": "pkg/old.py", "dest_path": "pkg/new.py", "name": "f", "dest_name": "Box.f"},
         ("no definition named 'Box'",)),
        ({"src_path": "pkg/old.py", "dest_path": "pkg/old.py", "name": "nope"}, ("no definition named 'nope'",)),
    ]
    for arguments, words in cases:
        assert_refused(py("py_move_def", **arguments), project, before, *words)
    assert (project.parent / "outside.py").read_text() == ""


def test_a_move_that_would_create_an_import_cycle_is_refused(py: Py, root: Path) -> None:
    write_project(root, {
        "pkg/__init__.py": "",
        "pkg/a.py": ("from .b import tool\n\n\ndef helper():\n    return 1\n\n\n"
                     "def run():\n    return tool() + helper()\n"),
        "pkg/b.py": "def tool():\n    return 2\n",
    })
    before = snapshot(root)
    outcome = py("py_move_def", src_path="pkg/a.py", dest_path="pkg/b.py", name="run")
    assert_refused(outcome, root, before, "would create an import cycle: pkg.b -> pkg.a -> pkg.b",
                   "Move the names it uses from the old module too")
    checked = imports_cleanly(root, "import pkg.a")
    assert checked.returncode == 0, checked.stderr


def test_into_a_class_with_importers_is_refused_with_the_list(py: Py, root: Path) -> None:
    write_project(root, {"m.py": "class Box:\n    pass\n\n\ndef f():\n    return 1\n",
                         "user.py": "from m import f\n\nprint(f())\n"})
    before = snapshot(root)
    outcome = py("py_move_def", src_path="m.py", dest_path="m.py", name="f", dest_name="Box.f")
    assert_refused(outcome, root, before, "would go into a class", "user.py:1: from m import f")


def test_the_destination_importing_the_name_under_another_name_is_refused(py: Py, root: Path) -> None:
    write_project(root, {"a.py": "def f():\n    return 1\n", "b.py": "from a import f as g\n\nprint(g())\n"})
    before = snapshot(root)
    outcome = py("py_move_def", src_path="a.py", dest_path="b.py", name="f")
    assert_refused(outcome, root, before, "b.py:1: from a import f as g", "the destination imports it as g")


def test_an_importer_linked_from_outside_the_roots_is_never_read_or_written(py: Py, project: Path) -> None:
    outside = project.parent / "elsewhere.py"
    outside.write_text("from pkg.old import f\n")
    (project / "pkg" / "linked.py").symlink_to(outside)
    outcome = py("py_move_def", src_path="pkg/old.py", dest_path="pkg/new.py", name="f")
    assert not outcome.is_error, outcome.text
    assert outside.read_text() == "from pkg.old import f\n"
    assert (project / "pkg" / "linked.py").is_symlink()
    assert "linked.py" not in outcome.text
