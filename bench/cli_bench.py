"""What the command line costs at start-up: the CLI libraries one could build on, and ``codeward`` itself.

Every ``codeward`` run (``serve`` started by an MCP client included) pays for the CLI layer
before it does anything, so the library it is built on is chosen by import cost. In one run,
fresh interpreters take turns (the order rotates, so a burst of load hits each alike):

- baseline — ``python -c pass``;
- ``import argparse`` / ``click`` / ``typer`` / ``cyclopts`` / ``argcomplete`` / ``shtab`` (each
  where installed for ``--python``; a library that is not is reported as such);
- ``codeward --help`` (every command's parser built) and ``codeward completion bash``.

The table gives the median wall time, the spread, and the median per-round ratio to the
baseline; "extra" is the median minus the baseline's, what the library adds to a start.

    .venv/bin/python bench/cli_bench.py [--runs 9] [--python OTHER_PYTHON_WITH_TYPER_ETC]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

LIBRARIES = ("argparse", "click", "typer", "cyclopts", "argcomplete", "shtab")


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def installed(python: str, module: str) -> bool:
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", default=sys.executable, help="interpreter the libraries are imported in")
    args = parser.parse_args()
    codeward = str(Path(sys.executable).with_name("codeward"))
    cases: dict[str, list[str]] = {"baseline (python -c pass)": [args.python, "-c", "pass"]}
    missing = []
    for module in LIBRARIES:
        if installed(args.python, module):
            cases[f"import {module}"] = [args.python, "-c", f"import {module}"]
        else:
            missing.append(module)
    cases["codeward --help"] = [codeward, "--help"]
    cases["codeward completion bash"] = [codeward, "completion", "bash"]
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    for run in range(args.runs):
        order = names[run % len(names):] + names[:run % len(names)]
        this = {name: timed(cases[name]) for name in order}
        for name in names:
            times[name].append(this[name])
            ratios[name].append(this[name] / this[names[0]])
    base = statistics.median(times[names[0]])
    print(f"{'case':<28} {'median ms':>10} {'min-max ms':>15} {'extra ms':>9} {'ratio':>6}")
    for name in names:
        med = statistics.median(times[name])
        spread = f"{min(times[name]) * 1000:.0f}-{max(times[name]) * 1000:.0f}"
        print(f"{name:<28} {med * 1000:>10.0f} {spread:>15} {(med - base) * 1000:>9.0f} "
              f"{statistics.median(ratios[name]):>6.2f}")
    if missing:
        print(f"not installed for {args.python}: {', '.join(missing)} "
              "(pass --python with an interpreter that has them)")


if __name__ == "__main__":
    main()
