"""Choosing the files a review reads: one file, or a gated walk of a directory with globs.

Directory walks go through :func:`codeward.engines.files.walk.walk`, so entries that resolve outside
the workspace, blacklisted files, ``.git`` and ``.gitignore``-d paths never reach an analyzer.
Include and exclude globs use gitignore syntax and are matched against paths relative to
the analysed directory (``*.py`` matches at any depth, ``**/tests/**`` any tests folder).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pathspec

from codeward.engines.files.walk import walk
from codeward.engines.review.analyzers import EXTENSIONS, SourceFile, language_of
from codeward.kernel import state_dir
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Workspace

ALWAYS_EXCLUDED: tuple[str, ...] = (
    "__pycache__/", "node_modules/", ".venv/", "venv/", ".tox/", ".nox/", ".mypy_cache/", ".ruff_cache/",
    ".pytest_cache/", f"{state_dir.NAME}/", "site-packages/",
)
"""Caches, virtual environments and vendored packages: never the project's own code."""
MAX_FILES = 5000
MAX_PATTERNS = 100
MAX_PATTERN_CHARS = 500


def compile_patterns(patterns: Sequence[str] | None, param: str) -> Result[pathspec.PathSpec | None]:  # type: ignore[type-arg]
    """A matcher for gitignore-style globs, or an error naming the bad pattern."""
    if patterns is None:
        return Result.success(None)
    if len(patterns) > MAX_PATTERNS:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} has {len(patterns)} patterns; the limit is "
                           f"{MAX_PATTERNS}", "Combine them with ** wildcards.")
    for pattern in patterns:
        problem = _pattern_problem(pattern)
        if problem:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{param} pattern {pattern!r} {problem}",
                               "Write globs relative to the analysed directory, such as '**/*.py', "
                               "'src/**' or '**/test_*.py'.")
    try:
        return Result.success(pathspec.GitIgnoreSpec.from_lines(patterns))
    except ValueError as exc:  # GitWildMatchPatternError is a ValueError
        return Result.fail(ErrorKind.INVALID_INPUT, f"{param} has an invalid glob: {exc}",
                           "Use gitignore-style globs such as '**/*.py'.")


def _pattern_problem(pattern: object) -> str:
    if not isinstance(pattern, str) or not pattern.strip():
        return "is empty"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"is longer than {MAX_PATTERN_CHARS} characters"
    if "\x00" in pattern:
        return "contains a NUL byte"
    if ".." in pattern.replace("\\", "/").split("/"):
        return "contains '..'; patterns only select files inside the analysed directory"
    return ""


def source_file(workspace: Workspace, real: Path) -> SourceFile | None:
    language = language_of(real)
    return SourceFile(real, workspace.display(real), language) if language else None


def unsupported_file_hint() -> str:
    suffixes = ", ".join(sorted(EXTENSIONS))
    return f"Review reads source files with these suffixes: {suffixes}."


def select_files(
    workspace: Workspace,
    top: Path,
    include: pathspec.PathSpec | None,  # type: ignore[type-arg]
    exclude: pathspec.PathSpec | None,  # type: ignore[type-arg]
) -> Result[list[SourceFile]]:
    """The supported source files under ``top`` that the globs keep, in walk order."""
    skipped = pathspec.GitIgnoreSpec.from_lines(ALWAYS_EXCLUDED)
    selected: list[SourceFile] = []
    for entry in walk(workspace, top, include_dirs=False):
        if skipped.match_file(entry.rel):
            continue
        if include is not None and not include.match_file(entry.rel):
            continue
        if exclude is not None and exclude.match_file(entry.rel):
            continue
        source = source_file(workspace, entry.path.resolve())
        if source is None:
            continue
        selected.append(source)
        if len(selected) > MAX_FILES:
            return Result.fail(ErrorKind.TOO_LARGE, f"{workspace.display(top)} holds more than {MAX_FILES} "
                               "source files", "Analyze a subdirectory, or narrow the selection with "
                               "include_patterns / exclude_patterns.", data=[])
    return Result.success(selected)
