"""A map of a repository's most important definitions, cut to a token budget (after Aider).

Files are nodes of a graph; a file that uses an identifier another file defines gets an
edge to it, weighted by how often it uses it (square root, so one hot loop does not
dominate), discounted for private names (``_x``) and for names defined in many files
(``get``, ``run``: they say little about who depends on whom). PageRank over that graph —
personalized towards focus files when given — ranks files; each file's rank then flows
along its edges to the definitions it uses, which ranks definitions. The best ones are
shown with their declaration line, grouped by file, until the budget is spent.
"""

from __future__ import annotations

import builtins
import math
from collections import defaultdict
from dataclasses import dataclass

from codeward.engines.code_intel.symbol_index import SymbolIndex
from codeward.engines.code_intel.tags import CLASS_LIKE

MAP_KINDS_EXCLUDED = ("variable", "enumerator", "property")
CROWDED_DEFINERS = 5
IGNORED_DEFINERS = 25
"""A name defined in more files than this is ignored for ranking (``__init__``, ``main``)."""
METHOD_WEIGHT = 0.3
MIN_NAME_CHARS = 3
PYTHON_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_")) | {"self", "cls"}
"""Names every Python file uses without importing them: a definition that shadows one
(``def str`` in locale.py) must not collect every ``str(...)`` call in the repository."""
DAMPING = 0.85
ITERATIONS = 30
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class MapEntry:
    path: str
    qualname: str
    kind: str
    line: int
    signature: str
    rank: float


@dataclass(frozen=True, slots=True)
class RepoMap:
    text: str
    files: int
    definitions: int
    shown: int
    tokens: int


