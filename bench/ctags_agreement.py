"""How well the C/C++ outline agrees with universal-ctags on the system headers.

For a deterministic sample of headers (libc under ``/usr/include`` and the libstdc++
headers), run ``ctags --output-format=json`` and the ``ts_cpp_get_code_outline`` tool, and
count, per kind, how many of ctags' tags the outline also finds (same kind, same name, a
line inside the outline's range for it). Prints the rates per kind and overall. Tags local
to a function body (``scopeKind: function``) are left out: the outline lists file-level and
member definitions only; so are tags named after a macro the same file defines
(``BZ_API(BZ2_bzRead)`` is tagged ``BZ_API`` by ctags, a misreading, not a definition).

    .venv/bin/python bench/ctags_agreement.py [--files N] [--show N]

Exits 0 with a message saying why when ctags or the headers are absent.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CTAGS_KINDS = {"function": "function", "prototype": "prototype", "struct": "struct", "class": "class",
               "enum": "enum", "typedef": "typedef", "union": "union"}
"""ctags kind → the kind group compared (the outline's method/constructor/destructor count as function)."""
OUTLINE_GROUPS = {"function": "function", "method": "function", "constructor": "function",
                  "destructor": "function", "prototype": "prototype", "struct": "struct", "class": "class",
                  "enum": "enum", "typedef": "typedef", "union": "union"}
INCLUDE = Path("/usr/include")


@dataclass(frozen=True)
class Tag:
    group: str
    name: str
    line: int


@dataclass
class Agreement:
    """Per kind group: ctags tags seen and matched; the misses for reporting."""

    seen: Counter[str] = field(default_factory=Counter)
    matched: Counter[str] = field(default_factory=Counter)
    misses: list[str] = field(default_factory=list)
    files: int = 0

    def rate(self, groups: Iterable[str] | None = None) -> float:
        keys = list(groups) if groups is not None else list(self.seen)
        seen = sum(self.seen[k] for k in keys)
        return sum(self.matched[k] for k in keys) / seen if seen else 1.0

    def report(self) -> str:
        lines = [f"files compared: {self.files}"]
        for group in sorted(self.seen):
            lines.append(f"  {group:<10} {self.matched[group]:>6} / {self.seen[group]:<6} "
                         f"{100 * self.rate([group]):6.2f}%")
        lines.append(f"  {'overall':<10} {sum(self.matched.values()):>6} / {sum(self.seen.values()):<6} "
                     f"{100 * self.rate():6.2f}%")
        return "\n".join(lines)


def ctags_path() -> str | None:
    return shutil.which("ctags")


def is_universal_ctags(ctags: str) -> bool:
    try:
        out = subprocess.run([ctags, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Universal Ctags" in out


def sample_headers(count: int) -> list[Path]:
    """Every k-th libc header and every k-th libstdc++ header, in sorted order (deterministic)."""
    libc = sorted(Path(p) for p in glob.glob(str(INCLUDE / "*.h")))
    cxx_dirs = sorted((Path(p) for p in glob.glob(str(INCLUDE / "c++" / "*")) if Path(p).is_dir()),
                      key=lambda p: p.name)
    cxx: list[Path] = []
    if cxx_dirs:
        top = cxx_dirs[-1]
        cxx = sorted([p for p in top.iterdir() if p.is_file()] + sorted((top / "bits").glob("*.h")))
    half = max(1, count // 2)
    return _every_kth(libc, half) + _every_kth(cxx, count - half)


def _every_kth(items: Sequence[Path], count: int) -> list[Path]:
    if not items or count <= 0:
        return []
    step = max(1, len(items) // count)
    return list(items[::step][:count])


def ctags_tags(ctags: str, path: Path) -> list[Tag]:
    """ctags' tags of the compared kinds (C++ parser, prototypes on, anonymous types skipped)."""
    cmd = [ctags, "--output-format=json", "--fields=+n+K", "--language-force=C++", "--kinds-C++=+p",
           "-o", "-", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    entries = []
    for line in out.splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    macros = {e.get("name") for e in entries if e.get("kind") == "macro"}
    tags: list[Tag] = []
    for entry in entries:
        group = CTAGS_KINDS.get(entry.get("kind", ""))
        name = entry.get("name", "")
        local = entry.get("scopeKind") == "function"  # typedefs inside function bodies
        if group and name and not name.startswith("__anon") and "line" in entry and not local \
                and name not in macros:
            tags.append(Tag(group, name, int(entry["line"])))
    return tags


def outline_ranges(symbols: Iterable[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    ranges: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for symbol in symbols:
        group = OUTLINE_GROUPS.get(symbol["kind"])
        if group:
            ranges[(group, _plain(symbol["name"]))].append((symbol["start_line"], symbol["end_line"]))
    return ranges


def _plain(name: str) -> str:
    """Names compared without spaces: ctags writes ``operator ==``, the outline ``operator==``."""
    return "".join(name.split())


def compare(paths: Sequence[Path], ctags: str, outline: Callable[[Path], list[dict[str, Any]]]) -> Agreement:
    """Count ctags tags the outline also finds: same group and name, ctags' line within its range."""
    result = Agreement()
    for path in paths:
        tags = ctags_tags(ctags, path)
        ranges = outline_ranges(outline(path))
        result.files += 1
        for tag in tags:
            result.seen[tag.group] += 1
            spans = ranges.get((tag.group, _plain(tag.name)), [])
            if any(start <= tag.line <= end for start, end in spans):
                result.matched[tag.group] += 1
            else:
                result.misses.append(f"{path}:{tag.line}: {tag.group} {tag.name}")
    return result


def catalog_outline(root: Path) -> Callable[[Path], list[dict[str, Any]]]:
    """The outline through the real tool (catalog call) over a read-only workspace at ``root``."""
    from codeward.kernel.context import ToolContext
    from codeward.kernel.workspace import Workspace
    from codeward.tools import default_catalog

    catalog = default_catalog(["cpp"])
    ctx = ToolContext(Workspace.create([root]))

    def outline(path: Path) -> list[dict[str, Any]]:
        outcome = catalog.call("ts_cpp_get_code_outline", {"path": str(path)}, ctx)
        if outcome.is_error or outcome.structured is None:
            raise RuntimeError(f"outline of {path} failed: {outcome.text}")
        symbols: list[dict[str, Any]] = outcome.structured["symbols"]
        return symbols

    return outline


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=120, help="how many headers to sample")
    parser.add_argument("--show", type=int, default=15, help="how many disagreements to print")
    args = parser.parse_args(argv)
    ctags = ctags_path()
    if ctags is None or not is_universal_ctags(ctags):
        print("skipped: universal-ctags is not installed (apt-get install universal-ctags)")
        return 0
    headers = sample_headers(args.files)
    if not headers:
        print(f"skipped: no C/C++ headers under {INCLUDE} (install libc6-dev / libstdc++-dev)")
        return 0
    result = compare(headers, ctags, catalog_outline(INCLUDE))
    print(f"ctags agreement on {len(headers)} headers (libc + libstdc++), ctags tags found by the outline:")
    print(result.report())
    if result.misses and args.show:
        print(f"first {min(args.show, len(result.misses))} of {len(result.misses)} disagreements:")
        for miss in result.misses[: args.show]:
            print("  " + miss)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
