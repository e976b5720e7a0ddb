"""The layers are folders, and the order is a contract: a lower package never imports a higher one.

``pyproject.toml`` declares the order (``[tool.importlinter]``, docs/architecture.md draws it):
``kernel`` < ``config`` < ``engines`` < ``gateway`` < ``approval`` < ``audit`` < ``tools`` <
``serving`` < ``apps``, the engines' and the applications' own orders, and no import circle
between sibling packages or modules at any depth. import-linter checks it — every import
counts: at the top of a module, inside a function body, and under ``if TYPE_CHECKING:`` (a
type-only import is a dependency too: it is how a lower module comes to know a higher one).

To mend a broken contract, find the import that runs upward and move the shared piece down (a
value, a protocol, a constant), or pass the thing in from above; never hide the import in a
function body — that counts too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(src: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts, over the package tree under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", str(REPO / "pyproject.toml")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_layers_hold(tmp_path: Path) -> None:
    done = lint_imports(REPO / "src", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 4 kept, 0 broken." in done.stdout, done.stdout


def test_an_upward_import_breaks_the_contract_wherever_it_hides(tmp_path: Path) -> None:
    """The check above can fail: a kernel module reaching into the applications — in a function body —
    and an engine naming a gateway type under TYPE_CHECKING are both found and named."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "codeward", src / "codeward", ignore=shutil.ignore_patterns("__pycache__"))
    result = src / "codeward" / "kernel" / "result.py"
    result.write_text(result.read_text() + "\n\ndef _planted() -> None:\n    from codeward.apps import cli  # noqa\n")
    walk = src / "codeward" / "engines" / "files" / "walk.py"
    planted = "\n\nif TYPE_CHECKING:\n    from codeward.gateway.names import ToolRef  # noqa\n"
    walk.write_text(walk.read_text() + planted)
    done = lint_imports(src, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "codeward.kernel is not allowed to import codeward.apps" in done.stdout, done.stdout
    assert "codeward.kernel.result -> codeward.apps.cli" in done.stdout, done.stdout
    assert "codeward.engines is not allowed to import codeward.gateway" in done.stdout, done.stdout
    assert "codeward.engines.files.walk -> codeward.gateway.names" in done.stdout, done.stdout


def test_the_contract_counts_every_import_and_names_every_floor() -> None:
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert settings.get("exclude_type_checking_imports") is False, "type-only imports are dependencies too"
    contracts = {contract["id"]: contract for contract in settings["contracts"]}
    assert contracts["layers"]["exhaustive"] is True, "a new top-level package must be given its floor"
    assert contracts["engines"]["exhaustive"] is True and contracts["apps"]["exhaustive"] is True
    assert contracts["no-circles"]["type"] == "acyclic_siblings"


def test_the_tree_shows_the_floors() -> None:
    """A handful of top-level entries under ``codeward/`` (the packages, ``__init__``, ``__main__``,
    ``py.typed``), each package a floor of the contract."""
    entries = sorted(p.name for p in (REPO / "src" / "codeward").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 12, entries
    layers = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    packages = sorted(p for p in entries if (REPO / "src" / "codeward" / p / "__init__.py").exists())
    assert packages == sorted(layers), (packages, layers)
