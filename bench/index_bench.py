"""The symbol index against universal-ctags and ripgrep, measured in one run.

Corpora: the Python standard library (the ``sysconfig`` stdlib directory, copied without
``site-packages`` and ``__pycache__`` so that all three tools read the same files) and
``/usr/include``. For each:

* **cold index** — an empty index asked for definitions (what ``find_symbol`` does on a
  fresh repository: the universal-ctags quick tier), against ``ctags -R`` (target ≤ 1x);
  then lookups in that tier;
* **references pass** — the refresh that follows when a question needs references (the
  tree-sitter pass replacing the quick tier), and the two together: what a full index costs
  (no target; for reference against ctags, which builds no references);
* **no-change re-index** — a refresh when nothing changed (target ≤ 0.3 s);
* **definition lookup** — ``find`` of sampled names, median and p95 per lookup (target
  ≤ 5 ms), in the quick tier and in the full index; ``readtags`` on ctags' sorted tags
  file is shown for reference (it includes a process start);
* **repository-wide usages** — every use of sampled names (exact positions and line text),
  against ``rg -w -n NAME`` over the same tree (target ≤ 1x);
* on the standard library, **parsing alone**: stdlib ``ast.parse`` against tree-sitter's
  Python grammar, one process, CPU time (why the index parses Python with tree-sitter).

    .venv/bin/python bench/index_bench.py [--corpus stdlib|include|all] [--samples N]

Timings are wall-clock on this machine, under whatever else it is running: the load
average is printed first, and each ratio compares runs made seconds apart. Each timed
call starts after a garbage collection, so that it does not pay for the garbage of the
bench's own bookkeeping (``timeit`` goes further and turns collection off).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeward.engines.code_intel.symbol_index import SymbolIndex
from codeward.engines.code_intel.tags_file import SortedTags
from codeward.kernel.workspace import Workspace

NO_CHANGE_TARGET = 0.3
LOOKUP_TARGET_MS = 5.0


@dataclass
class Row:
    corpus: str
    metric: str
    ours: float
    baseline: float | None
    baseline_name: str
    unit: str
    target: str

    def ratio(self) -> str:
        return f"{self.ours / self.baseline:.2f}x" if self.baseline else "—"


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    def add(self, *args: object) -> None:
        self.rows.append(Row(*args))  # type: ignore[arg-type]
        row = self.rows[-1]
        base = f"{row.baseline:.3f} {row.unit} ({row.baseline_name})" if row.baseline else row.baseline_name
        print(f"  {row.metric:<28} ours {row.ours:.3f} {row.unit}   baseline {base}   ratio {row.ratio()}",
              flush=True)

    def table(self) -> str:
        header = f"{'corpus':<10} {'metric':<28} {'codeward':>12} {'baseline':>28} {'ratio':>8}  target"
        lines = [header, "-" * len(header)]
        for row in self.rows:
            ours = f"{row.ours:.3f} {row.unit}"
            base = f"{row.baseline:.3f} {row.unit} {row.baseline_name}" if row.baseline else row.baseline_name
            lines.append(f"{row.corpus:<10} {row.metric:<28} {ours:>12} {base:>28} {row.ratio():>8}  {row.target}")
        return "\n".join(lines)


def timed(action: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run_quiet(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)


def copy_stdlib(target: Path) -> Path:
    source = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("site-packages", "__pycache__"), symlinks=True)
    return target


def bench_corpus(label: str, tree: Path, work: Path, samples: int, report: Report) -> None:
    print(f"\n== {label}: {tree}", flush=True)
    workspace = Workspace.create([tree])
    db_path = work / f"{label}.sqlite"
    for stale in work.glob(f"{label}.sqlite*"):
        stale.unlink()

    rng = random.Random(7)
    tags = work / f"{label}.tags"
    with SymbolIndex.open(workspace, db_path=db_path).data as index:
        quick = index.refresh(references=False)
        ctags = timed(lambda: run_quiet(["ctags", "-R", "-f", str(tags), str(tree)]))
        tier = f"quick tier: {quick.definitions_only} files by universal-ctags" if quick.definitions_only else "exact"
        print(f"  definitions of {quick.scanned} files ({tier})", flush=True)
        report.add(label, "cold index", quick.seconds, ctags, "ctags -R", "s", "≤ 1x ctags")
        with SortedTags.in_directory(index.quick_dir) as quick_tags:
            quick_names = sorted({name for name, _path in quick_tags.names()})
        if quick_names:
            _lookups(index, label, "lookup (quick tier)", rng.sample(quick_names, min(samples, len(quick_names))),
                     tags, report)

        references = timed(index.refresh)
        counts = index.counts()
        print(f"  indexed {counts['files']} files, {counts['definitions']} definitions, "
              f"{counts['identifiers']} identifier rows", flush=True)
        report.add(label, "references pass", references, None, "", "s", "(none)")
        report.add(label, "cold full index", quick.seconds + references, ctags, "ctags -R", "s",
                   "(none: ctags has no references)")

    with SymbolIndex.open(workspace, db_path=db_path).data as index:
        no_change = statistics.median(timed(index.refresh) for _ in range(5))
        report.add(label, "no-change re-index", no_change, None, "(ctags: none)", "s", f"≤ {NO_CHANGE_TARGET} s")

        all_names = [row[0] for row in index.connection.execute(
            "SELECT DISTINCT name FROM symbols WHERE kind IN ('class', 'function', 'method', 'struct', 'macro',"
            " 'typedef', 'prototype') ORDER BY name")]
        _lookups(index, label, "lookup", rng.sample(all_names, min(samples, len(all_names))), tags, report)

        usage_names = _usage_sample(index, rng, max(12, samples // 10))
        ours_total = 0.0
        rg_total = 0.0
        found_ours = 0
        found_rg = 0
        worst = (0.0, 0.0, "")
        for name in usage_names:
            gc.collect()
            started = time.perf_counter()
            usages, _total = index.usages(name, limit=1_000_000)
            ours = time.perf_counter() - started
            found_ours += len(usages)
            started = time.perf_counter()
            done = run_quiet(["rg", "-w", "-n", "--no-heading", "-F", name, str(tree)])
            theirs = time.perf_counter() - started
            found_rg += done.stdout.count(b"\n")
            ours_total += ours
            rg_total += theirs
            if ours > worst[0]:
                worst = (ours, theirs, name)
        count = len(usage_names)
        report.add(label, "usages (mean)", ours_total / count, rg_total / count, "rg -w", "s", "≤ 1x rg")
        report.add(label, "usages (worst name)", worst[0], worst[1], "rg -w", "s", "≤ 1x rg")
        print(f"  usages of {count} names: {found_ours} in code (ours), {found_rg} matching lines (rg, "
              f"comments, strings and other file types included); worst: {worst[2]!r}", flush=True)


def _lookups(index: SymbolIndex, label: str, metric: str, names: list[str], tags: Path, report: Report) -> None:
    """Median and p95 of ``find`` over ``names``, with ``readtags`` on ctags' file for reference."""
    lookups = []
    gc.collect()
    for name in names:
        started = time.perf_counter()
        index.find(name)
        lookups.append((time.perf_counter() - started) * 1000)
    lookups.sort()
    readtags = []
    for name in names[:20]:
        started = time.perf_counter()
        run_quiet(["readtags", "-t", str(tags), name])
        readtags.append((time.perf_counter() - started) * 1000)
    report.add(label, f"{metric} median", statistics.median(lookups), statistics.median(readtags),
               "readtags", "ms", f"≤ {LOOKUP_TARGET_MS:.0f} ms")
    report.add(label, f"{metric} p95", lookups[max(0, int(len(lookups) * 0.95) - 1)], None, "", "ms",
               f"≤ {LOOKUP_TARGET_MS:.0f} ms")


