"""Call paths across files: what a function calls, what those call, to a depth.

The symbol index says where every function is defined and which bytes of each file are
comments or strings. A function's calls are the identifiers in its body that are followed
by ``(`` (comments and strings blanked, keywords and nested definitions skipped); each is
resolved to a definition by name, preferring the same class for ``self.x()``/``this.x()``,
then the same file, then the same directory, and real bodies over prototypes. Names the
index does not define (builtins, libraries) are listed, not followed.

Static name resolution cannot see through dynamic dispatch; it shows what a reader would
follow by hand, fast, for any language the index knows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from codeward.engines.code_intel.index_rows import Symbol, base_key
from codeward.engines.code_intel.symbol_index import CALLABLE_KINDS, SymbolIndex
from codeward.engines.code_intel.tags import Extractors, blank_spans
from codeward.engines.code_intel.usage_scan import LineTable

CALL = re.compile(rb"(?<![A-Za-z0-9_\x80-\xff\\])([A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*)\s*(?:<[^<>()]*>\s*)?\(")
"""An identifier followed by ``(`` (C++/Java/TS generic arguments allowed in between)."""
DEFINING_WORDS = frozenset({b"def", b"class", b"function", b"fn", b"func", b"fun", b"struct", b"interface"})
SUPER_CALL = re.compile(rb"\bsuper\s*\([^()]*\)\s*\.$")
SELF_RECEIVERS = (b"self.", b"this.", b"cls.", b"this->", b"self::", b"static::", b"$this->")
MAX_CALLS_PER_FUNCTION = 60
MAX_NODES = 400
FOLLOWED_KINDS = frozenset(CALLABLE_KINDS)


@dataclass
class CallNode:
    """One function in the tree: where it is, what it calls (resolved and not)."""

    symbol: Symbol
    note: str = ""
    alternatives: int = 0
    calls: list[CallNode] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CallSite:
    name: str
    through_self: bool
    attribute: bool
    receiver: str = ""
    """The identifier before the dot of ``receiver.name()`` ('' for plain calls)."""
    through_super: bool = False
    """``super().name()`` / ``super(C, self).name()``: a base class's method, never the caller."""


@dataclass
class CallGraphBuilder:
    """Expands call trees from one index; remembers what it expanded (one tree per builder)."""

    index: SymbolIndex
    max_depth: int
    extractors: Extractors = field(default_factory=Extractors)
    expanded: set[int] = field(default_factory=set)
    nodes: int = 0
    truncated: bool = False
    _code: dict[str, tuple[bytes, LineTable] | None] = field(default_factory=dict)
    _names: dict[str, frozenset[str]] = field(default_factory=dict)

    def build(self, root: Symbol) -> CallNode:
        node = CallNode(root)
        self.nodes = 1
        self._expand(node, depth=1, path=(root.id,))
        return node

    def _expand(self, node: CallNode, depth: int, path: tuple[int, ...]) -> None:
        symbol = node.symbol
        if symbol.id in self.expanded:
            node.note = "expanded above"
            return
        self.expanded.add(symbol.id)
        target = self._body_owner(symbol)
        for site in self.calls_of(target)[:MAX_CALLS_PER_FUNCTION]:
            resolved, alternatives = self.resolve(site, target)
            if resolved is None:
                if site.name not in node.unresolved:
                    node.unresolved.append(site.name)
                continue
            if self.nodes >= MAX_NODES:
                self.truncated = True
                return
            child = CallNode(resolved, alternatives=alternatives)
            self.nodes += 1
            node.calls.append(child)
            if resolved.id in path:
                child.note = "recursive"
            elif depth >= self.max_depth:
                child.note = "depth limit"
            else:
                self._expand(child, depth + 1, (*path, resolved.id))

    def _body_owner(self, symbol: Symbol) -> Symbol:
        """A class is followed through its constructor (``__init__``, ``constructor``, ``Name``)."""
        if symbol.kind not in ("class", "struct"):
            return symbol
        for name in ("__init__", "constructor", "initialize", symbol.name):
            rows, _total = self.index.find(f"{symbol.qualname}.{name}", mode="exact", limit=1)
            if rows and rows[0].path == symbol.path:
                return rows[0]
        return symbol

    def calls_of(self, symbol: Symbol) -> list[CallSite]:
        """The distinct calls in a definition's body, in order of first appearance."""
        if symbol.kind in ("class", "struct"):
            return []
        loaded = self._load(symbol.path)
        if loaded is None:
            return []
        blanked, lines = loaded
        start = lines.offset(symbol.name_line)  # decorators run at definition time, not on a call
        end = lines.offset(symbol.end_line + 1)
        keywords = self._keywords(symbol.language)
        seen: dict[str, CallSite] = {}
        for match in CALL.finditer(blanked, start, end):
            word = match.group(1)
            name = word.decode("utf-8", "replace")
            if name in keywords or name in seen:
                continue
            line_start = blanked.rfind(b"\n", start, match.start()) + 1
            before = blanked[max(line_start, match.start() - 80) : match.start()].rstrip()
            if _last_word(before) in DEFINING_WORDS:
                continue  # a nested definition, not a call
            if name == symbol.name and lines.locate(match.start())[0] == symbol.name_line:
                continue  # the definition's own header (C, Java, ...)
            attribute = before.endswith((b".", b"->", b"::", b":"))
            receiver = _last_word(before.rstrip(b".:->")).decode("utf-8", "replace") if attribute else ""
            through_super = attribute and SUPER_CALL.search(before) is not None
            seen[name] = CallSite(name, before.endswith(SELF_RECEIVERS), attribute, receiver, through_super)
        return list(seen.values())

    def resolve(self, site: CallSite, caller: Symbol) -> tuple[Symbol | None, int]:
        """The definition a call most likely reaches, and how many other candidates there were.

        ``x.name()`` on anything but ``self``/``this`` is only followed to a method whose class
        (or module) the calling file mentions: otherwise it is far more likely a library call
        (``items.append()``) than a call into a same-named method elsewhere.
        """
        rows, _total = self.index.find(site.name, mode="exact", kinds=FOLLOWED_KINDS, limit=500)
        family = _family(caller.language)
        candidates = [row for row in rows if row.name == site.name and _family(row.language) == family]
        if site.through_super:
            candidates = [c for c in candidates if c.id != caller.id]
        if not candidates:
            return None, 0
        mentioned = self._names_used(caller.path)
        caller_bases = self._bases_of(caller) if site.through_super else ()
        caller_dir = str(PurePosixPath(caller.path).parent)
        owner = caller.parent

        def evidence(candidate: Symbol) -> int:
            points = 0
            if candidate.path == caller.path:
                points += 4
            if site.through_self and candidate.parent and candidate.parent == owner:
                points += 8
            if caller_bases and candidate.parent.rsplit(".", 1)[-1] in caller_bases:
                points += 8
            owner_class = candidate.parent.rsplit(".", 1)[-1]
            stem = PurePosixPath(candidate.path).stem
            receiver = site.receiver.lstrip("_").lower()
            if owner_class:
                if owner_class == site.receiver:
                    points += 6  # Class.method()
                elif receiver and receiver in owner_class.lower():
                    points += 3  # index.refresh() and class SymbolIndex
                if owner_class in mentioned:
                    points += 3
            if site.receiver and site.receiver == stem:
                points += 2  # module.function()
            elif not site.attribute and stem in mentioned:
                points += 2  # from module import function
            return points

        def score(candidate: Symbol) -> tuple[int, str, int]:
            points = evidence(candidate)
            if str(PurePosixPath(candidate.path).parent) == caller_dir:
                points += 1
            if candidate.kind in ("function", "method"):
                points += 2
            elif candidate.kind in ("macro", "class", "struct"):
                points += 1
            if site.attribute != (candidate.kind == "method"):
                points -= 1
            return -points, candidate.path, candidate.line

        ordered = sorted(candidates, key=score)
        best = ordered[0]
        if site.attribute and not site.through_self and evidence(best) == 0:
            return None, 0
        return best, len(ordered) - 1

    def _bases_of(self, method: Symbol) -> tuple[str, ...]:
        """The base class names of the class a method belongs to (for ``super()`` calls)."""
        if not method.parent:
            return ()
        owners, _total = self.index.find(method.parent, mode="exact", limit=5)
        bases = [base_key(b) for owner in owners if owner.path == method.path for b in owner.bases]
        return tuple(bases)

    def _names_used(self, rel: str) -> frozenset[str]:
        if rel not in self._names:
            rows = self.index.connection.execute(
                "SELECT r.name FROM refs r JOIN files f ON f.id = r.file_id WHERE f.path = ?", (rel,))
            self._names[rel] = frozenset(str(name) for (name,) in rows)
        return self._names[rel]

    def _load(self, rel: str) -> tuple[bytes, LineTable] | None:
        if rel not in self._code:
            loaded = self.index.load_code(rel)
            if loaded is None:
                self._code[rel] = None
            else:
                source, spans = loaded
                blanked = blank_spans(source, spans)
                self._code[rel] = (blanked, LineTable(blanked))
        return self._code[rel]

    def _keywords(self, language: str) -> frozenset[str]:
        try:
            return self.extractors.get(language).keywords
        except Exception:  # an unavailable grammar: no keywords to skip
            return frozenset()


def _family(language: str) -> str:
    """Languages whose files call each other: C and C++ headers, JavaScript and TypeScript."""
    if language in ("c", "cpp"):
        return "c"
    if language in ("javascript", "typescript", "tsx"):
        return "js"
    return language


def _last_word(text: bytes) -> bytes:
    match = re.search(rb"([A-Za-z_]+)\s*$", text)
    return match.group(1) if match else b""
