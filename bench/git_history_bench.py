"""What checking a repository's history for secrets costs ``run_shell`` (codeward.engines.git.history).

Clones a repository (a local path, e.g. a long-history project; default: this one) into a
temporary folder and times, in one run: the first full check, the remembered answer, the
check after one new commit (only the new objects are listed when the answer was clean), and
as baselines one hardened ``git rev-parse HEAD`` and ``git rev-list --all --count`` (a walk of
every commit). Prints each figure and its ratio to the baselines.

    .venv/bin/python bench/git_history_bench.py [REPOSITORY]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codeward.engines.git.history import check_history
from codeward.engines.git.runner import run_git
from codeward.kernel import state_dir
from codeward.kernel.workspace import Workspace, secret_paths

REPEATS = 5


def timed(action: Callable[[], object], repeats: int = 1) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    source = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
    with tempfile.TemporaryDirectory(prefix="codeward-history-bench-") as temp:
        clone = Path(temp) / "clone"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(source), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q"], check=True)
        workspace = Workspace.create([clone])
        git_dir = clone / ".git"
        state = state_dir.of(clone)
        secrets, _ = secret_paths(workspace)
        commits = run_git(["rev-list", "--all", "--count"], clone).data.stdout.strip()
        one_git = timed(lambda: run_git(["rev-parse", "HEAD"], clone), REPEATS)
        walk = timed(lambda: run_git(["rev-list", "--all", "--count"], clone, timeout=600))
        first = timed(lambda: check_history(workspace, git_dir, secrets, state))
        verdict = check_history(workspace, git_dir, secrets, state)
        cached = timed(lambda: check_history(workspace, git_dir, secrets, state), REPEATS)
        (clone / "bench-note.txt").write_text("one more commit\n")
        subprocess.run(["git", "-C", str(clone), "add", "bench-note.txt"], check=True)
        subprocess.run(["git", "-C", str(clone), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                        "commit", "-q", "-m", "bench"], check=True)
        after_commit = timed(lambda: check_history(workspace, git_dir, secrets, state))
        shutil.rmtree(state.path, ignore_errors=True)
        print(f"repository: {source.name}, {commits} commits; secrets in its history: {verdict.count} "
              f"{list(verdict.secrets)}")
        print(f"baseline: one hardened git process {one_git * 1000:8.1f} ms; walking every commit {walk:8.2f} s")
        for label, seconds in (("first check", first), ("remembered answer", cached),
                               ("after one new commit", after_commit)):
            print(f"{label:22} {seconds * 1000:10.1f} ms  x one git {seconds / one_git:8.1f}  "
                  f"x commit walk {seconds / walk:6.2f}")


if __name__ == "__main__":
    main()
