"""How well the Python AST tools agree with ``inspect`` on the installed standard library.

For every function, class, method and property accessor defined in the chosen stdlib modules
(their own files, no ``<locals>``), compare ``py_get_definition`` with
``inspect.getsource`` (decorators included), ``py_get_signature`` with ``inspect.signature``
(parameter names, kinds and defaults, async, return annotation; class name and bases) and
``py_get_docstring`` with the cleaned ``__doc__``. The tools read the files through a
Workspace rooted at the stdlib directory, as a client would. Prints the agreement rates, the
disagreements, and the time per object of the tools against ``inspect`` itself (the baseline,
measured in the same run).

    .venv/bin/python bench/ast_agreement.py [--limit N] [--show N] [--modules json,argparse,...]

The test suite runs the same comparison on a 400-object sample (tests/test_python_ast_stdlib.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.test_python_ast_stdlib import SAMPLE_MODULES, collect_samples, measure, stdlib_caller  # noqa: E402

from codeward.tools import default_catalog  # noqa: E402

MORE_MODULES: tuple[str, ...] = (
    "json", "ast", "inspect", "tokenize", "logging", "logging.handlers", "unittest.case", "unittest.mock",
    "subprocess", "threading", "queue", "heapq", "bisect", "calendar", "datetime", "decimal", "random",
    "statistics", "csv", "zipfile", "tarfile", "shutil", "tempfile", "glob", "fnmatch", "gettext", "locale",
    "optparse", "pprint", "reprlib", "selectors", "socketserver", "smtplib", "ftplib", "urllib.parse",
    "urllib.request", "http.server", "http.cookies", "email.feedparser", "email.generator", "email.policy",
    "email._header_value_parser", "xml.dom.minidom", "xml.etree.ElementTree", "concurrent.futures._base",
    "concurrent.futures.thread", "asyncio.base_events", "asyncio.streams", "asyncio.subprocess",
    "importlib.metadata", "importlib.resources._common", "zoneinfo._zoneinfo", "graphlib", "operator",
    "pydoc", "trace", "pdb", "cmd", "codeop", "dis", "pickle", "copy", "weakref", "abc", "numbers",
    "tomllib._parser", "sqlite3.dump", "wave", "uuid", "secrets", "hmac", "base64", "quopri", "mimetypes",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="sample at most N objects (default: all)")
    parser.add_argument("--show", type=int, default=30, help="disagreements to print")
    parser.add_argument("--modules", default="", help="comma-separated module names (default: a broad set)")
    args = parser.parse_args()
    modules = tuple(m for m in args.modules.split(",") if m) or SAMPLE_MODULES + MORE_MODULES
    started = time.perf_counter()
    samples = collect_samples(modules, args.limit)
    inspect_seconds = time.perf_counter() - started
    catalog = default_catalog(["python"])
    started = time.perf_counter()
    agreement = measure(stdlib_caller(catalog), samples)
    tools_seconds = time.perf_counter() - started
    files = len({s.rel_path for s in samples})
    print(f"stdlib objects: {len(samples)} from {files} files ({len(modules)} modules)")
    print(agreement.summary())
    per_object_inspect = inspect_seconds / max(len(samples), 1) * 1000
    per_object_tools = tools_seconds / max(len(samples), 1) * 1000
    print(f"time per object: inspect (getsourcelines, baseline) {per_object_inspect:.2f} ms; "
          f"3 tool calls through the catalog {per_object_tools:.2f} ms "
          f"(ratio {per_object_tools / per_object_inspect if per_object_inspect else 0:.2f}x)")
    if agreement.disagreements:
        shown = min(args.show, len(agreement.disagreements))
        print(f"\ndisagreements ({len(agreement.disagreements)}; showing {shown}):")
        for line in agreement.disagreements[: args.show]:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
