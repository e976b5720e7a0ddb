"""Tags of one source file: the definitions it makes and the identifiers it uses.

This is what the symbol index stores per file. Both halves come from one tree-sitter parse:

* **definitions** — a small query per language (in the spirit of tree-sitter's
  ``tags.scm``) finds classes, functions, methods, types, macros and top-level variables
  with their line range (decorators, ``template<>`` and ``export`` included), the qualified
  name (``Outer.Inner.method``; C++ ``ns::A::m`` is stored as ``ns.A.m``), the base classes
  and the first line of the declaration;
* **references** — every identifier outside comments and string literals, found by
  blanking those spans and scanning the bytes with one regular expression (far cheaper than
  materialising a tree-sitter node per identifier), grouped by name as byte offsets.

Everything here is a pure function of (language, bytes), so worker processes can run it on
many files in parallel; :class:`Extractors` holds the compiled queries for one process.
"""

from __future__ import annotations

import keyword
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from codeward.engines.code_intel.treesitter import get_language, get_parser, language_for_path

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser, Query

MAX_SIGNATURE_CHARS = 200
LINE_CHECKPOINT = 4096
TOKEN = re.compile(rb"[0-9][A-Za-z0-9_]*|\\[A-Za-z0-9_]|[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*")
"""Identifiers, plus numbers and escapes matched whole (then dropped) so that ``0x1F`` or
``\\n`` never yield a name. Non-ASCII bytes count as letters: UTF-8 identifiers stay whole."""
"""An identifier in any of the supported languages (non-ASCII bytes count as letters, so
UTF-8 identifiers are kept whole); the look-behind skips hex digits and escape letters."""
BLANKING = bytes(10 if byte == 10 else 32 for byte in range(256))
"""A ``bytes.translate`` table: every byte becomes a space except newlines (lines stay put)."""
CLASS_LIKE = frozenset({"class", "struct", "interface", "trait", "impl", "object", "protocol", "extension",
                        "enum", "union", "module", "record"})
WRAPPERS = frozenset({"decorated_definition", "template_declaration", "export_statement"})
"""Nodes that belong to the definition they wrap: decorators, ``template<...>``, ``export``."""
CONTEXTUAL_WORDS = frozenset({"get", "set", "of", "from", "as", "type", "default", "value", "field", "init",
                              "module", "name", "data", "open", "print", "exec", "match", "case", "async",
                              "await", "object", "where", "in", "is", "by", "constructor", "declare",
                              "namespace", "require", "include", "delete", "new", "source", "local"})
"""Words some grammars lex as keywords that are also common identifiers; kept as references."""
PREPROCESSOR_WORDS = frozenset({"define", "undef", "ifdef", "ifndef", "endif", "elif", "pragma", "error",
                                "include", "line", "warning", "defined"})


class Definition(NamedTuple):
    """One definition in a file. Lines are 1-based and inclusive."""

    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    name_line: int
    parent: str
    bases: tuple[str, ...]
    signature: str


@dataclass(frozen=True, slots=True)
class FileTags:
    """What the index stores for one file."""

    language: str
    definitions: list[Definition] = field(default_factory=list)
    identifiers: dict[str, bytes] = field(default_factory=dict)
    """Identifier -> the byte offsets where it occurs in code (outside comments and strings),
    ascending, packed as native unsigned ints (see :func:`unpack_offsets`)."""
    masked: bytes = b""
    """(start, end) byte spans of comments and strings, packed as native unsigned ints."""
    lines: bytes = b""
    """Newlines before every ``LINE_CHECKPOINT``-th byte, packed: a line number is then a
    count over at most that many bytes (see :func:`codeward.engines.code_intel.usage_scan.positions`)."""
    error: str = ""


@dataclass(frozen=True, slots=True)
class LanguageTags:
    """How to read tags from one grammar."""

    definitions: str
    """Query: ``@definition.<kind>`` on the definition, ``@name`` on its name, optionally
    ``@qualifier`` on an explicit owner (a Go receiver, a Lua table)."""
    masked: tuple[str, ...]
    """Node types blanked before identifiers are scanned (comments and string literals)."""
    kept: str = ""
    """Query: ``@keep`` on code inside masked nodes (the expression of an f-string ``{...}``)."""
    bases: str = ""
    """Query: ``@class`` on a class-like definition node, ``@base`` on each base it names."""
    keywords: frozenset[str] | None = None
    """Words that are never references; ``None`` derives them from the grammar."""


