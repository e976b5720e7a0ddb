"""What every analyzer shares: the files it is given, what it returns, how it runs a program.

An analyzer is a function ``analyze(files, runner) -> Findings``: it builds a command line,
runs it through the :class:`ToolRunner` (which finds the executable and bounds the run) and
parses the program's output into :class:`Findings`. When it cannot do its job — the program
is missing, hangs, or prints something unreadable — it raises :class:`AnalyzerFailure`,
which the engine turns into a per-analysis error so that the other analyses still report.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codeward.config.review import ReviewSettings
from codeward.engines.review.models import AnalysisType, Issue
from codeward.engines.review.project_config import ProjectConfig
from codeward.engines.review.runner import Completed, Launcher, locate
from codeward.kernel.result import ErrorInfo, ErrorKind


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to analyze: its real path, the path users see, and its review language."""

    path: Path
    display: str
    language: str


@dataclass
class Findings:
    """What analyzers report: issues, plus the measurements metrics and gates are built from."""

    issues: list[Issue] = field(default_factory=list)
    complexities: dict[Path, list[float]] = field(default_factory=dict)
    """Cyclomatic complexity of every function, per file."""
    maintainability: dict[Path, float] = field(default_factory=dict)
    """Maintainability index (0-100) per file."""


class AnalyzerFailure(Exception):
    """An analyzer could not run or be understood; carries the user-facing error."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


class FileIndex:
    """Maps the paths analyzers print (absolute, or relative to their cwd) back to files."""

    def __init__(self, files: Iterable[SourceFile], workdir: Path) -> None:
        self.workdir = workdir
        self._by_path = {str(f.path): f for f in files}

    def lookup(self, raw: str) -> SourceFile | None:
        candidate = raw if os.path.isabs(raw) else os.path.join(self.workdir, raw)
        return self._by_path.get(os.path.normpath(candidate))


@dataclass(frozen=True)
class ToolRunner:
    """Runs one analyzer program in the private working directory, within the configured bounds,
    through the launcher (the review's sandbox)."""

    config: ReviewSettings
    workdir: Path
    cancelled: threading.Event
    launcher: Launcher
    project: ProjectConfig = field(default_factory=ProjectConfig)
    """The reviewed project's analyzer configuration (empty when the review is isolated)."""

    def run(self, tool: str, arguments: Sequence[str], ok_exit_codes: Iterable[int], *,
            cwd: Path | None = None) -> Completed:
        """Run ``tool`` in the private directory (or ``cwd``), within the time limit."""
        located = locate(tool, self.config)
        if not located.ok:
            raise AnalyzerFailure(located.errors[0])
        finished = self.launcher.run([located.data, *arguments], cwd=cwd or self.workdir,
                                     timeout=self.config.timeout_seconds, cancelled=self.cancelled)
        if not finished.ok:
            raise AnalyzerFailure(finished.errors[0])
        completed = finished.data
        if completed.returncode not in set(ok_exit_codes):
            raise failure(f"{tool} exited with status {completed.returncode}: "
                          f"{completed.stderr_tail() or completed.stdout[-600:].strip() or 'no output'}",
                          f"Run `{tool}` on the file yourself to see the problem.")
        return completed


def failure(message: str, hint: str = "", kind: ErrorKind = ErrorKind.INTERNAL) -> AnalyzerFailure:
    return AnalyzerFailure(ErrorInfo(kind, message, hint))


Analyze = Callable[[Sequence[SourceFile], ToolRunner], Findings]


@dataclass(frozen=True)
class Analyzer:
    """One analysis type for some languages, done by one program."""

    analysis_type: AnalysisType
    tool: str
    languages: frozenset[str]
    analyze: Analyze
    install: str = ""
    """How to install it, for the optional analyzers (not codeward dependencies); empty for the others."""

    @property
    def optional(self) -> bool:
        return bool(self.install)


def paths(files: Sequence[SourceFile]) -> list[str]:
    return [str(f.path) for f in files]
