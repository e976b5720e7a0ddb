"""``search_text`` against ripgrep itself, same tree, same query, measured in one run.

The baseline is the ``rg`` that ``search_text`` runs, called the way a person would for the
same question (``rg -n --hidden PATTERN``, ``rg -l``, ``rg --count-matches``, with the same
case rule: ``search_text`` is smart-case by default, so the baseline gets ``--smart-case``) with
all of its output read. Both search the same files: the workspace root is where ignore files
stop being read, so the baseline gets ``--no-ignore-parent`` (the default tree lies inside
codeward's own checkout, whose ``.gitignore`` would otherwise hide parts of it from rg alone)
and the workspace's protected names as ``--iglob !GLOB`` (a ``credentials`` folder, ``*.pem``...,
which search_text never reads);
the bench checks that both found the same number of matching lines. ``search_text`` pays for
what it adds: the gate checks of every reported path,
the blacklist globs, sorting for stable pages, and building the bounded first page
(``limit`` matches). Target: ≤ 1.3× rg's time for every query.

The default tree is this environment's ``site-packages`` (tens of thousands of files, present
wherever codeward is installed); ``--tree`` picks another.

    .venv/bin/python bench/search_bench.py [--tree DIR] [--runs N]

Runs alternate between the two sides and the median of each is compared, so that a burst of
load on this shared machine hits both; the load average is printed first. CPU time (user +
system, of this process and its children) is printed too: it moves much less with the load.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sysconfig
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from codeward.engines.files import ripgrep
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.workspace import HARD_BLACKLIST_NAMES, HARD_BLACKLIST_SUFFIX, Workspace
from codeward.tools import default_catalog

TARGET = 1.3
QUERIES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("rare literal (pure scan)", {"pattern": "zq_no_such_text_qz", "literal": True},
     ["-n", "--fixed-strings"]),
    ("rare literal, exact case", {"pattern": "ZqNoSuchText", "literal": True}, ["-n", "--fixed-strings"]),
    ("selective regex", {"pattern": r"def __init_subclass__\(", "case": "sensitive"}, ["-n"]),
    ("common word, first page", {"pattern": "import", "limit": 100}, ["-n"]),
    ("common word, context 2", {"pattern": r"raise \w+Error", "context": 2, "limit": 100}, ["-n", "-C2"]),
    ("files that match", {"pattern": "asyncio", "mode": "files"}, ["-l"]),
    ("matches per file", {"pattern": "self", "mode": "count"}, ["--count-matches"]),
    ("py files only", {"pattern": "TODO", "file_type": "py"}, ["-n", "--type=py"]),
]


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one call."""
    gc.collect()
    cpu = _cpu()
    started = time.perf_counter()
    run()
    return time.perf_counter() - started, _cpu() - cpu


def _ours(catalog: Catalog, arguments: dict[str, Any], ctx: ToolContext, into: list[Any]) -> None:
    into.append(catalog.call("search_text", arguments, ctx))


def _theirs(command: list[str], tree: Path, into: list[Any]) -> None:
    into.append(subprocess.run(command, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False))


def _check_same(report: dict[str, Any] | None, output: bytes, rg_args: list[str]) -> None:
    """Stop the bench when the two sides did not find the same thing (the ratio would mean nothing)."""
    if report is None or not report["complete"]:
        return
    lines = [line for line in output.splitlines() if line]
    if "-l" in rg_args:
        theirs = len(lines)
    elif "--count-matches" in rg_args:
        theirs = sum(int(line.rsplit(b":", 1)[1]) for line in lines)
    else:
        theirs = sum(1 for line in lines if b":" in line and line.split(b":", 2)[1].isdigit())
    if theirs != report["total"]:
        raise SystemExit(f"search_text found {report['total']}, rg {theirs}: not the same query")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=Path(sysconfig.get_paths()["purelib"]))
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    tree = options.tree.resolve()
    binary = ripgrep.find_binary()
    if binary is None:
        print("ripgrep is not installed (pip install ripgrep)")
        return 1
    files = sum(len(names) for _dir, _dirs, names in os.walk(tree))
    print(f"load average {os.getloadavg()[0]:.2f}; tree {tree} ({files:,} files); rg {binary}")
    catalog = default_catalog()
    ctx = ToolContext(Workspace.create([tree]))
    protected = [f"--iglob=!{glob}" for glob in (*ctx.workspace.blacklist_globs, *sorted(HARD_BLACKLIST_NAMES),
                                                 f"*{HARD_BLACKLIST_SUFFIX}")]
    worst = 0.0
    print(f"{'query':<28} {'search_text':>12} {'rg':>9} {'ratio':>7} {'cpu ratio':>10}  result")
    for label, arguments, rg_args in QUERIES:
        ours: list[tuple[float, float]] = []
        theirs: list[tuple[float, float]] = []
        first = ""
        case = {"smart": "--smart-case", "sensitive": "--case-sensitive", "insensitive": "--ignore-case"}[
            arguments.get("case", "smart")]
        command = [binary, "--hidden", "--no-require-git", "--no-ignore-parent", *protected, case, *rg_args,
                   "--regexp", arguments["pattern"], "./"]
        for _ in range(options.runs):
            outcome: list[Any] = []
            ours.append(timed(partial(_ours, catalog, arguments, ctx, outcome)))
            theirs.append(timed(partial(_theirs, command, tree, outcome)))
            first = outcome[0].text.splitlines()[0] if outcome[0].text else ""
        _check_same(outcome[0].structured, outcome[1].stdout, rg_args)
        mine, base = statistics.median(t for t, _ in ours), statistics.median(t for t, _ in theirs)
        cpu_ratio = statistics.median(c for _, c in ours) / max(statistics.median(c for _, c in theirs), 1e-9)
        ratio = mine / base
        worst = max(worst, ratio)
        print(f"{label:<28} {mine:>10.3f} s {base:>7.3f} s {ratio:>6.2f}x {cpu_ratio:>9.2f}x  {first[:60]}",
              flush=True)
    verdict = "met" if worst <= TARGET else "NOT met"
    print(f"worst ratio {worst:.2f}x (target ≤ {TARGET}x: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