PYTHON = LanguageTags(
    definitions="""
(function_definition name: (identifier) @name) @definition.function
(class_definition name: (identifier) @name) @definition.class
(module (assignment left: (identifier) @name) @definition.variable)
(class_definition body: (block (assignment left: (identifier) @name) @definition.variable))
""",
    masked=("comment", "string"),
    kept="(interpolation expression: (_) @keep)",
    bases="""
(class_definition superclasses: (argument_list [(identifier) (attribute)] @base)) @class
""",
    keywords=frozenset(keyword.kwlist) | frozenset(keyword.softkwlist),
)

_C_FUNCTIONS = """
(function_definition declarator: (function_declarator declarator: (_) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))
  @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator
  declarator: (function_declarator declarator: (_) @name)))) @definition.function
(declaration declarator: (function_declarator declarator: (_) @name)) @definition.prototype
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))
  @definition.prototype
(declaration declarator: (pointer_declarator declarator: (pointer_declarator
  declarator: (function_declarator declarator: (_) @name)))) @definition.prototype
(struct_specifier name: (_) @name body: (_)) @definition.struct
(union_specifier name: (_) @name body: (_)) @definition.union
(enum_specifier name: (_) @name body: (_)) @definition.enum
(enumerator name: (identifier) @name) @definition.enumerator
(type_definition declarator: (type_identifier) @name) @definition.typedef
(type_definition declarator: (pointer_declarator declarator: (type_identifier) @name)) @definition.typedef
(type_definition declarator: (function_declarator declarator: (parenthesized_declarator
  (pointer_declarator declarator: (type_identifier) @name)))) @definition.typedef
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(translation_unit (declaration declarator: (identifier) @name) @definition.variable)
(translation_unit (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable)
"""
_C_MASKED = ("comment", "string_literal", "char_literal", "system_lib_string", "raw_string_literal")

C = LanguageTags(definitions=_C_FUNCTIONS, masked=_C_MASKED)
CPP = LanguageTags(
    definitions=_C_FUNCTIONS + """
(field_declaration declarator: (function_declarator declarator: (_) @name)) @definition.prototype
(field_declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))
  @definition.prototype
(class_specifier name: (_) @name body: (_)) @definition.class
(namespace_definition name: (_) @name) @definition.namespace
(alias_declaration name: (type_identifier) @name) @definition.typedef
(concept_definition name: (identifier) @name) @definition.type
""",
    masked=_C_MASKED,
    bases="""
(class_specifier (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @base)) @class
(struct_specifier (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @base)) @class
""",
)

_JS_DEFINITIONS = """
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function
"""
_JS_MASKED = ("comment", "html_comment", "string", "string_fragment", "regex")
JAVASCRIPT = LanguageTags(
    definitions=_JS_DEFINITIONS,
    masked=_JS_MASKED,
    bases="(class_declaration (class_heritage [(identifier) (member_expression)] @base)) @class",
)
_TS_DEFINITIONS = _JS_DEFINITIONS + """
(abstract_class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(type_alias_declaration name: (_) @name) @definition.type
(enum_declaration name: (_) @name) @definition.enum
(internal_module name: (_) @name) @definition.namespace
(method_signature name: (_) @name) @definition.method
(abstract_method_signature name: (_) @name) @definition.method
(function_signature name: (_) @name) @definition.prototype
"""
_TS_BASES = """
(class_declaration (class_heritage (extends_clause value: (_) @base))) @class
(class_declaration (class_heritage (implements_clause (_) @base))) @class
(abstract_class_declaration (class_heritage (extends_clause value: (_) @base))) @class
(interface_declaration (extends_type_clause (_) @base)) @class
"""
TYPESCRIPT = LanguageTags(definitions=_TS_DEFINITIONS, masked=_JS_MASKED, bases=_TS_BASES)

GO = LanguageTags(
    definitions="""
(function_declaration name: (identifier) @name) @definition.function
(method_declaration receiver: (parameter_list (parameter_declaration
  type: [(type_identifier) @qualifier (pointer_type (type_identifier) @qualifier)
         (generic_type type: (type_identifier) @qualifier)
         (pointer_type (generic_type type: (type_identifier) @qualifier))]))
  name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
""",
    masked=("comment", "interpreted_string_literal", "raw_string_literal", "rune_literal"),
    bases="(type_spec type: (struct_type (field_declaration_list (field_declaration !name type: (_) @base)))) @class",
)

