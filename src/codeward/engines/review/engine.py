"""Running the analyzers over a set of files and gathering what they found.

Every requested analysis type is served by the analyzers of the files' languages, each run
once over all of its files (so cross-file facts such as "this function is used elsewhere"
hold) and in parallel with the others. An analyzer that is missing, hangs or prints
nonsense yields an ``error`` entry for its analysis type; the others still report.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from codeward.config.review import ReviewSettings
from codeward.engines.review.analyzers import (
    ANALYZERS,
    Analyzer,
    AnalyzerFailure,
    Findings,
    SourceFile,
    ToolRunner,
    analyzers_for,
)
from codeward.engines.review.dedupe import merge_duplicates
from codeward.engines.review.models import AnalysisType, AnalyzerRun, Issue, Severity, at_least
from codeward.engines.review.project_config import ProjectConfig
from codeward.engines.review.runner import Launcher, locate
from codeward.kernel.redaction import Redactor

MAX_PARALLEL_ANALYZERS = 4
CONFIGURABLE = frozenset({"ruff", "mypy", "bandit", "vulture", "biome", "shellcheck"})
Progress = Callable[[int, int, str], None]


@dataclass
class Review:
    """Everything one review produced: reported issues, measurements and how each analysis went."""

    files: list[SourceFile]
    issues: list[Issue] = field(default_factory=list)
    complexities: dict[Path, list[float]] = field(default_factory=dict)
    maintainability: dict[Path, float] = field(default_factory=dict)
    lines: dict[Path, int] = field(default_factory=dict)
    runs: list[AnalyzerRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the user should know about how the review ran (configuration options not honoured...)."""

    @property
    def failed(self) -> list[AnalyzerRun]:
        return [run for run in self.runs if run.status == "error"]

    def failure_text(self) -> str | None:
        failed = self.failed
        if not failed:
            return None
        return "Analysis failed: " + "; ".join(f"{run.analysis_type} ({run.tool}): {run.message}" for run in failed)


@dataclass(frozen=True)
class _Job:
    analyzer: Analyzer
    files: tuple[SourceFile, ...]


def review(
    files: Sequence[SourceFile],
    types: Sequence[AnalysisType],
    threshold: Severity,
    *,
    config: ReviewSettings,
    cancelled: threading.Event,
    launcher: Callable[[Path], Launcher],
    progress: Progress | None = None,
    project: ProjectConfig | None = None,
) -> Review:
    """Run the analyzers of ``types`` over ``files`` with the project's configuration; keep issues at or
    above ``threshold``. ``launcher`` gives, for the review's private directory, what runs each
    analyzer (the review's sandbox). What the analyzers said passes the logs' secret redaction."""
    project = project or ProjectConfig()
    result = Review(files=list(files), lines={f.path: _count_lines(f.path) for f in files})
    jobs: list[_Job] = []
    for analysis_type in types:
        applicable = False
        for analyzer in analyzers_for(analysis_type):
            chosen = tuple(f for f in files if f.language in analyzer.languages)
            if not chosen:
                continue
            applicable = True
            if analyzer.optional and analyzer.tool not in config.executables and not locate(analyzer.tool, config).ok:
                result.runs.append(AnalyzerRun(
                    analysis_type=analysis_type, tool=analyzer.tool, status="skipped",
                    message=f"{analyzer.tool} is not installed, so {len(chosen)} files were not checked by it; "
                            f"{analyzer.install}"))
                continue
            jobs.append(_Job(analyzer, chosen))
        if not applicable:
            result.runs.append(AnalyzerRun(analysis_type=analysis_type, tool=_tools_text(analysis_type),
                                           status="skipped", message=_not_applicable(analysis_type, files)))
    with tempfile.TemporaryDirectory(prefix="codeward-review-") as workdir:
        private = Path(workdir)
        runner = ToolRunner(config, private, cancelled, launcher(private), project)
        outcomes = _run_all(jobs, runner, progress)
    scrub = Redactor()
    for job, outcome in zip(jobs, outcomes, strict=True):
        analyzer = job.analyzer
        if isinstance(outcome, AnalyzerFailure):
            result.runs.append(AnalyzerRun(analysis_type=analyzer.analysis_type, tool=analyzer.tool, status="error",
                                           message=scrub.text(outcome.info.message),
                                           hint=scrub.text(outcome.info.hint)))
            continue
        used = _configuration(analyzer.tool, config, project)
        result.runs.append(AnalyzerRun(analysis_type=analyzer.analysis_type, tool=analyzer.tool, status="ok",
                                       message=f"{len(job.files)} files{used}"))
        result.issues += [_scrubbed(issue, scrub) for issue in outcome.issues if at_least(issue.severity, threshold)]
        for path, values in outcome.complexities.items():
            result.complexities.setdefault(path, []).extend(values)
        result.maintainability.update(outcome.maintainability)
    linted = {f.display for job, outcome in zip(jobs, outcomes, strict=True)
              if job.analyzer.tool == "ruff" and not isinstance(outcome, AnalyzerFailure) for f in job.files}
    result.issues = merge_duplicates(result.issues, linted)
    result.issues.sort(key=lambda issue: (issue.file, issue.line, issue.column, issue.category, issue.rule))
    return result


