"""Scope-aware Python references and renames: the symbol index finds the name, jedi says which are *it*.

Every reference to a symbol spells its name, so the symbol index's occurrences of the name
(code only, never comments or strings) are the complete list of candidates. jedi then resolves
each candidate (``goto``, imports followed) and keeps those that lead to the symbol's own
definition: ``Job.run`` and not ``Timer.run``, a parameter annotated ``state: StateBlock`` and
not an unrelated ``state``. A candidate jedi cannot resolve (an attribute of an unannotated
parameter) is *name-based*: reported as such, renamed only when asked. This has no cap on the
files searched (jedi's own project search stops after 30 files that contain the name).

Why jedi (measured against rope on a vendored ``markdown_it``, ``bench/rename_bench.py``): both
agree on module-level functions and classes, but rope ignores annotations, so it could not tie
``state.skipSpaces(...)`` to ``StateBlock.skipSpaces`` and would have renamed 1 of 4 uses.

jedi never runs project code: modules are parsed, not imported; the only imports are of compiled
extension modules, which jedi limits to its environment's paths (``load_unsafe_extensions`` is
off) — and that environment here is this interpreter with every path inside the workspace, the
working folder and ``''`` removed, so a ``.so`` an agent dropped into the project is never loaded.
"""

from __future__ import annotations

import keyword
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.code_intel import identifiers
from codeward.engines.code_intel.parse_cache import guard_parse_cache
from codeward.kernel.result import ErrorKind, Result

_JEDI_LOCK = threading.Lock()
"""jedi keeps process-wide caches and is not thread-safe: one inference at a time (a library guard,
not codeward state)."""


@dataclass(frozen=True)
class Definition:
    """Where a symbol is defined: jedi's key for it, and how to show it."""

    path: Path
    line: int
    column: int
    """0-based, as jedi counts."""
    name: str
    kind: str


@dataclass(frozen=True)
class Candidate:
    """One occurrence of the name in code (1-based line and character column)."""

    path: Path
    line: int
    column: int
    text: str


@dataclass(frozen=True)
class Verdict:
    candidate: Candidate
    sure: bool
    definition: bool
    other: bool = False
    """jedi tied it to another symbol of the project (neither sure nor unsure)."""
    reason: str = ""
    """Why an unsure verdict is unsure."""


def check_new_name(new_name: str, old_name: str) -> Result[str]:
    """A new Python name: an identifier that is not a keyword
    (see :func:`codeward.engines.code_intel.identifiers.check_new_name`)."""
    return identifiers.check_new_name(new_name, old_name, keyword.kwlist, language="Python")


def _environment(excluded: tuple[Path, ...]) -> object:
    """This interpreter, minus every search path an agent could have written an extension module to."""
    from jedi.api.environment import InterpreterEnvironment  # type: ignore[import-untyped]

    class InstalledOnly(InterpreterEnvironment):  # type: ignore[misc]
        def get_sys_path(self) -> list[str]:
            paths: list[str] = []
            for entry in super().get_sys_path():
                if not entry or not os.path.isabs(entry):
                    continue
                real = Path(os.path.realpath(entry))
                if not any(real == folder or real.is_relative_to(folder) for folder in excluded):
                    paths.append(entry)
            return paths

    return InstalledOnly()