RUST = LanguageTags(
    definitions="""
(struct_item name: (_) @name) @definition.struct
(enum_item name: (_) @name) @definition.enum
(union_item name: (_) @name) @definition.union
(trait_item name: (_) @name) @definition.trait
(impl_item type: (_) @name) @definition.impl
(function_item name: (_) @name) @definition.function
(function_signature_item name: (_) @name) @definition.prototype
(mod_item name: (_) @name) @definition.module
(const_item name: (_) @name) @definition.constant
(static_item name: (_) @name) @definition.variable
(type_item name: (_) @name) @definition.type
(macro_definition name: (_) @name) @definition.macro
""",
    masked=("line_comment", "block_comment", "string_literal", "raw_string_literal", "char_literal"),
    bases="(impl_item trait: (_) @base) @class",
)

JAVA = LanguageTags(
    definitions="""
(class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(enum_declaration name: (_) @name) @definition.enum
(record_declaration name: (_) @name) @definition.record
(annotation_type_declaration name: (_) @name) @definition.interface
(method_declaration name: (_) @name) @definition.method
(constructor_declaration name: (_) @name) @definition.method
""",
    masked=("line_comment", "block_comment", "string_literal", "character_literal"),
    bases="""
(class_declaration superclass: (superclass (_) @base)) @class
(class_declaration interfaces: (super_interfaces (type_list (_) @base))) @class
(interface_declaration (extends_interfaces (type_list (_) @base))) @class
""",
)

CSHARP = LanguageTags(
    definitions="""
(class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(struct_declaration name: (_) @name) @definition.struct
(enum_declaration name: (_) @name) @definition.enum
(record_declaration name: (_) @name) @definition.record
(delegate_declaration name: (_) @name) @definition.type
(namespace_declaration name: (_) @name) @definition.namespace
(method_declaration name: (_) @name) @definition.method
(constructor_declaration name: (_) @name) @definition.method
(property_declaration name: (_) @name) @definition.property
""",
    masked=("comment", "string_literal", "verbatim_string_literal", "raw_string_literal", "character_literal",
            "string_content"),
    bases="""
(class_declaration (base_list (_) @base)) @class
(struct_declaration (base_list (_) @base)) @class
(interface_declaration (base_list (_) @base)) @class
(record_declaration (base_list (_) @base)) @class
""",
)

RUBY = LanguageTags(
    definitions="""
(class name: (_) @name) @definition.class
(module name: (_) @name) @definition.module
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
""",
    masked=("comment", "string_content", "heredoc_content", "character"),
    bases="(class superclass: (superclass (_) @base)) @class",
)

PHP = LanguageTags(
    definitions="""
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.method
""",
    masked=("comment", "string", "string_content", "nowdoc_string"),
    bases="""
(class_declaration (base_clause (_) @base)) @class
(class_declaration (class_interface_clause (_) @base)) @class
""",
)

KOTLIN = LanguageTags(
    definitions="""
(class_declaration "interface" (type_identifier) @name) @definition.interface
(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.object
(function_declaration (simple_identifier) @name) @definition.function
(type_alias (type_identifier) @name) @definition.type
""",
    masked=("line_comment", "multiline_comment", "string_content", "character_literal"),
    bases="""
(class_declaration (delegation_specifier [(user_type (type_identifier) @base)
  (constructor_invocation (user_type (type_identifier) @base))])) @class
""",
)

SWIFT = LanguageTags(
    definitions="""
(class_declaration declaration_kind: "struct" name: (_) @name) @definition.struct
(class_declaration declaration_kind: "enum" name: (_) @name) @definition.enum
(class_declaration declaration_kind: "extension" name: (_) @name) @definition.extension
(class_declaration name: (_) @name) @definition.class
(protocol_declaration name: (_) @name) @definition.protocol
(function_declaration name: (_) @name) @definition.function
(protocol_function_declaration name: (_) @name) @definition.prototype
(typealias_declaration name: (_) @name) @definition.type
""",
    masked=("comment", "multiline_comment", "line_string_literal", "multi_line_string_literal",
            "raw_string_literal", "regex_literal"),
    bases="(class_declaration (inheritance_specifier inherits_from: (_) @base)) @class",
)

