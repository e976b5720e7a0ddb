"""``py_rename_symbol`` and ``py_find_references`` on a real package, against rope and jedi called directly.

The package is a vendored copy of ``markdown_it`` (markdown-it-py, a codeward dependency),
copied from this environment into a temporary folder. For each symbol the bench renames (as
a dry run: the diff is computed, nothing written) and finds references three ways:

* **codeward** — the tools through the catalog: the symbol index's occurrences of the name,
  each resolved with jedi (the index is built first, and its cost shown apart);
* **jedi** — ``Script.rename`` / ``Script.get_references(scope="project")`` (its project search
  stops after 30 files that contain the name);
* **rope** — ``Rename(...).get_changes`` / ``find_occurrences`` over the whole project (when
  rope is installed; it is not a dependency).

It prints the times, the files and changed lines each found, and whether codeward changes the
same files as jedi. The interesting rows are where they differ: rope ignores annotations.

    .venv/bin/python bench/rename_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import difflib
import gc
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import markdown_it

from codeward.config.lsp import LspSettings
from codeward.engines.code_intel.symbol_index import SymbolIndex
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.workspace import Workspace
from codeward.tools import default_catalog

CASES = [
    ("module function", "markdown_it/common/utils.py", "isStrSpace", "is_str_space"),
    ("method", "markdown_it/rules_block/state_block.py", "StateBlock.skipSpaces", "skip_spaces"),
    ("class", "markdown_it/token.py", "Token", "MarkdownToken"),
]


def timed(run: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times: list[float] = []
    result: Any = None
    for _ in range(runs):
        gc.collect()
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def position(root: Path, rel: str, name: str) -> tuple[int, int]:
    short = name.rsplit(".", 1)[-1]
    for number, line in enumerate((root / rel).read_text().splitlines(), 1):
        for keyword in ("def ", "class "):
            at = line.find(keyword + short)
            if at >= 0 and line[at + len(keyword) + len(short)] in "(:":
                return number, at + len(keyword) + 1
    raise SystemExit(f"{name} not found in {rel}")


def changed_lines(before: str, after: str) -> int:
    return sum(1 for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line.startswith("+") and not line.startswith("+++"))


def rope_rename(root: Path, rel: str, line: int, column: int, new_name: str) -> dict[str, int]:
    from rope.base import libutils
    from rope.base.project import Project
    from rope.refactor.rename import Rename

    project = Project(str(root), ropefolder=None, extension_modules=[], import_dynload_stdmods=False)
    try:
        resource = libutils.path_to_resource(project, str(root / rel))
        text = resource.read()
        offset = sum(len(part) + 1 for part in text.split("\n")[:line - 1]) + column - 1
        changes = Rename(project, resource, offset).get_changes(new_name, docs=False)
        return {change.resource.path: changed_lines(change.old_contents or change.resource.read(),
                                                    change.new_contents) for change in changes.changes}
    finally:
        project.close()


def rope_references(root: Path, rel: str, line: int, column: int) -> int:
    from rope.base import libutils
    from rope.base.project import Project
    from rope.contrib.findit import find_occurrences

    project = Project(str(root), ropefolder=None, extension_modules=[], import_dynload_stdmods=False)
    try:
        resource = libutils.path_to_resource(project, str(root / rel))
        text = resource.read()
        offset = sum(len(part) + 1 for part in text.split("\n")[:line - 1]) + column - 1
        return len(find_occurrences(project, resource, offset, in_hierarchy=True))
    finally:
        project.close()


def jedi_rename(root: Path, rel: str, line: int, column: int, new_name: str) -> dict[str, int]:
    import jedi

    script = jedi.Script(path=root / rel, project=jedi.Project(root))
    refactoring = script.rename(line, column - 1, new_name=new_name)
    out: dict[str, int] = {}
    for path, changed in refactoring.get_changed_files().items():
        out[str(Path(path).relative_to(root))] = changed_lines(Path(path).read_text(), changed.get_new_code())
    return out


def jedi_references(root: Path, rel: str, line: int, column: int) -> int:
    import jedi

    script = jedi.Script(path=root / rel, project=jedi.Project(root))
    return len(script.get_references(line, column - 1, scope="project"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    try:
        import rope  # noqa: F401
        have_rope = True
    except ImportError:
        have_rope = False
    with tempfile.TemporaryDirectory(prefix="codeward-rename-") as scratch:
        root = Path(scratch) / "project"
        shutil.copytree(Path(markdown_it.__file__).parent, root / "markdown_it",
                        ignore=shutil.ignore_patterns("__pycache__"))
        files = sum(1 for _ in root.rglob("*.py"))
        print(f"load average {os.getloadavg()[0]:.2f}; vendored markdown_it {markdown_it.__version__} "
              f"({files} files); runs {options.runs}")
        workspace = Workspace.create([root])
        started = time.perf_counter()
        with SymbolIndex.open(workspace, root).data as index:
            index.refresh()
        print(f"symbol index built in {time.perf_counter() - started:.2f} s (once per project, then incremental)")
        catalog = default_catalog()
        # codeward's jedi path (where basedpyright is not installed): bench/lsp_latency.py times basedpyright's
        ctx = ToolContext(workspace, services=Services(LspSettings(enabled=False)))
        for label, rel, name, new_name in CASES:
            line, column = position(root, rel, name)
            ours_time, ours = timed(partial(catalog.call, "py_rename_symbol",
                                            {"path": rel, "name": name, "new_name": new_name}, ctx), options.runs)
            assert not ours.is_error, ours.text
            ours_files = set(ours.structured["files"])
            ours_lines = sum(1 for row in ours.structured["diff"].splitlines()
                             if row.startswith("+") and not row.startswith("+++"))
            refs_time, refs = timed(partial(catalog.call, "py_find_references", {"path": rel, "name": name}, ctx),
                                    options.runs)
            total = refs.structured["total"] if refs.structured else 0
            jedi_time, jedi_files = timed(partial(jedi_rename, root, rel, line, column, new_name), options.runs)
            jedi_refs_time, jedi_refs = timed(partial(jedi_references, root, rel, line, column), options.runs)
            print(f"\n{label}: {name} -> {new_name}")
            same = "same files as jedi" if ours_files == set(jedi_files) else f"DIFFERENT from jedi: {ours_files}"
            print(f"  rename      codeward {ours_time:6.2f} s  jedi {jedi_time:6.2f} s  "
                  f"ratio {ours_time / jedi_time:.2f}x  {len(ours_files)} files, {ours_lines} changed lines "
                  f"(jedi {sum(jedi_files.values())}; {same})")
            print(f"  references  codeward {refs_time:6.2f} s  jedi {jedi_refs_time:6.2f} s  "
                  f"ratio {refs_time / jedi_refs_time:.2f}x  found {total} (jedi {jedi_refs})")
            if have_rope:
                rope_time, rope_files = timed(partial(rope_rename, root, rel, line, column, new_name), 1)
                rope_refs_time, rope_refs = timed(partial(rope_references, root, rel, line, column), 1)
                print(f"  rope        rename {rope_time:6.2f} s ({len(rope_files)} files, "
                      f"{sum(rope_files.values())} changed lines)  references {rope_refs_time:6.2f} s "
                      f"(found {rope_refs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