def bench_parsers(tree: Path, report: Report) -> None:
    """CPU seconds to parse every .py file once: ``ast.parse`` against tree-sitter."""
    import ast
    import warnings

    from codeward.engines.code_intel.treesitter import get_parser

    sources = [path.read_bytes() for path in sorted(tree.rglob("*.py"))]
    parser = get_parser("python")
    started = time.process_time()
    for source in sources:
        parser.parse(source)
    sitter = time.process_time() - started
    started = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in sources:
            with contextlib.suppress(SyntaxError, ValueError):  # a few test files are invalid on purpose
                ast.parse(source)
    stdlib_ast = time.process_time() - started
    report.add("stdlib", "parse .py: tree-sitter", sitter, stdlib_ast, "ast.parse", "s", "(CPU, 1 process)")


def _usage_sample(index: SymbolIndex, rng: random.Random, count: int) -> list[str]:
    """Defined names from rare to the most used (by how many files use them): quantiles
    of that distribution, so the heavy names that cost a usage search most are in."""
    rows = [(str(name), int(files)) for name, files in index.connection.execute(
        "SELECT r.name, COUNT(*) FROM refs r WHERE r.name IN (SELECT name FROM symbols WHERE kind IN"
        " ('class', 'function', 'method', 'struct', 'prototype', 'macro')) GROUP BY r.name ORDER BY 2, 1")]
    if not rows:
        return []
    quantiles = [0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0]
    picked = {rows[min(len(rows) - 1, int(q * len(rows)))][0] for q in quantiles}
    while len(picked) < count:
        picked.add(rng.choice(rows)[0])
    chosen = sorted(picked)
    rng.shuffle(chosen)
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=["stdlib", "include", "all"], default="all")
    parser.add_argument("--samples", type=int, default=200, help="names sampled for lookups")
    args = parser.parse_args()
    for tool in ("ctags", "rg", "readtags"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (apt-get install universal-ctags ripgrep); nothing to compare against")
            return 0
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    report = Report()
    with tempfile.TemporaryDirectory(prefix="index-bench-") as scratch:
        work = Path(scratch)
        if args.corpus in ("stdlib", "all"):
            tree = copy_stdlib(work / "stdlib")
            bench_corpus("stdlib", tree, work, args.samples, report)
            bench_parsers(tree, report)
        if args.corpus in ("include", "all"):
            include = Path("/usr/include")
            if include.is_dir():
                bench_corpus("include", include, work, args.samples, report)
            else:
                print("/usr/include is absent; skipped")
    print()
    print(report.table())
    return 0


if __name__ == "__main__":  # the index builds in spawned worker processes: keep the guard
    sys.exit(main())