def _run_all(jobs: list[_Job], runner: ToolRunner, progress: Progress | None) -> list[Findings | AnalyzerFailure]:
    """Run every job in a small pool; report each one's end, and every few seconds what still runs."""
    if not jobs:
        return []
    report = progress or (lambda _done, _total, _message: None)
    lock = threading.Lock()
    running: dict[int, float] = {}
    done = 0

    def one(number: int) -> Findings | AnalyzerFailure:
        nonlocal done
        job = jobs[number]
        started = time.monotonic()
        with lock:
            running[number] = started
        try:
            outcome: Findings | AnalyzerFailure = job.analyzer.analyze(job.files, runner)
        except AnalyzerFailure as failure:
            outcome = failure
        with lock:
            del running[number]
            done += 1
            verdict = "failed" if isinstance(outcome, AnalyzerFailure) else "finished"
            report(done, len(jobs), f"{_label(job)} {verdict} in {time.monotonic() - started:.1f} s")
        return outcome

    files = len({f.path for job in jobs for f in job.files})
    report(0, len(jobs), f"running {len(jobs)} analyses over {files} files "
                         f"(each stopped after {runner.config.timeout_seconds:g} s)")
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_ANALYZERS, len(jobs))) as pool:
        futures = [pool.submit(one, number) for number in range(len(jobs))]
        pending = set(futures)
        while pending:
            _finished, pending = wait(pending, timeout=runner.config.heartbeat_seconds,
                                           return_when=FIRST_COMPLETED)
            if pending and not _finished:
                now = time.monotonic()
                with lock:
                    still = ", ".join(f"{_label(jobs[n])} {now - t:.0f} s" for n, t in sorted(running.items()))
                    finished = done
                if still:
                    report(finished, len(jobs), f"still running: {still}")
        return [future.result() for future in futures]


def _scrubbed(issue: Issue, scrub: Redactor) -> Issue:
    """The issue with secrets cut out of what the analyzer wrote (its message and suggestion)."""
    message, suggestion = scrub.text(issue.message), scrub.text(issue.suggestion)
    if message == issue.message and suggestion == issue.suggestion:
        return issue
    return issue.model_copy(update={"message": message, "suggestion": suggestion})


def _label(job: _Job) -> str:
    return f"{job.analyzer.tool} ({job.analyzer.analysis_type})"


def _configuration(tool: str, config: ReviewSettings, project: ProjectConfig) -> str:
    """Which configuration an analyzer honoured, for the analysis summary."""
    if tool not in CONFIGURABLE:
        return ""
    if config.isolated:
        return "; isolated: the project's configuration was not read"
    used = project.used.get(tool)
    return f"; configuration: {used}" if used else "; no project configuration"


def _count_lines(path: Path) -> int:
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _tools_text(analysis_type: AnalysisType) -> str:
    return "/".join(dict.fromkeys(a.tool for a in analyzers_for(analysis_type)))


def _not_applicable(analysis_type: AnalysisType, files: Sequence[SourceFile]) -> str:
    languages = sorted({lang for a in analyzers_for(analysis_type) for lang in a.languages})
    present = sorted({f.language for f in files})
    shown = ", ".join(languages) if len(languages) <= 4 else f"{len(languages)} languages"
    return (f"{analysis_type} analysis reads {shown} files; the selection has "
            f"{', '.join(present) if present else 'no source files'}")


def all_tools() -> list[str]:
    return list(dict.fromkeys(a.tool for a in ANALYZERS))
