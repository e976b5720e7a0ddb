"""Definitions in JavaScript, TypeScript and TSX.

Functions (declared, or arrow/function expressions bound to a ``const``), classes and their
methods, and in TypeScript interfaces, type aliases, enums, namespaces and overload
signatures. ``export`` and decorators belong to the definition they precede.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeward.engines.code_intel.outline_model import Def, Rules, field_text, first_child_of_type, node_text

if TYPE_CHECKING:
    from tree_sitter import Node

FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
CLASS_NODES = {"class_declaration": "class", "abstract_class_declaration": "class", "class": "class",
               "interface_declaration": "interface", "enum_declaration": "enum"}
OPAQUE = frozenset({"statement_block", "expression_statement_never", "formal_parameters", "arguments",
                    "template_string", "string", "comment", "call_expression", "object", "array",
                    "binary_expression", "import_statement", "type_annotation", "parenthesized_expression"})


def rules(language: str) -> Rules:
    return Rules(
        classify=_classify,
        separator=".",
        wrappers=frozenset({"export_statement", "lexical_declaration", "variable_declaration",
                            "ambient_declaration"}),
        leading=frozenset({"decorator"}),
        opaque=OPAQUE,
    )


def _classify(node: Node) -> Def | None:
    kind = node.type
    if kind in ("function_declaration", "generator_function_declaration"):
        return Def("function", field_text(node, "name"), node, body=node.child_by_field_name("body"))
    if kind in ("function_signature",):
        return Def("prototype", field_text(node, "name"), node, definition=False, head_end=_before_semicolon(node))
    if kind in CLASS_NODES:
        name = field_text(node, "name") or ("default" if kind == "class" else "")
        if not name:
            return None
        heritage = first_child_of_type(node, "class_heritage", "extends_type_clause")
        detail = " ".join(node_text(heritage).split()) if heritage is not None else ""
        return Def(CLASS_NODES[kind], name, node, members=node.child_by_field_name("body"), detail=detail)
    if kind == "method_definition":
        name = field_text(node, "name")
        return Def("constructor" if name == "constructor" else "method", name, node,
                   body=node.child_by_field_name("body"))
    if kind in ("method_signature", "abstract_method_signature"):
        return Def("prototype", field_text(node, "name"), node, definition=False, head_end=_before_semicolon(node))
    if kind == "type_alias_declaration":
        return Def("type", field_text(node, "name"), node, head_end=_before_semicolon(node))
    if kind in ("internal_module", "module"):
        name = field_text(node, "name").strip("'\"")
        return Def("namespace", name, node, members=node.child_by_field_name("body")) if name else None
    if kind == "variable_declarator":
        value = node.child_by_field_name("value")
        binding = node.child_by_field_name("name")
        if value is None or binding is None or binding.type != "identifier":
            return None
        if value.type in FUNCTION_VALUES:
            return Def("function", node_text(binding), node, body=value.child_by_field_name("body"))
        if value.type == "class":
            return Def("class", node_text(binding), node, members=value.child_by_field_name("body"))
    if kind in ("public_field_definition", "field_definition"):
        value = node.child_by_field_name("value")
        if value is not None and value.type in FUNCTION_VALUES:
            field_name = field_text(node, "name") or field_text(node, "property")
            return Def("method", field_name, node, body=value.child_by_field_name("body")) if field_name else None
    return None


def _before_semicolon(node: Node) -> int:
    last = node.children[-1] if node.children else None
    return last.start_byte if last is not None and last.type == ";" else node.end_byte
