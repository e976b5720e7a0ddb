"""The analyzers and the languages they understand, as tables (dispatch is a lookup).

Python gets every analysis type. The languages lizard reads get complexity; shell scripts,
C/C++ and JavaScript/TypeScript are linted too, by shellcheck, cppcheck and Biome. Those three
are optional: they are not Python packages, so a review without them says that they are not
installed and how to install them, and goes on.
"""

from __future__ import annotations

from pathlib import PurePath
from types import MappingProxyType

from codeward.engines.review.analyzers import bandit, biome, cppcheck, lizard, mypy, radon, ruff, shellcheck, vulture
from codeward.engines.review.analyzers.base import Analyzer, AnalyzerFailure, Findings, SourceFile, ToolRunner
from codeward.engines.review.models import AnalysisType

PYTHON = frozenset({"python"})
LIZARD_LANGUAGES = frozenset({"c", "cpp", "java", "javascript", "typescript", "go", "rust", "csharp", "kotlin",
                              "scala", "swift", "ruby", "php", "lua", "objectivec"})

EXTENSIONS: MappingProxyType[str, str] = MappingProxyType({
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".java": "java",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".go": "go", ".rs": "rust", ".cs": "csharp", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala",
    ".swift": "swift", ".rb": "ruby", ".php": "php", ".lua": "lua", ".m": "objectivec",
    ".sh": "shell", ".bash": "shell", ".ksh": "shell",
})
"""File suffix (lower case) to review language."""

ANALYZERS: tuple[Analyzer, ...] = (
    Analyzer("lint", "ruff", PYTHON, ruff.analyze),
    Analyzer("lint", "shellcheck", frozenset({"shell"}), shellcheck.analyze,
             install="install it with `apt install shellcheck` (or your system's package manager)"),
    Analyzer("lint", "cppcheck", frozenset({"c", "cpp"}), cppcheck.analyze,
             install="install it with `apt install cppcheck` (or your system's package manager)"),
    Analyzer("lint", "biome", frozenset({"javascript", "typescript"}), biome.analyze,
             install="install it with `npm install --global @biomejs/biome`"),
    Analyzer("type", "mypy", PYTHON, mypy.analyze),
    Analyzer("security", "bandit", PYTHON, bandit.analyze),
    Analyzer("complexity", "radon", PYTHON, radon.analyze_complexity),
    Analyzer("complexity", "lizard", LIZARD_LANGUAGES, lizard.analyze),
    Analyzer("maintainability", "radon", PYTHON, radon.analyze_maintainability),
    Analyzer("dead_code", "vulture", PYTHON, vulture.analyze),
)


def language_of(path: PurePath) -> str | None:
    """The review language of a file, or None when no analyzer reads it."""
    return EXTENSIONS.get(path.suffix.lower())


def analyzers_for(analysis_type: AnalysisType) -> tuple[Analyzer, ...]:
    return tuple(a for a in ANALYZERS if a.analysis_type == analysis_type)


def types_for(language: str) -> tuple[AnalysisType, ...]:
    """The analysis types available for a language, in table order."""
    found: list[AnalysisType] = []
    for analyzer in ANALYZERS:
        if language in analyzer.languages and analyzer.analysis_type not in found:
            found.append(analyzer.analysis_type)
    return tuple(found)


__all__ = ["ANALYZERS", "EXTENSIONS", "Analyzer", "AnalyzerFailure", "Findings", "SourceFile", "ToolRunner",
           "analyzers_for", "language_of", "types_for"]