LUA = LanguageTags(
    definitions="""
(function_declaration name: (identifier) @name) @definition.function
(function_declaration name: (dot_index_expression table: (_) @qualifier field: (identifier) @name))
  @definition.function
(function_declaration name: (method_index_expression table: (_) @qualifier method: (identifier) @name))
  @definition.method
(assignment_statement (variable_list name: (identifier) @name) (expression_list value: (function_definition)))
  @definition.function
""",
    masked=("comment", "string"),
)

BASH = LanguageTags(
    definitions="(function_definition name: (word) @name) @definition.function",
    masked=("comment", "string_content", "raw_string", "heredoc_content", "ansi_c_string"),
)

LANGUAGE_TAGS: Mapping[str, LanguageTags] = MappingProxyType({
    "python": PYTHON, "c": C, "cpp": CPP, "javascript": JAVASCRIPT, "typescript": TYPESCRIPT,
    "tsx": TYPESCRIPT, "go": GO, "rust": RUST, "java": JAVA, "csharp": CSHARP, "ruby": RUBY, "php": PHP,
    "kotlin": KOTLIN, "swift": SWIFT, "lua": LUA, "bash": BASH,
})


def tagged_language(path: str) -> str | None:
    """The grammar the index uses for a file, or ``None`` when the index skips it."""
    language = language_for_path(path)
    return language if language in LANGUAGE_TAGS else None


@dataclass
class Extractor:
    """One compiled query for one language: definitions, bases and masked spans in one pass.

    A tree-sitter query walks the whole tree once, whatever its number of patterns, so the
    three questions share a single traversal. Instances are per process (not thread-safe).
    """

    language: str
    parser: Parser
    query: Query
    kinds: tuple[str, ...]
    """Definition kinds in query order: when one node matches two patterns (a Go struct is
    also a type), the earlier, more specific kind wins."""
    keywords: frozenset[str]

    @classmethod
    def create(cls, language: str) -> Extractor:
        from tree_sitter import Query

        spec = LANGUAGE_TAGS[language]
        grammar = get_language(language)
        masked_types = [t for t in spec.masked if _has_node_type(grammar, t)]
        text = spec.definitions + "\n" + spec.bases
        if masked_types:
            text += "\n[" + " ".join(f"({t})" for t in masked_types) + "] @mask"
        text += "\n" + spec.kept
        kinds = tuple(dict.fromkeys(re.findall(r"@definition\.(\w+)", spec.definitions)))
        keywords = spec.keywords if spec.keywords is not None else _grammar_keywords(grammar, language)
        return cls(language, get_parser(language), Query(grammar, text), kinds, keywords)

    def extract(self, source: bytes) -> FileTags:
        """Definitions, identifier counts and masked spans of one file's bytes."""
        from tree_sitter import QueryCursor

        tree = self.parser.parse(source)
        captures = QueryCursor(self.query).captures(tree.root_node)
        spans = array("I")
        blanked = bytearray(source)
        for node in sorted(captures.get("mask", ()), key=_start):  # captures of several patterns interleave
            start, end = node.start_byte, node.end_byte
            blanked[start:end] = source[start:end].translate(BLANKING)
            spans.append(start)
            spans.append(end)
        kept = captures.get("keep")
        if kept:
            spans = _unmask(blanked, source, spans, sorted((n.start_byte, n.end_byte) for n in kept))
        definitions = self._definitions(captures, source)
        return FileTags(self.language, definitions, self.identifier_offsets(bytes(blanked)), spans.tobytes(),
                        line_checkpoints(source))

    def identifier_offsets(self, blanked: bytes) -> dict[str, bytes]:
        """Where each identifier occurs in code (comments and strings already blanked)."""
        found: dict[bytes, array[int]] = {}
        for match in TOKEN.finditer(blanked):
            word = match.group()
            offsets = found.get(word)
            if offsets is None:
                if word[0] < 65 or word[0] == 92:  # a number or an escape (0-9 are below "A", 92 is "\\")
                    continue
                offsets = found[word] = array("I")
            offsets.append(match.start())
        keywords = self.keywords
        result: dict[str, bytes] = {}
        for word, offsets in found.items():
            name = word.decode("utf-8", "replace")
            if name not in keywords:
                result[name] = offsets.tobytes()
        return result

    def _definitions(self, captures: dict[str, list[Node]], source: bytes) -> list[Definition]:
        names = sorted(captures.get("name", []), key=_start)
        name_starts = [node.start_byte for node in names]
        qualifiers = sorted(captures.get("qualifier", []), key=_start)
        qualifier_starts = [node.start_byte for node in qualifiers]
        chosen: dict[tuple[int, int], tuple[int, str, Node]] = {}
        for rank, kind in enumerate(self.kinds):
            for node in captures.get("definition." + kind, ()):
                key = (node.start_byte, node.end_byte)
                if key not in chosen or chosen[key][0] > rank:
                    chosen[key] = (rank, kind, node)
        found: list[_Match] = []
        for (start, end), (_rank, kind, node) in chosen.items():
            at = bisect_left(name_starts, start)
            if at == len(names) or name_starts[at] >= end:
                continue
            name_node = names[at]
            qualifier = ""
            q_at = bisect_left(qualifier_starts, start)
            if q_at < len(qualifiers) and qualifier_starts[q_at] < name_node.start_byte:
                qualifier = _text(qualifiers[q_at])
            found.append(_Match(start, end, kind, node, name_node, qualifier))
        bases = _bases_by_class(captures.get("class", []), captures.get("base", []))
        return _nest(found, bases, source, cut_at_brace=self.language != "python")


