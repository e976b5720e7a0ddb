"""What running the review's analyzers in the sandbox costs: ``codeward review`` of a real
project (the vendored ``iniconfig`` package, ``tests/fixtures/review/iniconfig``) with every
analyzer in the project's sandbox (read-only, secrets covered, no network) against the same
review with the analyzers run as plain host processes — how codeward ran them before; the host
launcher lives here, in the bench, only — in the same run, the two alternated so a busy machine
slows both alike. The findings must be identical; the bench says so (and exits 1 if not).

Rows (median of ``--runs`` reviews each):

- ``review (every analysis)``: the whole review, as ``codeward review`` runs it;
- one row per analyzer: the seconds that analyzer's process took inside the review, each way.

    .venv/bin/python bench/review_sandbox.py [--runs N] [--project DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from codeward.config.review import ReviewSettings  # noqa: E402
from codeward.engines.contained.project_sandbox import ProjectAccess, ProjectSandbox  # noqa: E402
from codeward.engines.review.analyzers import language_of  # noqa: E402
from codeward.engines.review.engine import Review, review  # noqa: E402
from codeward.engines.review.models import ANALYSIS_TYPES  # noqa: E402
from codeward.engines.review.project_config import discover  # noqa: E402
from codeward.engines.review.runner import Completed, Launcher, analyzer_launcher  # noqa: E402
from codeward.engines.review.selection import select_files  # noqa: E402
from codeward.engines.sandbox.choice import Executor  # noqa: E402
from codeward.kernel.context import ToolContext  # noqa: E402
from codeward.kernel.result import ErrorKind, Result  # noqa: E402
from codeward.kernel.workspace import Workspace  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "review" / "iniconfig"
DROPPED_ENV = ("PYTHONPATH", "MYPYPATH", "PYTHONSTARTUP", "PYTHONHOME", "RUFF_CACHE_DIR", "RUFF_OUTPUT_FILE",
               "MYPY_CACHE_DIR", "BIOME_CONFIG_PATH", "SHELLCHECK_OPTS")


@dataclass
class HostLauncher:
    """The analyzers as plain host subprocesses, as codeward ran them before the sandbox (the baseline)."""

    seconds: dict[str, list[float]] = field(default_factory=dict)

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float,
            cancelled: threading.Event | None = None) -> Result[Completed]:
        env = {key: value for key, value in os.environ.items() if key not in DROPPED_ENV}
        env.update(PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1")
        started = time.perf_counter()
        process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True, text=True, errors="replace")
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return Result.fail(ErrorKind.TIMEOUT, f"{argv[0]} timed out", data=None)
        self.seconds.setdefault(_tool(argv), []).append(time.perf_counter() - started)
        return Result.success(Completed(process.returncode, stdout, stderr))


@dataclass
class TimedLauncher:
    """The sandbox launcher, with each analyzer's seconds recorded."""

    inner: Launcher
    seconds: dict[str, list[float]] = field(default_factory=dict)

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float,
            cancelled: threading.Event | None = None) -> Result[Completed]:
        started = time.perf_counter()
        done = self.inner.run(argv, cwd=cwd, timeout=timeout, cancelled=cancelled)
        self.seconds.setdefault(_tool(argv), []).append(time.perf_counter() - started)
        return done


def _tool(argv: Sequence[str]) -> str:
    name = Path(argv[0]).name
    return f"{name} {argv[1]}" if name == "radon" else name


def findings(result: Review) -> list[tuple[str, int, int, str, str, str]]:
    return sorted((i.file, i.line, i.column, i.rule, i.tool, i.message) for i in result.issues)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--project", type=Path, default=FIXTURE, help="the project to review (copied first)")
    args = parser.parse_args()
    project = Path(tempfile.mkdtemp(prefix="codeward-bench-review-")) / args.project.name
    shutil.copytree(args.project, project)
    ctx = ToolContext(Workspace.create([project]))
    config = ReviewSettings()
    files = select_files(ctx.workspace, project, None, None).data
    files = [f for f in files if language_of(f.path) is not None]
    box = ProjectSandbox.open(ctx, Executor.REVIEW, ProjectAccess.READ)
    if not box.ok or box.data is None:
        print(f"no sandbox here: {box.errors[0].message}", file=sys.stderr)
        return 2
    opened = box.data
    settings = discover([f.path for f in files], ctx.workspace)
    host, boxed = HostLauncher(), TimedLauncher(analyzer_launcher(opened, project, config.memory_mb))

    def reviewed(launcher: Launcher) -> Callable[[], Review]:
        def run() -> Review:
            return review(files, list(ANALYSIS_TYPES), "info", config=config, cancelled=threading.Event(),
                          launcher=lambda private: _rebound(launcher, private, opened, config.memory_mb),
                          project=settings)
        return run

    host_times, box_times = [], []
    host_result = box_result = None
    for _ in range(args.runs):
        started = time.perf_counter()
        host_result = reviewed(host)()
        host_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        box_result = reviewed(boxed)()
        box_times.append(time.perf_counter() - started)
    assert host_result is not None and box_result is not None
    print(f"project: {args.project.name} ({len(files)} files, {sum(host_result.lines.values())} lines); "
          f"{args.runs} runs each, medians; backend {opened.sandbox.name}")
    print(f"{'':<28}{'host s':>9}{'sandbox s':>11}{'× host':>9}")
    _row("review (every analysis)", host_times, box_times)
    for tool in sorted(host.seconds):
        _row(f"  {tool}", host.seconds[tool], boxed.seconds.get(tool, []))
    same = findings(host_result) == findings(box_result)
    failed = [run.tool for run in (*host_result.failed, *box_result.failed)]
    print(f"findings: {len(findings(host_result))} on the host, {len(findings(box_result))} in the sandbox — "
          f"{'identical' if same else 'DIFFERENT'}" + (f"; failed analyses: {failed}" if failed else ""))
    shutil.rmtree(project.parent, ignore_errors=True)
    return 0 if same and not failed else 1


def _rebound(launcher: Launcher, private: Path, box: ProjectSandbox, memory_mb: int) -> Launcher:
    """The launcher for this review's private directory (the sandbox one shows it read-only)."""
    if isinstance(launcher, TimedLauncher):
        launcher.inner = analyzer_launcher(box, private, memory_mb)
    return launcher


def _row(label: str, host: list[float], boxed: list[float]) -> None:
    if not host or not boxed:
        return
    h, b = statistics.median(host), statistics.median(boxed)
    print(f"{label:<28}{h:>9.2f}{b:>11.2f}{b / h:>9.2f}")


if __name__ == "__main__":
    sys.exit(main())
