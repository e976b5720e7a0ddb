"""A small project with planted bugs, written fresh by each test module that needs it.

Every planted finding is marked with a ``# PLANT:<kind>`` comment, and tests look the line
number up from the source, so the expectations follow the text instead of being hard-coded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace

Call = Callable[..., ToolOutcome]

CORE = '''\
import os  # PLANT:unused-import
import subprocess


def add(a: int, b: int) -> int:
    return a + b


def run_command(command: str) -> int:
    return subprocess.call(command, shell=True)  # PLANT:shell


def evaluate(expression: str) -> object:
    return eval(expression)  # PLANT:eval


total: int = add("1", 2)  # PLANT:type


def _unused_helper() -> int:  # PLANT:dead
    return 4


def tangled(x: int) -> int:  # PLANT:complex
    result = 0
    for i in range(x):
        if i % 2 == 0:
            if i % 3 == 0:
                result += 1
            elif i % 5 == 0:
                result += 2
            else:
                result += 3
        elif i % 7 == 0:
            result -= 1
        elif i % 11 == 0 and i > 20:
            result -= 2
        elif i % 13 == 0 or i < 5:
            result *= 2
        while result > 100:
            result -= 50
            if result < 10:
                break
    return result


print(run_command("true"), evaluate("1"), tangled(3))
'''

BRANCHY_JS = '''\
function branchy(a, b) {  // PLANT:js-complex
  let r = 0;
  for (let i = 0; i < a; i++) {
    if (i % 2) { r += 1; } else if (i % 3) { r -= 1; } else if (i % 5) { r *= 2; }
    if (b && i > 3) { r += b; } else if (b || i < 2) { r -= b; }
    while (r > 100) { r -= 7; if (r < 3) { break; } }
    switch (i) { case 1: r++; break; case 2: r--; break; case 3: r += 3; break; default: r += 0; }
  }
  return r > 0 ? r : -r;
}
module.exports = { branchy };
'''

CLEAN = '''\
"""A tidy module."""


def greet(name: str) -> str:
    """Say hello."""
    return f"hello {name}"


print(greet("world"))
'''


def plant_line(path: Path, kind: str) -> int:
    """The 1-based line carrying ``PLANT:kind`` in a planted file."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if f"PLANT:{kind}" in line:
            return number
    raise AssertionError(f"no PLANT:{kind} in {path}")


def write_planted_project(root: Path) -> Path:
    """Write the planted project under ``root/app`` (plus a clean sibling ``root/clean``)."""
    app = root / "app"
    (app / "pkg").mkdir(parents=True)
    (app / "pkg" / "__init__.py").write_text("")
    (app / "pkg" / "core.py").write_text(CORE)
    (app / "web").mkdir()
    (app / "web" / "branchy.js").write_text(BRANCHY_JS)
    (app / "README.txt").write_text("not source code\n")
    clean = root / "clean"
    clean.mkdir()
    (clean / "tidy.py").write_text(CLEAN)
    return app


def planted_project(factory: pytest.TempPathFactory, label: str) -> Path:
    """A fresh ``project`` folder holding the planted project, for one test module's fixtures."""
    root = factory.mktemp(label) / "project"
    root.mkdir()
    write_planted_project(root)
    return root


def caller(root: Path, catalog: Catalog) -> Call:
    """Call catalog tools on a workspace rooted at ``root`` (module fixtures cannot use ``call``)."""
    ctx = ToolContext(Workspace.create([root]))
    return lambda name, **arguments: catalog.call(name, arguments, ctx)
