"""``find_references`` through codeward against the bare language server, in one run, per language.

For each vendored project (``tests/fixtures``: iniconfig for Python, hashids for TypeScript, google/uuid for
Go, jsmn for C) and one symbol, it measures:

* **first answer** — a fresh server context, its first ``find_references`` call: the symbol index answers
  at once (name-based) while the language server starts in the background; the index's cold build included;
* **ready** — how long the server then takes to load the project (codeward's warm-up: the handshake, the
  files it finds, its first diagnostics, the work it reports in progress);
* **warm** — the median ``find_references`` call once the server is ready (scope-aware; it also checks the
  occurrences the server leaves out, and converts and pages the answer);
* **bare** — the median ``textDocument/references`` request to the same server started directly on the host,
  as an editor would (no sandbox, no index, no checks);
* for Python, **jedi** — the median ``py_find_references`` call answered by jedi alone (language servers off),
  the engine used while basedpyright starts or where it is not installed.

    .venv/bin/python bench/lsp_latency.py [--runs N] [--only python,go,...]

Servers missing here are skipped with the command that installs them. Ratios are warm / bare.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeward.config.lsp import LspSettings
from codeward.engines.lsp.client import LspClient
from codeward.engines.lsp.pool import servers_of
from codeward.engines.lsp.positions import lines_of
from codeward.engines.lsp.servers import BY_FAMILY, NotInstalled
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.workspace import Workspace
from codeward.tools import default_catalog

REPO = Path(__file__).resolve().parent.parent
NODE = REPO / "tests" / "node" / "node_modules"


@dataclass(frozen=True)
class Case:
    family: str
    fixture: Path
    path: str
    anchor: str
    name: str
    tool: str = "find_references"


CASES = [
    Case("python", REPO / "tests/fixtures/review/iniconfig", "src/iniconfig/__init__.py", "class IniConfig:",
         "IniConfig", "py_find_references"),
    Case("typescript", REPO / "tests/fixtures/lsp/hashids", "src/util.ts", "export type NumberLike", "NumberLike"),
    Case("go", REPO / "tests/fixtures/lsp/uuid", "uuid.go", "func Parse(s string) (UUID, error) {", "Parse"),
    Case("c", REPO / "tests/fixtures/lsp/jsmn", "jsmn.h", "} jsmntok_t;", "jsmntok_t"),
]


def prepare(case: Case, into: Path) -> Path:
    root = into / case.fixture.name
    shutil.copytree(case.fixture, root, ignore=shutil.ignore_patterns("__pycache__", ".codeward"))
    if case.family == "typescript":
        (root / "node_modules").symlink_to(NODE)
    if case.family == "c":
        entries = [{"directory": str(root), "file": str(root / f), "arguments": ["cc", "-c", f]}
                   for f in ("test/tests.c", "example/simple.c", "example/jsondump.c")]
        (root / "compile_commands.json").write_text(json.dumps(entries))
    return root


def position(root: Path, case: Case) -> tuple[int, int]:
    lines = (root / case.path).read_text().split("\n")
    number = next(i for i, line in enumerate(lines, 1) if case.anchor in line)
    return number, lines[number - 1].index(case.name) + 1


def median_ms(run: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def context(root: Path, *more: Path, **settings: Any) -> ToolContext:
    return ToolContext(Workspace.create([root, *more]), services=Services(LspSettings(**settings)))


def bare_server(case: Case, root: Path, line: int, column: int) -> Callable[[], Any]:
    """The server started directly (as an editor would), warmed the same way, and one request to time."""
    spec = BY_FAMILY[case.family]
    located = spec.find(None)
    proc = subprocess.Popen(list(located.argv), cwd=root, env={**os.environ, **located.env},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    client = LspClient(proc, spec.name, spec.configuration, [{"uri": root.as_uri(), "name": root.name}])
    client.initialize(root.as_uri(), spec.init_options, 300)
    if spec.ready_log is not None:
        client.wait_log(spec.ready_log, 300)
    path = root / case.path
    text = path.read_text()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": spec.language_id(path),
                                                            "version": 1, "text": text}})
    client.request("textDocument/documentSymbol", {"textDocument": {"uri": path.as_uri()}}, 300)
    client.wait_idle(300)
    character = client.encoding.from_index(lines_of(text)[line - 1], column - 1)
    params = {"textDocument": {"uri": path.as_uri()}, "position": {"line": line - 1, "character": character},
              "context": {"includeDeclaration": True}}
    client.request("textDocument/references", params, 300)  # the first answer type-checks; time the warm ones

    def ask() -> Any:
        return client.request("textDocument/references", params, 300)

    ask.close = lambda: (client.shutdown(), proc.kill(), proc.wait())  # type: ignore[attr-defined]
    return ask


def measure(case: Case, runs: int) -> dict[str, Any]:
    spec = BY_FAMILY[case.family]
    try:
        spec.find(None)
    except NotInstalled as exc:
        return {"family": case.family, "skipped": f"{exc}; install: {spec.install}"}
    catalog = default_catalog()
    with tempfile.TemporaryDirectory() as folder:
        root = prepare(case, Path(folder))
        line, column = position(root, case)
        arguments = {"path": case.path, "line": line, "column": column}
        more = (NODE.resolve(),) if case.family == "typescript" else ()
        ctx = context(root, *more)
        started = time.perf_counter()
        first = catalog.call(case.tool, arguments, ctx)
        first_ms = (time.perf_counter() - started) * 1000
        [server] = servers_of(ctx.services).servers()
        server.ready.wait(600)
        ready_s = time.perf_counter() - started
        warm_answer = catalog.call(case.tool, arguments, ctx)
        warm_ms = median_ms(lambda: catalog.call(case.tool, arguments, ctx), runs)
        ctx.services.runtimes.close()
        row: dict[str, Any] = {
            "family": case.family, "symbol": case.name, "server": server.label,
            "first_engine": (first.structured or {}).get("engine"), "first_ms": first_ms, "ready_s": ready_s,
            "warm_engine": (warm_answer.structured or {}).get("engine"), "warm_ms": warm_ms,
            "references": (warm_answer.structured or {}).get("total")}
        bare = bare_server(case, root, line, column)
        try:
            row["bare_ms"] = median_ms(bare, runs)
        finally:
            bare.close()  # type: ignore[attr-defined]
        if case.family == "python":
            jedi_ctx = context(root, enabled=False)
            catalog.call(case.tool, arguments, jedi_ctx)  # jedi's parse caches warm
            row["jedi_ms"] = median_ms(lambda: catalog.call(case.tool, arguments, jedi_ctx), runs)
            jedi_ctx.services.runtimes.close()
        return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated language families")
    args = parser.parse_args()
    os.environ["PATH"] = os.pathsep.join([str(NODE / ".bin"), os.environ.get("PATH", "")])
    wanted = {name for name in args.only.split(",") if name}
    print(f"{'language':<11} {'server':<34} {'first (index)':>14} {'ready':>8} {'warm':>9} {'bare':>9} "
          f"{'warm/bare':>9}  notes")
    for case in CASES:
        if wanted and case.family not in wanted:
            continue
        row = measure(case, args.runs)
        if "skipped" in row:
            print(f"{row['family']:<11} skipped: {row['skipped']}")
            continue
        notes = f"{row['references']} refs; first answered by {row['first_engine']}"
        if "jedi_ms" in row:
            notes += f"; jedi alone {row['jedi_ms']:.1f} ms ({row['jedi_ms'] / row['warm_ms']:.2f}x warm)"
        print(f"{row['family']:<11} {row['server']:<34} {row['first_ms']:>11.0f} ms {row['ready_s']:>6.1f} s "
              f"{row['warm_ms']:>6.1f} ms {row['bare_ms']:>6.1f} ms {row['warm_ms'] / row['bare_ms']:>8.1f}x  {notes}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
