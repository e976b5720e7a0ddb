"""Definitions in Go and Rust.

Go: functions, methods (qualified by their receiver type, ``Point.Move``), and types
(structs, interfaces, aliases), including grouped ``type ( ... )`` declarations.
Rust: modules, structs, enums, unions, traits, type aliases, functions, macros and ``impl``
blocks; a method in ``impl Type`` or ``impl Trait for Type`` is named ``Type::method``.
Outer attributes (``#[derive(...)]``) belong to the item they precede.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeward.engines.code_intel.outline_model import Def, Rules, field_text, node_text

if TYPE_CHECKING:
    from tree_sitter import Node

RUST_TYPES = {"struct_item": "struct", "enum_item": "enum", "union_item": "union", "trait_item": "trait"}
GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}
OPAQUE = frozenset({"block", "parameter_list", "parameters", "comment", "line_comment", "block_comment",
                    "import_declaration", "use_declaration", "field_declaration_list", "token_tree",
                    "enum_variant_list", "var_declaration", "const_declaration"})


def rules(language: str) -> Rules:
    if language == "go":
        return Rules(classify=_go, separator=".", opaque=OPAQUE)
    return Rules(classify=_rust, separator="::", leading=frozenset({"attribute_item"}), opaque=OPAQUE)


def _go(node: Node) -> Def | None:
    kind = node.type
    if kind == "function_declaration":
        return Def("function", field_text(node, "name"), node, body=node.child_by_field_name("body"))
    if kind == "method_declaration":
        receiver = _go_receiver_type(node.child_by_field_name("receiver"))
        return Def("method", field_text(node, "name"), node, scope=(receiver,) if receiver else (),
                   body=node.child_by_field_name("body"))
    if kind in ("type_spec", "type_alias"):
        value = node.child_by_field_name("type")
        what = "type" if kind == "type_alias" or value is None else GO_TYPE_KINDS.get(value.type, "type")
        parent = node.parent
        single = parent is not None and parent.type == "type_declaration" and parent.named_child_count == 1
        return Def(what, field_text(node, "name"), parent if single and parent is not None else node)
    return None


def _go_receiver_type(receiver: Node | None) -> str:
    """``(p *Point[T])`` → ``Point``."""
    if receiver is None:
        return ""
    for param in receiver.named_children:
        type_node = param.child_by_field_name("type")
        while type_node is not None and type_node.type in ("pointer_type", "generic_type", "parenthesized_type"):
            inner = type_node.child_by_field_name("type")
            type_node = inner if inner is not None else (type_node.named_children[0] if
                                                         type_node.named_children else None)
        if type_node is not None:
            return node_text(type_node)
    return ""


def _rust(node: Node) -> Def | None:
    kind = node.type
    if kind in RUST_TYPES:
        return Def(RUST_TYPES[kind], field_text(node, "name"), node, members=_members(node, kind),
                   head_end=_head_end(node))
    if kind == "function_item":
        return Def("function", field_text(node, "name"), node, body=node.child_by_field_name("body"))
    if kind == "function_signature_item":
        return Def("prototype", field_text(node, "name"), node, definition=False, head_end=_before_semicolon(node))
    if kind == "impl_item":
        type_name = _rust_type_name(node.child_by_field_name("type"))
        trait = node.child_by_field_name("trait")
        detail = f"impl {node_text(trait)} for {type_name}" if trait is not None else f"impl {type_name}"
        return Def("impl", type_name, node, members=node.child_by_field_name("body"), detail=detail,
                   separator="::") if type_name else None
    if kind == "mod_item":
        return Def("module", field_text(node, "name"), node, members=node.child_by_field_name("body"),
                   head_end=None if node.child_by_field_name("body") is not None else _before_semicolon(node))
    if kind == "type_item":
        return Def("type", field_text(node, "name"), node, head_end=_before_semicolon(node))
    if kind == "macro_definition":
        return Def("macro", field_text(node, "name"), node)
    return None


def _members(node: Node, kind: str) -> Node | None:
    return node.child_by_field_name("body") if kind == "trait_item" else None


def _head_end(node: Node) -> int | None:
    body = node.child_by_field_name("body")
    return body.start_byte if body is not None else _before_semicolon(node)


def _rust_type_name(node: Node | None) -> str:
    """``S<T>`` → ``S``; ``crate::a::S`` → ``S``; ``&'a S`` → ``S``."""
    current = node
    while current is not None:
        if current.type in ("type_identifier", "primitive_type", "identifier"):
            return node_text(current)
        if current.type == "scoped_type_identifier":
            current = current.child_by_field_name("name")
            continue
        inner = current.child_by_field_name("type")
        if inner is None:
            named = [c for c in current.named_children if c.type != "lifetime"]
            inner = named[0] if named else None
        current = inner
    return ""


def _before_semicolon(node: Node) -> int:
    last = node.children[-1] if node.children else None
    return last.start_byte if last is not None and last.type == ";" else node.end_byte