def _unmask(blanked: bytearray, source: bytes, spans: array[int], kept: list[tuple[int, int]]) -> array[int]:
    """Restore code inside masked spans (interpolations) and cut those holes out of the spans."""
    for start, end in kept:
        blanked[start:end] = source[start:end]
    result = array("I")
    holes = iter(kept)
    hole = next(holes, None)
    for at in range(0, len(spans), 2):
        start, end = spans[at], spans[at + 1]
        while hole is not None and hole[1] <= start:
            hole = next(holes, None)
        while hole is not None and hole[0] < end:
            if hole[0] > start:
                result.append(start)
                result.append(hole[0])
            start = max(start, hole[1])
            if hole[1] > end:
                break
            hole = next(holes, None)
        if start < end:
            result.append(start)
            result.append(end)
    # A string nested in a kept expression (f'{"a"}') comes after the span the hole was cut
    # from: sort, so lookups can bisect, and blank it again, so the text agrees with the spans.
    pairs = sorted(zip(result[0::2], result[1::2], strict=True))
    ordered = array("I")
    for start, end in pairs:
        blanked[start:end] = source[start:end].translate(BLANKING)
        ordered.append(start)
        ordered.append(end)
    return ordered


class _Match(NamedTuple):
    start: int
    end: int
    kind: str
    node: Node
    name: Node
    qualifier: str


def _bases_by_class(classes: list[Node], bases: list[Node]) -> dict[tuple[int, int], list[str]]:
    """Each base name assigned to the innermost class node whose header holds it."""
    owners = sorted({(n.start_byte, n.end_byte) for n in classes})
    starts = [start for start, _end in owners]
    result: dict[tuple[int, int], list[str]] = {}
    for base in bases:
        at = bisect_right(starts, base.start_byte) - 1
        while at >= 0 and owners[at][1] < base.end_byte:
            at -= 1
        if at < 0:
            continue
        owner = owners[at]
        text = " ".join(_text(base).split())
        names = result.setdefault(owner, [])
        if text and text not in names:
            names.append(text)
    return result


def _nest(
    found: list[_Match],
    bases: dict[tuple[int, int], list[str]],
    source: bytes,
    *,
    cut_at_brace: bool,
) -> list[Definition]:
    """Turn matched nodes into definitions with qualified names from their nesting."""
    found.sort(key=lambda match: (match.start, -match.end))
    stack: list[tuple[int, str, str]] = []  # (end byte, qualname, kind) of open definitions
    definitions: list[Definition] = []
    for start, end, kind, node, name_node, qualifier in found:
        while stack and stack[-1][0] <= start:
            stack.pop()
        raw_name = _text(name_node)
        name, owner = _split_name(raw_name)
        if qualifier:
            owner = ".".join(p for p in (_normalize_owner(qualifier), owner) if p)
        parent_qual, parent_kind = (stack[-1][1], stack[-1][2]) if stack else ("", "")
        parent = ".".join(p for p in (parent_qual, owner) if p)
        qualname = f"{parent}.{name}" if parent else name
        owned_by_class = parent_kind in CLASS_LIKE or bool(owner)
        if kind == "function" and owned_by_class:
            kind = "method"
        elif kind == "method" and not owned_by_class:
            kind = "function"
        outer = node
        while outer.parent is not None and outer.parent.type in WRAPPERS:
            outer = outer.parent
        line = outer.start_point[0] + 1
        end_row, end_col = node.end_point
        end_line = max(line, end_row + 1 if end_col > 0 else end_row)
        definitions.append(Definition(
            name=name,
            qualname=qualname,
            kind=kind,
            line=line,
            end_line=end_line,
            name_line=name_node.start_point[0] + 1,
            parent=parent,
            bases=tuple(bases.get((start, end), ())),
            signature=_signature(source, node.start_byte, name_node.end_byte, node.end_byte, cut_at_brace),
        ))
        stack.append((end, qualname, kind))
    return definitions


