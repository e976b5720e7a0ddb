"""Definitions in C and C++: functions, prototypes, structs, unions, classes, enums, typedefs.

C++ adds namespaces, templates (the ``template<...>`` header belongs to the definition),
``using`` aliases and out-of-line members: ``void ns::Foo::bar() {}`` is found under the
qualified name ``ns::Foo::bar`` wherever it is written, and counts as a method when
``Foo`` is a class or struct of the same file.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from codeward.engines.code_intel.c_macros import blank_macros, macro_prefix_start
from codeward.engines.code_intel.outline_model import Def, Rules, Symbol, field_text, first_child_of_type, node_text

if TYPE_CHECKING:
    from tree_sitter import Node

TYPE_SPECIFIERS = {"struct_specifier": "struct", "union_specifier": "union", "class_specifier": "class",
                   "enum_specifier": "enum"}
DECLARATOR_WRAPPERS = frozenset({"pointer_declarator", "reference_declarator", "parenthesized_declarator",
                                 "attributed_declarator", "init_declarator"})
OPAQUE = frozenset({"compound_statement", "parameter_list", "argument_list", "initializer_list",
                    "enumerator_list", "template_argument_list", "string_literal", "field_initializer_list",
                    "comment", "preproc_def", "preproc_function_def", "preproc_include", "preproc_call",
                    "expression_statement", "call_expression", "binary_expression"})
_SPACES = re.compile(r"\s+")


def rules(language: str) -> Rules:
    return Rules(
        classify=_classify,
        separator="::",
        wrappers=frozenset({"template_declaration"}),
        opaque=OPAQUE,
        trailing_semicolon=True,
        finish=_mark_methods,
        prepare=blank_macros,
        prefix_start=macro_prefix_start,
    )


def _classify(node: Node) -> Def | None:
    kind = node.type
    if kind in TYPE_SPECIFIERS:
        return _type_definition(node)
    if kind == "function_definition":
        return _function(node)
    if kind in ("declaration", "field_declaration"):
        return _prototype(node)
    if kind == "type_definition":
        return _typedef(node)
    if kind == "alias_declaration":
        return Def("typedef", field_text(node, "name"), node, head_end=_before_semicolon(node))
    if kind == "namespace_definition":
        body = node.child_by_field_name("body")
        name = field_text(node, "name") or "(anonymous)"
        return Def("namespace", name, node, members=body, definition=True)
    return None


def _type_definition(node: Node) -> Def | None:
    body = node.child_by_field_name("body")
    name_node = node.child_by_field_name("name")
    if body is None or name_node is None:
        return None
    scope, name = _split_name(name_node)
    bases = first_child_of_type(node, "base_class_clause")
    detail = _SPACES.sub(" ", node_text(bases)) if bases is not None else ""
    return Def(TYPE_SPECIFIERS[node.type], name, node, scope=scope, members=body, detail=detail)


def _function(node: Node) -> Def | None:
    named = _function_name(node)
    if named is None:
        return None
    scope, name = named
    body = node.child_by_field_name("body")
    initializers = first_child_of_type(node, "field_initializer_list")
    head_end = initializers.start_byte if initializers is not None else None
    if body is None:  # `= default;` / `= delete;`: a declaration, as ctags counts it
        return Def("prototype", name, node, scope=scope, head_end=_before_semicolon(node), definition=False)
    return Def("function", name, node, scope=scope, body=body, head_end=head_end)


def _prototype(node: Node) -> Def | None:
    named = _function_name(node)
    if named is None:
        return None
    scope, name = named
    return Def("prototype", name, node, scope=scope, head_end=_before_semicolon(node), definition=False,
               also=_defined_type(node))


def _typedef(node: Node) -> Def | None:
    declarators = node.children_by_field_name("declarator")
    names = [n for n in (_declared_name(d) for d in declarators) if n]
    if not names:
        return None
    return Def("typedef", names[0], node, head_end=_before_semicolon(node), also=_defined_type(node))


def _before_semicolon(node: Node) -> int:
    last = node.children[-1] if node.children else None
    return last.start_byte if last is not None and last.type == ";" else node.end_byte


def _defined_type(node: Node) -> Node | None:
    """A struct/class/enum defined inside a declaration (``typedef struct s {...} t;``)."""
    inner = node.child_by_field_name("type")
    if inner is not None and inner.type in TYPE_SPECIFIERS and inner.child_by_field_name("body") is not None:
        return inner
    return None


def _function_name(node: Node) -> tuple[tuple[str, ...], str] | None:
    """(scope, name) of the function a definition or prototype declares; ``None`` if it declares none."""
    declarator = _function_declarator(node.child_by_field_name("declarator"))
    if declarator is None:
        return None
    target = declarator.child_by_field_name("declarator") if declarator.type == "function_declarator" else declarator
    if target is None:
        return None
    scope, name = _split_name(target)
    return (scope, name) if name else None


def _function_declarator(node: Node | None) -> Node | None:
    """The function_declarator under pointer/reference wrappers (or a cast operator)."""
    current = node
    while current is not None:
        if current.type in ("function_declarator", "operator_cast"):
            return current
        if current.type not in DECLARATOR_WRAPPERS:
            return None
        inner = current.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in current.named_children if c.type.endswith("declarator")), None)
        current = inner
    return None


def _declared_name(node: Node | None) -> str:
    """The identifier a (possibly pointer/array/function) declarator declares."""
    current = node
    while current is not None:
        if current.type in ("type_identifier", "identifier", "primitive_type"):
            return node_text(current)
        inner = current.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in current.named_children if "declarator" in c.type or c.type.endswith(
                "identifier")), None)
        current = inner
    return ""


def _split_name(node: Node) -> tuple[tuple[str, ...], str]:
    """``ns::Foo<T>::bar`` → ((``ns``, ``Foo``), ``bar``); template arguments are dropped."""
    kind = node.type
    if kind == "qualified_identifier":
        scope_node = node.child_by_field_name("scope")
        name_node = node.child_by_field_name("name")
        head = (_plain_name(scope_node),) if scope_node is not None else ()
        if name_node is None:
            return head, ""
        inner_scope, name = _split_name(name_node)
        return (*head, *inner_scope), name
    return (), _plain_name(node)


def _plain_name(node: Node | None) -> str:
    if node is None:
        return ""
    kind = node.type
    if kind in ("template_type", "template_function", "template_method"):
        return _plain_name(node.child_by_field_name("name"))
    if kind == "operator_cast":
        return "operator " + _SPACES.sub(" ", field_text(node, "type"))
    if kind in ("operator_name", "destructor_name"):
        text = _SPACES.sub("", node_text(node))
        return text.replace("operator", "operator ", 1) if text.startswith("operator") and text[8:9].isalpha() \
            else text
    return _SPACES.sub(" ", node_text(node))


def _mark_methods(symbols: list[Symbol]) -> list[Symbol]:
    """Functions inside or qualified by a class/struct/union are methods."""
    types = {s.parts for s in symbols if s.kind in ("class", "struct", "union")}
    marked: list[Symbol] = []
    for symbol in symbols:
        owner = symbol.parts[:-1]
        if symbol.kind in ("function", "prototype") and owner and owner in types:
            kind = "method" if symbol.kind == "function" else "prototype"
            if symbol.name == owner[-1]:
                kind = "constructor" if symbol.definition else kind
            elif symbol.name.startswith("~"):
                kind = "destructor" if symbol.definition else kind
            symbol = replace(symbol, kind=kind)
        marked.append(symbol)
    return marked
