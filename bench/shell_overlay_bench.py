"""What the workspace overlay costs run_shell: a script with the project bound read-write
directly (how run_shell ran before the overlay; the baseline) against the same script
through the overlay with its changes applied through the workspace's checks afterwards.

Rows (median of ``--runs`` calls each, the two paths alternated in one loop so a busy
machine slows both alike):

- ``echo``: a script that writes nothing (the fixed cost: namespace, mount, walk of an
  empty upper layer);
- ``write N files``: a script that writes N small files (the cost that grows with changes).

The last two columns: the same overlay with its layers on the run's disk (a size-limited tmpfs in
its namespace, the disk cap, read back through a descriptor) against the layers in the host's
temporary folder (how they lived before the cap), again alternated.

    .venv/bin/python bench/shell_overlay_bench.py [--runs N] [--files 1,100,1000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from codeward.engines.contained.write_back import apply_overlays  # noqa: E402
from codeward.engines.sandbox import SandboxRequest, probe_sandbox  # noqa: E402
from codeward.engines.sandbox.overlay import Overlays  # noqa: E402
from codeward.kernel.workspace import Workspace  # noqa: E402

DISK_MB = 1024


def paired_ms(baseline: Callable[[], object], measured: Callable[[], object], runs: int,
              reset: Callable[[], object]) -> tuple[float, float]:
    base, times = [], []
    for _ in range(runs):
        reset()
        started = time.perf_counter()
        baseline()
        base.append((time.perf_counter() - started) * 1000)
        reset()
        started = time.perf_counter()
        measured()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), statistics.median(base)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", default="1,100,1000")
    args = parser.parse_args()
    sandbox = probe_sandbox("bwrap")
    project = Path(tempfile.mkdtemp(prefix="codeward-bench-project-"))
    for index in range(200):  # a small project: the lower layer the script sees
        (project / f"module_{index}.py").write_text(f"VALUE = {index}\n")
    workspace = Workspace.create([project])

    def reset() -> None:
        shutil.rmtree(project / "out", ignore_errors=True)

    def direct(script: str) -> Callable[[], object]:
        def run() -> object:
            return sandbox.run(SandboxRequest(argv=["bash", "-c", script], workdir=str(project),
                                              rw_binds=[str(project)], memory_mb=4096, max_processes=1024))
        return run

    def overlaid(script: str, disk_mb: int | None = None) -> Callable[[], object]:
        def run() -> object:
            overlays = Overlays.create([project], disk_mb=disk_mb)
            try:
                result = sandbox.run(SandboxRequest(argv=["bash", "-c", script], workdir=str(project),
                                                    overlays=overlays, memory_mb=4096, max_processes=1024))
                apply_overlays(workspace, overlays)
            finally:
                overlays.close()
            return result
        return run

    rows = [("echo", "echo hello")]
    for count in (int(n) for n in args.files.split(",") if n):
        rows.append((f"write {count} files",
                     f"mkdir -p out && for i in $(seq {count}); do echo line $i > out/f$i.txt; done"))
    print(f"{'script':<22}{'overlay ms':>12}{'direct ms':>12}{'× direct':>10}{'on disk cap ms':>16}{'× overlay':>11}")
    try:
        for name, script in rows:
            direct(script)()  # warm the page cache and the probe
            measured, base = paired_ms(direct(script), overlaid(script), args.runs, reset)
            capped, plain = paired_ms(overlaid(script), overlaid(script, DISK_MB), args.runs, reset)
            print(f"{name:<22}{measured:>12.1f}{base:>12.1f}{measured / base:>10.2f}{capped:>16.1f}"
                  f"{capped / plain:>11.2f}")
    finally:
        shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    main()