def _split_name(raw: str) -> tuple[str, str]:
    """``ns::A::m`` -> (``m``, ``ns.A``); template arguments are dropped."""
    text = re.sub(r"<[^<>]*>", "", " ".join(raw.split()))
    if "::" in text:
        owner, _sep, name = text.rpartition("::")
        return name.strip(), _normalize_owner(owner)
    return text, ""


def _normalize_owner(owner: str) -> str:
    return ".".join(p.strip() for p in re.sub(r"<[^<>]*>", "", owner).replace("::", ".").split(".") if p.strip())


def _signature(source: bytes, start: int, name_end: int, end: int, cut_at_brace: bool) -> str:
    """The declaration from its first byte to the end of the line holding its name (or its ``{``)."""
    line_end = source.find(b"\n", name_end, end)
    if line_end == -1:
        line_end = end
    if cut_at_brace:
        brace = source.find(b"{", name_end, line_end)
        if brace != -1:
            line_end = brace
    text = source[start : min(line_end, start + 4 * MAX_SIGNATURE_CHARS)].decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= MAX_SIGNATURE_CHARS else text[: MAX_SIGNATURE_CHARS - 3] + "..."


def _start(node: Node) -> int:
    return node.start_byte


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _has_node_type(grammar: Language, name: str) -> bool:
    try:
        return bool(grammar.id_for_node_kind(name, True))
    except (ValueError, TypeError):
        return False


def _grammar_keywords(grammar: Language, language: str) -> frozenset[str]:
    """The grammar's reserved words: its anonymous tokens that look like identifiers."""
    words = set()
    for kind_id in range(grammar.node_kind_count):
        kind = grammar.node_kind_for_id(kind_id)
        if kind and not grammar.node_kind_is_named(kind_id) and kind.isidentifier():
            words.add(kind)
    if language in ("c", "cpp"):
        words |= PREPROCESSOR_WORDS
    return frozenset(words - CONTEXTUAL_WORDS)


@dataclass
class Extractors:
    """Lazily created extractors by language, for one worker (or one call)."""

    by_language: dict[str, Extractor] = field(default_factory=dict)

    def get(self, language: str) -> Extractor:
        extractor = self.by_language.get(language)
        if extractor is None:
            extractor = self.by_language[language] = Extractor.create(language)
        return extractor

    def extract(self, language: str, source: bytes) -> FileTags:
        """Tags of one file; never raises (a failure is reported in :attr:`FileTags.error`)."""
        if b"\x00" in source[:8192]:
            return FileTags(language, error="binary file")
        try:
            return self.get(language).extract(source)
        except Exception as exc:  # a grammar failure must not stop a whole index build
            return FileTags(language, error=f"{type(exc).__name__}: {exc}")


def line_checkpoints(source: bytes) -> bytes:
    """How many newlines precede each multiple of :data:`LINE_CHECKPOINT` bytes, packed."""
    counts = array("I", [0])
    total = 0
    for start in range(0, len(source) - LINE_CHECKPOINT, LINE_CHECKPOINT):
        total += source.count(b"\n", start, start + LINE_CHECKPOINT)
        counts.append(total)
    return counts.tobytes()


def unpack_offsets(packed: bytes) -> array[int]:
    """Offsets packed by :meth:`Extractor.identifier_offsets` or :func:`line_checkpoints`."""
    values = array("I")
    values.frombytes(packed)
    return values


def unpack_spans(packed: bytes) -> list[tuple[int, int]]:
    """The masked spans stored in :attr:`FileTags.masked`."""
    flat = array("I")
    flat.frombytes(packed)
    return list(zip(flat[0::2], flat[1::2], strict=True))


def blank_spans(source: bytes, spans: list[tuple[int, int]]) -> bytes:
    """``source`` with the given spans blanked: offsets and line breaks kept."""
    buffer = bytearray(source)
    for start, end in spans:
        buffer[start:end] = source[start:end].translate(BLANKING)
    return bytes(buffer)
