"""How much the sandbox costs: a Python hello world bare vs through each backend, and a
table of every language's hello world (compile and run) — with ratios against bare
``python3 -c`` measured in the same run.

Rows (median of ``--runs`` calls each):

- ``bare``: ``/usr/bin/python3 -c "print('hello')"`` as a plain subprocess (the baseline);
- ``<backend> run``: the same command through ``Sandbox.run`` (a cold sandbox per call);
- ``<backend> execute cold``: ``coding_execute_code``'s path without the warm pool (build dir,
  source file, sandbox, cleanup);
- ``<backend> execute warm``: the same with the warm pool, measured when the pool is ready
  (namespaces and interpreter started in advance; the refill happens between calls);
- ``<backend> session``: a call in a live persistent session.

    .venv/bin/python bench/sandbox_bench.py [--runs N] [--languages] [--backends bwrap,process]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from codeward.config import CodingSettings  # noqa: E402
from codeward.engines.execution.execute import Limits, execute  # noqa: E402
from codeward.engines.execution.runtime import CodingRuntime  # noqa: E402
from codeward.engines.sandbox import SandboxRequest, SandboxUnavailable, probe_sandbox  # noqa: E402

PYTHON = "/usr/bin/python3"
HELLO = "print('hello')"
LANGUAGE_HELLO = {
    "python": "print('hello')\n",
    "javascript": "console.log('hello');\n",
    "bash": "echo hello\n",
    "c": "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
    "cpp": "#include <iostream>\nint main() { std::cout << \"hello\" << std::endl; }\n",
    "go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
    "rust": "fn main() { println!(\"hello\"); }\n",
    "java": "public class Main { public static void main(String[] a) { System.out.println(\"hello\"); } }\n",
}


def paired_ms(call: Callable[[], object], runs: int, before: Callable[[], object] | None = None
              ) -> tuple[float, float]:
    """Median ms of ``call`` and of the bare baseline, measured alternately in the same loop
    (so a busy machine slows both alike)."""
    times, baseline = [], []
    for _ in range(runs):
        if before is not None:
            before()
        started = time.perf_counter()
        bare()
        baseline.append((time.perf_counter() - started) * 1000)
        if before is not None:
            before()
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), statistics.median(baseline)


def checked(result: object) -> object:
    status = getattr(result, "status", None)
    if status is not None and str(getattr(status, "value", status)) != "success":
        raise SystemExit(f"benchmark run failed: {result}")
    return result


def bare() -> None:
    done = subprocess.run([PYTHON, "-c", HELLO], capture_output=True, check=True)
    assert done.stdout == b"hello\n"


def backend_rows(name: str, runs: int) -> list[tuple[str, float, float]]:
    try:
        sandbox = probe_sandbox(name)
    except SandboxUnavailable as exc:
        print(f"# {name}: unavailable ({exc})")
        return []
    rows = [(f"{name} run (cold sandbox)",
             *paired_ms(lambda: checked(sandbox.run(SandboxRequest(argv=[PYTHON, "-I", "-c", HELLO]))), runs))]
    cold = CodingRuntime(CodingSettings(backend=name, pool_size=0))
    warm = CodingRuntime(CodingSettings(backend=name, pool_size=2))
    try:
        checked(execute(cold, "python", HELLO))
        rows.append((f"{name} execute cold", *paired_ms(lambda: checked(execute(cold, "python", HELLO)), runs)))
        pool = warm.pool()
        if pool is not None:
            pool.wait_ready(30)
            ready = pool.wait_ready
            rows.append((f"{name} execute warm pool",
                         *paired_ms(lambda: checked(execute(warm, "python", HELLO)), runs, before=lambda: ready(30))))
        checked(execute(warm, "python", "x = 0", session_id="bench"))
        rows.append((f"{name} session call",
                     *paired_ms(lambda: checked(execute(warm, "python", "x += 1", session_id="bench")), runs)))
    finally:
        cold.close()
        warm.close()
    return rows


def language_rows(runs: int, backend: str | None) -> list[tuple[str, float, float, float]]:
    runtime = CodingRuntime(CodingSettings(backend=backend, pool_size=0))
    rows = []
    try:
        for language, code in LANGUAGE_HELLO.items():
            if not runtime.toolchain(language).available:
                print(f"# {language}: unavailable ({runtime.toolchain(language).reason})")
                continue
            checked(execute(runtime, language, code, limits=Limits(timeout_s=60)))
            totals, compiles, executions = [], [], []
            for _ in range(runs):
                started = time.perf_counter()
                result = checked(execute(runtime, language, code, limits=Limits(timeout_s=60)))
                totals.append((time.perf_counter() - started) * 1000)
                compiles.append((getattr(result, "compile_time", None) or 0.0) * 1000)
                executions.append(getattr(result, "execution_time", 0.0) * 1000)
            rows.append((language, statistics.median(compiles), statistics.median(executions),
                         statistics.median(totals)))
    finally:
        runtime.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--language-runs", type=int, default=3)
    parser.add_argument("--backends", default="bwrap,process")
    parser.add_argument("--no-languages", action="store_true")
    args = parser.parse_args()

    bare()
    print(f"python hello world, median of {args.runs} calls, each paired with a bare `{PYTHON} -c` "
          "call run just before it\n")
    print(f"{'path':<34} {'ms':>8} {'bare ms':>8} {'× bare':>8}")
    baselines = []
    for name in args.backends.split(","):
        for label, ms, baseline in backend_rows(name.strip(), args.runs):
            baselines.append(baseline)
            print(f"{label:<34} {ms:8.1f} {baseline:8.1f} {ms / baseline:8.2f}")
    baseline = statistics.median(baselines) if baselines else statistics.median(
        paired_ms(bare, args.runs)[1] for _ in range(1))
    if args.no_languages:
        return
    backend = args.backends.split(",")[0].strip()
    print(f"\nhello world per language in {backend}, median of {args.language_runs} calls "
          f"(compile + run; × bare python)\n")
    print(f"{'language':<12} {'compile ms':>11} {'run ms':>8} {'total ms':>9} {'× bare':>8}")
    for language, compile_ms, run_ms, total_ms in language_rows(args.language_runs, backend):
        print(f"{language:<12} {compile_ms:11.1f} {run_ms:8.1f} {total_ms:9.1f} {total_ms / baseline:8.2f}")


if __name__ == "__main__":
    main()