@dataclass
class Resolver:
    """jedi over one project root; ``read`` gives a file's text (through the workspace gate)."""

    root: Path
    excluded: tuple[Path, ...]
    read: Callable[[Path], str | None]

    def __post_init__(self) -> None:
        import jedi  # type: ignore[import-untyped]

        guard_parse_cache()
        self._environment = _environment((*self.excluded, Path(os.getcwd()).resolve()))
        # The project's own sources come first: a ``src/`` layout's package (which tests import by its
        # name) before any installed copy of it, which jedi would otherwise follow out of the project.
        sources = [str(folder) for folder in source_folders(self.root)]
        self._project = jedi.Project(self.root, load_unsafe_extensions=False,
                                     sys_path=[*sources, *self._environment.get_sys_path()])  # type: ignore[attr-defined]
        self._scripts: dict[Path, object] = {}

    def _script(self, path: Path) -> object | None:
        import jedi  # type: ignore[import-untyped]

        script = self._scripts.get(path)
        if script is None:
            text = self.read(path)
            if text is None:
                return None
            script = self._scripts[path] = jedi.Script(code=text, path=path, project=self._project,
                                                        environment=self._environment)
        return script

    def define(self, path: Path, line: int, column: int) -> Result[Definition]:
        """The definition the name at ``line``/``column`` (1-based) of ``path`` refers to."""
        with _JEDI_LOCK:
            script = self._script(path)
            if script is None:
                return Result.fail(ErrorKind.NOT_FOUND, f"{path.name} cannot be read", data=None)
            try:
                names = script.goto(line, column - 1, follow_imports=True)  # type: ignore[attr-defined]
            except ValueError as exc:
                return Result.fail(ErrorKind.INVALID_INPUT, f"line {line}, column {column} is not in the file: {exc}",
                                   "Give a line and column inside the file (both 1-based).", data=None)
        found = [name for name in names if name.module_path is not None and name.line is not None]
        if not found:
            return Result.fail(ErrorKind.NOT_FOUND, "jedi cannot tell what the name there refers to",
                               "Point at the definition itself (name=...), or at a use whose type is clear.",
                               data=None)
        name = found[0]
        return Result.success(Definition(Path(name.module_path), name.line, name.column, name.name, name.type))

    def judge(self, candidates: Iterable[Candidate], target: Definition,
              progress: Callable[[int], None] | None = None) -> list[Verdict]:
        """Each candidate: sure (it leads to ``target``), unsure (unresolvable, or followed out of the project),
        or another symbol of the project."""
        verdicts: list[Verdict] = []
        key = (target.path, target.line, target.column)
        for count, candidate in enumerate(candidates, 1):
            if progress is not None and count % 200 == 0:
                progress(count)
            with _JEDI_LOCK:
                script = self._script(candidate.path)
                if script is None:
                    continue
                try:
                    names = script.goto(candidate.line, candidate.column - 1,  # type: ignore[attr-defined]
                                        follow_imports=True)
                except ValueError:
                    continue
            places = {(Path(n.module_path), n.line, n.column) for n in names if n.module_path is not None}
            at_definition = (candidate.path, candidate.line, candidate.column - 1) == key
            if key in places or at_definition:
                verdicts.append(Verdict(candidate, True, at_definition))
            elif not names:
                verdicts.append(Verdict(candidate, False, False, reason="jedi cannot tell what it refers to"))
            elif places and all(not self._inside(path) for path, _line, _column in places):
                verdicts.append(Verdict(candidate, False, False, reason="jedi followed it out of the project "
                                                                        "(an installed copy?)"))
            else:
                verdicts.append(Verdict(candidate, False, False, other=True))
        return verdicts

    def _inside(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        return any(real == folder or real.is_relative_to(folder) for folder in self.excluded)


def source_folders(root: Path) -> list[Path]:
    """Folders of a project that hold its importable packages besides the root: ``src/`` (the "src layout")."""
    source = root / "src"
    return [source] if source.is_dir() and not (source / "__init__.py").exists() else []


def renamed_text(text: str, spans: list[tuple[int, int]], old: str, new: str) -> str:
    """``text`` with the identifier at each (1-based line, column) replaced; positions must hold ``old``."""
    lines = text.split("\n")
    for line, column in sorted(set(spans), reverse=True):
        current = lines[line - 1]
        start = column - 1
        if current[start:start + len(old)] != old:
            raise ValueError(f"line {line}, column {column} does not hold {old!r}")
        lines[line - 1] = current[:start] + new + current[start + len(old):]
    return "\n".join(lines)
