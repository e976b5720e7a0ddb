"""Which dotted module name each file of a Python project has, and what it imports.

A project's files are importable from one or more *import roots*: the folder above a file's
top package (the last folder up the chain of ``__init__.py``), ``src/`` in a src layout,
the project root itself (tests run from there, namespace packages). A file has one name per
root it sits under (``src/cachetools/keys.py`` is ``cachetools.keys`` from ``src/`` and
``src.cachetools.keys`` from the project root); an import statement is matched against the
name under the same root, and a new import is written with the name under that root.

Pure path and tree work: the list of files comes from the caller (a gated walk).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class ModuleMap:
    """The project's Python files and the roots they are imported from, most specific first."""

    files: frozenset[Path]
    roots: tuple[Path, ...]

    @classmethod
    def of(cls, files: Iterable[Path], project_root: Path, anchors: Iterable[Path] = ()) -> ModuleMap:
        """The map for ``files``; ``anchors`` (the files a change is about) add their package roots."""
        known = frozenset(files)
        roots: list[Path] = []
        for anchor in anchors:
            roots.append(_package_root(anchor, known))
        src = project_root / "src"
        if any(path.is_relative_to(src) for path in known):
            roots.append(src)
        roots.append(project_root)
        inside = [root for root in roots if root.is_relative_to(project_root)]
        return cls(known, tuple(dict.fromkeys(inside)))

    def names(self, path: Path) -> dict[Path, str]:
        """The file's dotted name under each root it can be imported from."""
        found: dict[Path, str] = {}
        for root in self.roots:
            name = module_name(path, root)
            if name is not None:
                found[root] = name
        return found

    def is_package(self, path: Path) -> bool:
        return path.stem == "__init__"

    def file_of(self, name: str, root: Path) -> Path | None:
        """The project file a dotted name under ``root`` denotes (a module or a package's ``__init__``)."""
        base = root.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".pyi"),
                          base / "__init__.pyi"):
            if candidate in self.files:
                return candidate
        return None

    def absolute(self, importer: Path, root: Path, level: int, module: str | None) -> str | None:
        """The absolute module a ``from`` import of ``importer`` names, under ``root`` (None if it cannot)."""
        if not level:
            return module or None
        return absolute_module(module_name(importer, root), self.is_package(importer), level, module)

    def module_imports(self, tree: ast.Module, importer: Path, root: Path) -> set[str]:
        """The project modules a file imports when it is imported (module level, ``TYPE_CHECKING`` left out)."""
        found: set[str] = set()
        for stmt in _module_level(tree.body):
            if isinstance(stmt, ast.Import):
                found.update(alias.name for alias in stmt.names)
            elif isinstance(stmt, ast.ImportFrom):
                base = self.absolute(importer, root, stmt.level, stmt.module)
                if base is None:
                    continue
                submodules = {f"{base}.{alias.name}" for alias in stmt.names
                              if self.file_of(f"{base}.{alias.name}", root) is not None}
                found.update(submodules)
                if len(submodules) < len(stmt.names):
                    found.add(base)  # names read from the module itself
        own = module_name(importer, root)
        return {name for name in found if name != own and self.file_of(name, root) is not None}


def module_name(path: Path, root: Path) -> str | None:
    """``path``'s dotted name when imported from ``root`` (None when it is not under it or a part is no identifier)."""
    if path.suffix not in PYTHON_SUFFIXES or not path.is_relative_to(root):
        return None
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def absolute_module(importer: str | None, importer_is_package: bool, level: int, module: str | None) -> str | None:
    """The module ``from {'.' * level}{module} import ...`` names in the module ``importer`` (None when it
    cannot: no importer name, or beyond the top-level package)."""
    if not level:
        return module or None
    if importer is None:
        return None
    parts = importer.split(".")
    package = parts if importer_is_package else parts[:-1]
    if level > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, *([module] if module else [])]) or None


def relative_reference(importer: str, importer_is_package: bool, target: str) -> str | None:
    """``target`` written relative to the module ``importer`` (``.keys``, ``..util``), or None when they
    do not share a top-level package."""
    package = importer.split(".") if importer_is_package else importer.split(".")[:-1]
    wanted = target.split(".")
    if not package or wanted[0] != package[0]:
        return None
    common = 0
    while common < min(len(package), len(wanted)) and package[common] == wanted[common]:
        common += 1
    level = len(package) - common + 1
    return "." * level + ".".join(wanted[common:])


def _package_root(path: Path, files: frozenset[Path]) -> Path:
    """The folder above the top package holding ``path`` (its own folder when it is in no package)."""
    folder = path.parent
    while (folder / "__init__.py") in files or (folder / "__init__.pyi") in files:
        folder = folder.parent
    return folder


def _module_level(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Statements run when a module is imported: not in defs or classes' methods, not under ``TYPE_CHECKING``."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(stmt, ast.If) and is_type_checking(stmt.test):
            yield from _module_level(stmt.orelse)
            continue
        yield stmt
        if isinstance(stmt, ast.ClassDef):
            yield from _module_level(stmt.body)
        else:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(stmt, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    yield from _module_level(block)
            for handler in getattr(stmt, "handlers", []) or []:
                yield from _module_level(handler.body)


def is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING`` (the test of an import block for type checkers only)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
