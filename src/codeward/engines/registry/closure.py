"""A Python tool's closure: every local file that can run when the tool runs.

A tool imports three kinds of names. The standard library's come with the interpreter. Local
modules — a ``.py`` file or a package folder beside the tool or in the space's ``tools/lib`` —
are followed, and what *they* import too, until nothing new is found; every such file is
part of the closure, and the signature covers each one's digest. Everything else is a
third-party name, which must be provided by a declared, pinned dependency
(:mod:`codeward.engines.registry.deps`): nothing is ever guessed or installed for it.

Two things are refused outright, with the fix: a local module whose name is also a standard
library module (a ``statistics.py`` dropped beside a tool would otherwise run instead of the
real one), and a relative import in a module that is not inside a package.

Only the closure is shown to the running tool (:mod:`codeward.engines.registry.sandboxed` stages these
exact bytes), so a file that is not in it cannot be imported at run time, whatever the tool does.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.registry.items import Problem
from codeward.engines.registry.signing import digest
from codeward.kernel.python_parse import parse_python

STDLIB: frozenset[str] = frozenset(sys.stdlib_module_names) | {"__future__", "__main__"}
LIB_FOLDER = "lib"
MAX_FILES = 200
MAX_BYTES = 8_000_000

Reader = Callable[[Path], "bytes | str"]
"""Reads a file through the space's gate: its bytes, or why it cannot be read."""


@dataclass(frozen=True)
class ClosureFile:
    """One file of a closure: where it is (relative to the space's ``tools/``) and its bytes as read."""

    rel: str
    path: Path
    data: bytes

    @property
    def digest(self) -> str:
        return digest(self.data)


@dataclass(frozen=True)
class Closure:
    """The tool file first, then its local modules in the order they were found."""

    files: tuple[ClosureFile, ...]
    third_party: tuple[str, ...]
    """Top-level names imported anywhere in the closure that are neither standard nor local."""
    problems: tuple[Problem, ...] = ()

    def digests(self) -> dict[str, str]:
        return {f.rel: f.digest for f in self.files}

    @property
    def local(self) -> tuple[str, ...]:
        return tuple(f.rel for f in self.files[1:])


def tool_closure(tools_root: Path, tool_path: Path, tool_data: bytes, read: Reader, display: str) -> Closure:
    """Follow the imports of the tool at ``tool_path`` (whose bytes are ``tool_data``)."""
    search = [tool_path.parent, tools_root / LIB_FOLDER]
    files: dict[str, ClosureFile] = {}
    problems: list[Problem] = []
    third_party: list[str] = []
    resolved: dict[str, list[Path] | None] = {}
    pending: list[tuple[ClosureFile, bool]] = []

    def rel_of(path: Path) -> str:
        try:
            return path.relative_to(tools_root).as_posix()
        except ValueError:
            return path.name

    def add(path: Path, data: bytes, in_package: bool) -> None:
        rel = rel_of(path)
        if rel in files:
            return
        entry = ClosureFile(rel, path, data)
        files[rel] = entry
        pending.append((entry, in_package))

    add(tool_path, tool_data, False)
    total = len(tool_data)
    while pending:
        entry, in_package = pending.pop(0)
        where = display if entry.path == tool_path else f"{display} → {entry.rel}"
        try:
            tree = parse_python(entry.data, filename=entry.rel)
        except (SyntaxError, ValueError) as exc:
            problems.append(Problem(where, "syntax", f"{entry.rel} is not valid Python ({exc})",
                                    "fix it; a tool's local modules are read to find what they import"))
            continue
        for name, line, relative in _imports(tree):
            if relative:
                if not in_package:
                    problems.append(Problem(where, "import", f"line {line}: a relative import outside a package",
                                            "import the module by its name (`import helper`): a tool's "
                                            "folder and tools/lib are on its path"))
                continue
            if name in resolved:
                continue
            found = _local(search, name)
            resolved[name] = found
            if found is None:
                if name not in STDLIB and name not in third_party:
                    third_party.append(name)
                continue
            if name in STDLIB:
                shown = ", ".join(rel_of(p) for p in found[:1])
                problems.append(Problem(where, "import", f"the local module {shown} has the name of the standard "
                                        f"library module {name!r} and would run instead of it",
                                        f"rename {shown} (and its imports); local modules may not shadow the "
                                        "standard library"))
                continue
            package = len(found) > 1 or found[0].name == "__init__.py" or found[0].parent.name == name
            for path in found:
                data = read(path)
                if isinstance(data, str):
                    problems.append(Problem(where, "import", f"{rel_of(path)} cannot be read: {data}",
                                            "make it a regular file inside the registry space"))
                    continue
                total += len(data)
                add(path, data, package)
        if len(files) > MAX_FILES or total > MAX_BYTES:
            problems.append(Problem(display, "import", f"the tool's local modules exceed {MAX_FILES} files or "
                                    f"{MAX_BYTES // 1_000_000} MB", "make the tool import less, or package it"))
            break
    return Closure(tuple(files.values()), tuple(third_party), tuple(problems))


def _imports(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(top-level name, line, is relative) of every import statement anywhere in a module."""
    found: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name.split(".")[0], node.lineno, False) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append(("", node.lineno, True))
            elif node.module:
                found.append((node.module.split(".")[0], node.lineno, False))
    return found


def _local(search: list[Path], name: str) -> list[Path] | None:
    """The files of local module ``name`` (a ``name.py``, or every ``.py`` of a ``name/`` package)
    in the first search folder that has it; ``None`` when no folder has it."""
    for folder in search:
        module = folder / f"{name}.py"
        if os.path.lexists(module):
            return [module]
        package = folder / name
        if package.is_dir() and not package.is_symlink():
            files = sorted(_package_files(package))
            return files or [package / "__init__.py"]
    return None


def _package_files(package: Path) -> list[Path]:
    found: list[Path] = []
    for top, dirs, names in os.walk(package, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        found.extend(Path(top) / n for n in sorted(names) if n.endswith(".py") and not n.startswith("."))
    return found
