"""Symbols of a source file, found by walking a tree-sitter tree with per-language rules.

Each language module (``outline_c``, ``outline_js``...) provides :class:`Rules`: a
``classify`` function that says whether a node defines something (and what: kind, name,
body, members), plus which wrapper nodes belong to a definition (``template<>``,
``export``, decorators). :func:`extract_symbols` walks the tree once with those rules and
returns flat :class:`Symbol` records in source order, each with its qualified name, byte
span and signature end, which is all the outline, skeleton, lookup and edit code needs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from codeward.engines.code_intel.content_cache import ContentCache
from codeward.engines.code_intel.symbol_names import normal_parts
from codeward.engines.code_intel.treesitter import parse

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

FUNCTION_KINDS = frozenset({"function", "method", "constructor", "destructor", "prototype"})
CONTAINER_KINDS = frozenset({"class", "struct", "union", "interface", "trait", "impl", "namespace", "module",
                             "enum", "object", "protocol", "extension", "record", "actor"})


@dataclass
class Def:
    """What a language rule says about a node that defines something."""

    kind: str
    name: str
    node: Node
    scope: tuple[str, ...] = ()
    """Qualifiers written in the definition itself: ``Foo`` in ``void Foo::bar()``, Go receivers."""
    body: Node | None = None
    """The body to elide in a skeleton (functions); ``None`` for declarations."""
    members: Node | None = None
    """The node holding member definitions (a class body): walked with this symbol as scope."""
    also: Node | None = None
    """A node to keep walking at the *enclosing* scope (the struct inside a ``typedef``)."""
    head_end: int | None = None
    """Byte where the signature ends; default: the start of ``body``/``members`` or the node end."""
    detail: str = ""
    """Short extra text for outlines: base classes, receiver, ``impl Trait for``."""
    definition: bool = True
    """False for prototypes and other bodiless declarations (lookups prefer definitions)."""
    scopes_siblings: bool = False
    """A file-scoped namespace (C# ``namespace X;``, PHP ``namespace X;``): later siblings live in it."""
    separator: str | None = None
    """How to join this symbol to its parent for display, when not the language default."""


@dataclass(frozen=True)
class Rules:
    """How to find definitions in one language's tree."""

    classify: Callable[[Node], Def | None]
    separator: str = "."
    wrappers: frozenset[str] = frozenset()
    """Parent node types that are part of the definition (``template_declaration``, ``export_statement``)."""
    leading: frozenset[str] = frozenset()
    """Preceding sibling node types that belong to the next definition (attributes, decorators)."""
    opaque: frozenset[str] = frozenset()
    """Node types never searched for definitions (statement bodies, expressions)."""
    trailing_semicolon: bool = False
    """Whether a ``;`` right after a type definition belongs to it (C/C++ ``struct S {...};``)."""
    finish: Callable[[list[Symbol]], list[Symbol]] | None = None
    """A last pass over the symbols (e.g. to tell C++ out-of-line methods from functions)."""
    prepare: Callable[[bytes], bytes] | None = None
    """A same-length rewrite of the source before parsing (C/C++: blank attribute-like macros)."""
    prefix_start: Callable[[bytes, bytes, int], int] | None = None
    """Given the source, its prepared rewrite and a definition's start byte: where the definition
    really starts (C/C++: the macros blanked in front of it belong to it)."""


@dataclass(frozen=True)
class Symbol:
    """One definition: what, where (bytes and 1-based lines) and under which qualified name."""

    kind: str
    name: str
    parts: tuple[str, ...]
    qualified: str
    local: str
    """The name relative to the enclosing symbol (``Foo::bar`` for an out-of-line method)."""
    start_byte: int
    end_byte: int
    start_line: int
    end_line: int
    sig_start: int
    head_end: int
    body: tuple[int, int] | None
    detail: str
    definition: bool
    depth: int
    parent: str | None = None
    lookup: tuple[str, ...] = ()
    """The parts as a name query matches them (:func:`codeward.engines.code_intel.symbol_names.normal_parts`)."""

    @property
    def is_function(self) -> bool:
        return self.kind in FUNCTION_KINDS


RULE_MODULES = MappingProxyType({
    "c": "codeward.engines.code_intel.outline_c",
    "cpp": "codeward.engines.code_intel.outline_c",
    "javascript": "codeward.engines.code_intel.outline_js",
    "typescript": "codeward.engines.code_intel.outline_js",
    "tsx": "codeward.engines.code_intel.outline_js",
    "java": "codeward.engines.code_intel.outline_jvm",
    "kotlin": "codeward.engines.code_intel.outline_jvm",
    "csharp": "codeward.engines.code_intel.outline_jvm",
    "swift": "codeward.engines.code_intel.outline_jvm",
    "go": "codeward.engines.code_intel.outline_native",
    "rust": "codeward.engines.code_intel.outline_native",
    "python": "codeward.engines.code_intel.outline_script",
    "ruby": "codeward.engines.code_intel.outline_script",
    "php": "codeward.engines.code_intel.outline_script",
    "lua": "codeward.engines.code_intel.outline_script",
    "bash": "codeward.engines.code_intel.outline_script",
})


def rules_for(language: str) -> Rules:
    """The rules of a language, from its module's ``rules(language)`` (imported on first use)."""
    module = importlib.import_module(RULE_MODULES[language])
    make: Callable[[str], Rules] = module.rules
    return make(language)


@dataclass(frozen=True)
class ParsedSource:
    """A parsed file: its UTF-8 bytes, tree and symbols (everything lookups and edits need)."""

    language: str
    data: bytes
    tree: Tree
    symbols: tuple[Symbol, ...]

    def text_of(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "surrogateescape")


class OutlineCache:
    """Parsed sources keyed by language and a hash of their text (an outline, then a definition, then
    an update of one file parse it once)."""

    def __init__(self, size: int = 16) -> None:
        self._cache: ContentCache[ParsedSource] = ContentCache(size)

    def parse(self, text: str, language: str) -> ParsedSource:
        return self._cache.get(language, text, lambda source: parse_source(source, language))


def encode_source(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def parse_source(text: str, language: str) -> ParsedSource:
    """Parse text with the language's grammar and extract its symbols."""
    data = encode_source(text)
    rules = rules_for(language)
    prepared = rules.prepare(data) if rules.prepare else data
    tree = parse(prepared, language)
    symbols = extract_symbols(tree, rules)
    if rules.prefix_start is not None and prepared != data:
        symbols = [_with_prefix(s, rules.prefix_start(data, prepared, s.start_byte), data) for s in symbols]
    return ParsedSource(language, data, tree, tuple(symbols))


def _with_prefix(symbol: Symbol, start: int, data: bytes) -> Symbol:
    if start >= symbol.start_byte:
        return symbol
    sig_start = start if symbol.sig_start == symbol.start_byte else symbol.sig_start
    return replace(symbol, start_byte=start, start_line=data.count(b"\n", 0, start) + 1, sig_start=sig_start)


def parse_prepared(data: bytes, language: str, rules: Rules | None = None) -> Tree:
    """Parse bytes after the language's ``prepare`` rewrite (byte offsets are unchanged by it)."""
    rules = rules or rules_for(language)
    return parse(rules.prepare(data) if rules.prepare else data, language)


def node_text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "surrogateescape")


def field_text(node: Node, name: str) -> str:
    return node_text(node.child_by_field_name(name))


def first_child_of_type(node: Node, *types: str) -> Node | None:
    for child in node.named_children:
        if child.type in types:
            return child
    return None


def extract_symbols(tree: Tree, rules: Rules) -> list[Symbol]:
    """Walk the tree once and return every definition the rules recognise, in source order."""
    found: list[Symbol] = []
    _walk(tree.root_node, rules, found)
    found.sort(key=lambda s: (s.start_byte, -s.end_byte))
    found = _functions_in_types_are_methods(found)
    return rules.finish(found) if rules.finish else found


def _functions_in_types_are_methods(symbols: list[Symbol]) -> list[Symbol]:
    kinds = {s.qualified: s.kind for s in symbols}
    types = CONTAINER_KINDS - {"namespace", "module"}
    return [replace(s, kind="method") if s.kind == "function" and s.parent is not None
            and kinds.get(s.parent) in types else s for s in symbols]


@dataclass
class _Frame:
    """One level of the walk: the children still to visit and the scope they are in."""

    children: Iterator[Node]
    parts: tuple[str, ...]
    qualified: str | None
    depth: int


def _walk(root: Node, rules: Rules, found: list[Symbol]) -> None:
    """Depth-first over named nodes with an explicit stack (deeply nested expressions are common)."""
    stack = [_Frame(iter(root.named_children), (), None, 0)]
    while stack:
        frame = stack[-1]
        child = next(frame.children, None)
        if child is None:
            stack.pop()
            continue
        if child.type in rules.opaque:
            continue
        definition = rules.classify(child)
        if definition is None:
            if child.named_child_count:
                stack.append(_Frame(iter(child.named_children), frame.parts, frame.qualified, frame.depth))
            continue
        symbol = _symbol(definition, rules, frame.parts, frame.qualified, frame.depth)
        found.append(symbol)
        if definition.scopes_siblings:
            frame.parts, frame.qualified, frame.depth = symbol.parts, symbol.qualified, frame.depth + 1
        if definition.members is not None:
            stack.append(_Frame(iter(definition.members.named_children), symbol.parts, symbol.qualified,
                                symbol.depth + 1))
        if definition.also is not None:
            stack.append(_Frame(iter((definition.also,)), frame.parts, frame.qualified, frame.depth))


def _symbol(d: Def, rules: Rules, parts: tuple[str, ...], qualified: str | None, depth: int) -> Symbol:
    outer = outer_node(d.node, rules)
    first = _first_leading(outer, rules)
    end = outer.end_byte
    if rules.trailing_semicolon and d.kind not in FUNCTION_KINDS:
        following = outer.next_sibling
        if following is not None and following.type == ";" and following.start_byte == end:
            end = following.end_byte
    scope = tuple(p for p in d.scope if p)
    local = rules.separator.join((*scope, d.name)) if scope else d.name
    full = f"{qualified}{d.separator or rules.separator}{local}" if qualified else local
    sig_start = _signature_start(d.node, outer)
    if d.head_end is not None:
        head_end = d.head_end
    elif d.body is not None:
        head_end = d.body.start_byte
    elif d.members is not None:
        head_end = d.members.start_byte
    else:
        head_end = d.node.end_byte
    return Symbol(
        kind=d.kind,
        name=d.name,
        parts=(*parts, *scope, d.name),
        qualified=full,
        local=local,
        start_byte=first.start_byte,
        end_byte=end,
        start_line=first.start_point[0] + 1,
        end_line=outer.end_point[0] + 1,
        sig_start=sig_start,
        head_end=max(head_end, sig_start),
        body=(d.body.start_byte, d.body.end_byte) if d.body is not None else None,
        detail=d.detail,
        definition=d.definition,
        depth=depth,
        parent=qualified,
        lookup=normal_parts((*parts, *scope, d.name)),
    )


def outer_node(node: Node, rules: Rules) -> Node:
    """The node whose span is the whole definition: climbs through wrapper parents."""
    current = node
    while True:
        parent = current.parent
        if parent is None or parent.type not in rules.wrappers:
            return current
        rivals = [c for c in parent.named_children if c.type == current.type and c.id != current.id]
        if rivals:
            return current
        current = parent


def _first_leading(outer: Node, rules: Rules) -> Node:
    """The earliest of the attributes/decorators right before a definition (or the definition)."""
    first = outer
    sibling = outer.prev_named_sibling
    while sibling is not None and sibling.type in rules.leading:
        first = sibling
        sibling = sibling.prev_named_sibling
    return first


def _signature_start(node: Node, outer: Node) -> int:
    """Where a signature starts: wrappers (template, export) count, Python decorators do not."""
    current = node
    start = node.start_byte
    while current.id != outer.id and current.parent is not None:
        current = current.parent
        if current.type != "decorated_definition":
            start = current.start_byte
    return start


def walk_named(node: Node) -> Iterator[Node]:
    """Every named descendant of a node, depth first (for small, bounded subtrees)."""
    for child in node.named_children:
        yield child
        yield from walk_named(child)