def build_repo_map(index: SymbolIndex, *, under: str = "", focus: tuple[str, ...] = (), max_tokens: int = 1024,
                   ) -> RepoMap:
    """Rank definitions under ``under`` and render the best ones within ``max_tokens``."""
    entries, file_count = rank_definitions(index, under=under, focus=focus)
    text, shown = render(entries, max_tokens)
    return RepoMap(text, file_count, len(entries), shown, len(text) // CHARS_PER_TOKEN)


def rank_definitions(index: SymbolIndex, *, under: str = "", focus: tuple[str, ...] = ()
                     ) -> tuple[list[MapEntry], int]:
    """Every definition in scope with its rank (best first), and the number of files."""
    db = index.connection
    scope_sql, scope_params = _scope(under)
    files = {int(fid): str(path) for fid, path in db.execute(f"SELECT id, path FROM files f WHERE {scope_sql}",
                                                             scope_params)}
    if not files:
        return [], 0
    excluded = ", ".join(f"'{kind}'" for kind in MAP_KINDS_EXCLUDED)
    definitions: list[tuple[int, str, str, str, int, str]] = [
        (int(fid), str(name), str(qualname), str(kind), int(line), str(signature))
        for fid, name, qualname, kind, line, signature in db.execute(
            f"SELECT s.file_id, s.name, s.qualname, s.kind, s.line, s.signature FROM symbols s"
            f" JOIN files f ON f.id = s.file_id WHERE {scope_sql} AND s.kind NOT IN ({excluded})", scope_params)
    ]
    kinds = {(fid, qualname): kind for fid, _name, qualname, kind, _line, _sig in definitions}
    definers: dict[str, set[int]] = defaultdict(set)
    methods: set[str] = set()
    exported: set[tuple[int, str]] = set()
    for fid, name, qualname, kind, _line, _signature in definitions:
        if len(name) < MIN_NAME_CHARS or name in PYTHON_BUILTINS or not _reachable(fid, qualname, kinds):
            continue  # a helper local to a function is nobody else's dependency
        definers[name].add(fid)
        exported.add((fid, qualname))
        if kind == "method":
            methods.add(name)
    sites: dict[tuple[int, str], int] = defaultdict(int)
    for fid, name, *_rest in definitions:
        sites[(fid, name)] += 1
    edges = _edges(index, files, definers, methods, sites)
    ranks = _pagerank(list(files), edges, {fid for fid, path in files.items() if path in focus})
    out_weight: dict[int, float] = defaultdict(float)
    for (src, _dst, _name), weight in edges.items():
        out_weight[src] += weight
    definition_rank: dict[tuple[int, str], float] = defaultdict(float)
    for (src, dst, name), weight in edges.items():
        definition_rank[(dst, name)] += ranks[src] * weight / out_weight[src]
    entries = [
        MapEntry(files[fid], qualname, kind, line, signature,
                 (definition_rank.get((fid, name), 0.0) if (fid, qualname) in exported else 0.0) + ranks[fid] * 1e-3)
        for fid, name, qualname, kind, line, signature in definitions
    ]
    entries.sort(key=lambda e: (-e.rank, e.path, e.line))
    return entries, len(files)


def _reachable(fid: int, qualname: str, kinds: dict[tuple[int, str], str]) -> bool:
    """True when every enclosing definition is a class (or there is none)."""
    parent = qualname.rpartition(".")[0]
    while parent:
        if kinds.get((fid, parent), "class") not in CLASS_LIKE:
            return False
        parent = parent.rpartition(".")[0]
    return True


def _edges(index: SymbolIndex, files: dict[int, str], definers: dict[str, set[int]], methods: set[str],
           sites: dict[tuple[int, str], int]) -> dict[tuple[int, int, str], float]:
    """Weighted use edges between files; a file's own definitions of a name are not uses of it."""
    db = index.connection
    useful = {name: owners for name, owners in definers.items() if len(owners) <= IGNORED_DEFINERS}
    db.execute("CREATE TEMP TABLE IF NOT EXISTS map_names (name TEXT PRIMARY KEY)")
    db.execute("DELETE FROM map_names")
    db.executemany("INSERT INTO map_names (name) VALUES (?)", [(name,) for name in useful])
    rows = [(int(fid), str(name), int(count) - sites.get((int(fid), str(name)), 0)) for fid, name, count in db.execute(
        "SELECT r.file_id, r.name, r.count FROM refs r JOIN map_names m ON m.name = r.name") if fid in files]
    rows = [row for row in rows if row[2] > 0]
    users: dict[str, int] = defaultdict(int)
    for _fid, name, _count in rows:
        users[name] += 1
    total = len(files)
    edges: dict[tuple[int, int, str], float] = {}
    for fid, name, count in rows:
        owners = useful[name]
        # Rare names are strong evidence of a dependency; names used everywhere are not.
        weight = math.sqrt(count) * math.log(1 + total / users[name])
        if name.startswith("_"):
            weight *= 0.1
        if len(owners) > CROWDED_DEFINERS:
            weight *= 0.1
        if name in methods:
            weight *= METHOD_WEIGHT  # ``x.name`` may be any object's attribute
        if len(name) >= 8 and ("_" in name or any(c.isupper() for c in name[1:])):
            weight *= 2.0  # long, specific names say more than short ones
        for owner in owners:
            if owner != fid:
                edges[(fid, owner, name)] = weight
    db.execute("DELETE FROM map_names")
    return edges


def _pagerank(nodes: list[int], edges: dict[tuple[int, int, str], float], focus: set[int]) -> dict[int, float]:
    """Weighted PageRank by power iteration; ``focus`` personalizes the teleport vector."""
    count = len(nodes)
    teleport = {node: (1.0 / len(focus) if node in focus else 0.0) for node in nodes} if focus else \
        dict.fromkeys(nodes, 1.0 / count)
    out: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for (src, dst, _name), weight in edges.items():
        out[src][dst] += weight
    totals = {src: sum(targets.values()) for src, targets in out.items()}
    rank = dict(teleport) if focus else dict.fromkeys(nodes, 1.0 / count)
    for _ in range(ITERATIONS):
        dangling = sum(rank[node] for node in nodes if node not in totals)
        new = {node: (1 - DAMPING + DAMPING * dangling) * teleport[node] for node in nodes}
        for src, targets in out.items():
            share = DAMPING * rank[src] / totals[src]
            for dst, weight in targets.items():
                new[dst] += share * weight
        rank = new
    return rank


def render(entries: list[MapEntry], max_tokens: int) -> tuple[str, int]:
    """The best entries grouped by file (files in rank order of their best entry), within budget."""
    budget = max_tokens * CHARS_PER_TOKEN
    chosen: dict[str, list[MapEntry]] = {}
    used = 0
    shown = 0
    by_path_qualname = {(e.path, e.qualname): e for e in entries}
    for entry in entries:
        additions = [entry]
        parent = entry.qualname.rpartition(".")[0]
        if parent and (entry.path, parent) in by_path_qualname:
            owner = by_path_qualname[(entry.path, parent)]
            if owner not in chosen.get(entry.path, []):
                additions.insert(0, owner)
        cost = sum(len(_line(e)) + 1 for e in additions) + (0 if entry.path in chosen else len(entry.path) + 2)
        if used + cost > budget:
            if used:
                break
            continue
        bucket = chosen.setdefault(entry.path, [])
        for addition in additions:
            if addition not in bucket:
                bucket.append(addition)
                shown += 1
        used += cost
    lines: list[str] = []
    for path, bucket in chosen.items():
        lines.append(f"{path}:")
        lines.extend(_line(e) for e in sorted(bucket, key=lambda e: e.line))
    return "\n".join(lines), shown


def _line(entry: MapEntry) -> str:
    depth = entry.qualname.count(".")
    return f"{entry.line:>5}│ {'  ' * depth}{entry.signature}"


def _scope(under: str) -> tuple[str, list[object]]:
    if not under or under == ".":
        return "1", []
    base = under.rstrip("/")
    escaped = base.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")
    return "(f.path = ? OR f.path GLOB ?)", [base, escaped + "/*"]
