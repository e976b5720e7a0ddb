"""Definitions in the class-based languages: Java, Kotlin, C# and Swift.

Types (classes, interfaces, enums, records, structs, objects, protocols, extensions) with
their methods, constructors and properties; C# namespaces, including file-scoped ones
(``namespace X;`` scopes everything after it). Annotations and attributes are part of the
definition (the grammars put them inside the node).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeward.engines.code_intel.outline_model import Def, Rules, field_text, first_child_of_type, node_text

if TYPE_CHECKING:
    from tree_sitter import Node

JAVA_TYPES = {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
              "record_declaration": "record", "annotation_type_declaration": "interface"}
CSHARP_TYPES = {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
                "record_declaration": "record", "struct_declaration": "struct",
                "record_struct_declaration": "struct"}
SWIFT_KINDS = {"class": "class", "struct": "struct", "enum": "enum", "extension": "extension", "actor": "actor"}
OPAQUE = frozenset({"block", "constructor_body", "function_body", "formal_parameters", "parameter_list",
                    "function_value_parameters", "statements", "comment", "line_comment", "block_comment",
                    "multiline_comment", "import_declaration", "using_directive", "import_list",
                    "arrow_expression_clause", "accessor_list", "modifiers", "attribute_list"})


def rules(language: str) -> Rules:
    classify = {"java": _java, "kotlin": _kotlin, "csharp": _csharp, "swift": _swift}[language]
    return Rules(classify=classify, separator=".", opaque=OPAQUE)


def _java(node: Node) -> Def | None:
    kind = node.type
    if kind in JAVA_TYPES:
        return _type(node, JAVA_TYPES[kind], _java_bases(node))
    if kind in ("method_declaration", "constructor_declaration", "compact_constructor_declaration"):
        body = node.child_by_field_name("body")
        what = "method" if kind == "method_declaration" else "constructor"
        return Def(what, field_text(node, "name"), node, body=body, definition=body is not None,
                   head_end=None if body is not None else _before_semicolon(node))
    return None


def _java_bases(node: Node) -> str:
    parts = [node_text(node.child_by_field_name(f)) for f in ("superclass", "interfaces")]
    extends = first_child_of_type(node, "extends_interfaces")
    if extends is not None:
        parts.append(node_text(extends))
    return " ".join(" ".join(p.split()) for p in parts if p)


def _csharp(node: Node) -> Def | None:
    kind = node.type
    if kind in CSHARP_TYPES:
        bases = first_child_of_type(node, "base_list")
        return _type(node, CSHARP_TYPES[kind], " ".join(node_text(bases).split()) if bases is not None else "")
    if kind in ("namespace_declaration", "file_scoped_namespace_declaration"):
        name = field_text(node, "name")
        body = node.child_by_field_name("body")
        return Def("namespace", name, node, members=body, scopes_siblings=body is None,
                   head_end=None if body is not None else _before_semicolon(node))
    if kind in ("method_declaration", "constructor_declaration", "destructor_declaration",
                "operator_declaration", "local_function_statement"):
        body = node.child_by_field_name("body") or first_child_of_type(node, "arrow_expression_clause")
        what = {"constructor_declaration": "constructor", "destructor_declaration": "destructor"}.get(kind, "method")
        name = field_text(node, "name") or field_text(node, "operator")
        if kind == "destructor_declaration":
            name = "~" + name
        return Def(what, name, node, body=body, definition=body is not None,
                   head_end=None if body is not None else _before_semicolon(node))
    if kind == "property_declaration":
        accessors = node.child_by_field_name("accessors") or first_child_of_type(node, "arrow_expression_clause")
        return Def("property", field_text(node, "name"), node, head_end=accessors.start_byte if accessors else None)
    if kind == "delegate_declaration":
        return Def("type", field_text(node, "name"), node, head_end=_before_semicolon(node))
    return None


def _kotlin(node: Node) -> Def | None:
    kind = node.type
    if kind in ("class_declaration", "object_declaration", "companion_object"):
        name_node = first_child_of_type(node, "type_identifier", "simple_identifier")
        name = node_text(name_node) or ("Companion" if kind == "companion_object" else "")
        keywords = {c.type for c in node.children if not c.is_named}
        what = "object" if kind != "class_declaration" else "interface" if "interface" in keywords else (
            "enum" if "enum" in keywords else "class")
        body = first_child_of_type(node, "class_body", "enum_class_body")
        bases = [node_text(c) for c in node.named_children if c.type == "delegation_specifier"]
        return Def(what, name, node, members=body, detail=(": " + ", ".join(bases)) if bases else "",
                   head_end=None if body is not None else node.end_byte) if name else None
    if kind == "function_declaration":
        name = node_text(first_child_of_type(node, "simple_identifier"))
        receiver = node.child_by_field_name("receiver")
        body = first_child_of_type(node, "function_body")
        return Def("function", name, node, body=body, definition=body is not None,
                   detail=f"(extension of {node_text(receiver)})" if receiver is not None else "") if name else None
    if kind == "secondary_constructor":
        body = first_child_of_type(node, "statements", "block")
        return Def("constructor", "constructor", node, body=body)
    if kind == "type_alias":
        return Def("type", node_text(first_child_of_type(node, "type_identifier")), node)
    return None


def _swift(node: Node) -> Def | None:
    kind = node.type
    if kind == "class_declaration":
        keyword = next((c.type for c in node.children if c.type in SWIFT_KINDS), "class")
        name_node = node.child_by_field_name("name")
        bases = [node_text(c) for c in node.named_children if c.type == "inheritance_specifier"]
        return Def(SWIFT_KINDS[keyword], node_text(name_node), node, members=node.child_by_field_name("body"),
                   detail=(": " + ", ".join(bases)) if bases else "") if name_node is not None else None
    if kind == "protocol_declaration":
        return Def("protocol", field_text(node, "name"), node, members=node.child_by_field_name("body"))
    if kind in ("function_declaration", "protocol_function_declaration"):
        body = node.child_by_field_name("body")
        return Def("function", field_text(node, "name"), node, body=body, definition=body is not None)
    if kind in ("init_declaration", "deinit_declaration"):
        name = "init" if kind == "init_declaration" else "deinit"
        return Def("constructor" if name == "init" else "destructor", name, node,
                   body=node.child_by_field_name("body"))
    if kind == "typealias_declaration":
        return Def("type", field_text(node, "name"), node)
    return None


def _type(node: Node, kind: str, detail: str) -> Def | None:
    name = field_text(node, "name")
    if not name:
        return None
    body = node.child_by_field_name("body")
    return Def(kind, name, node, members=body, detail=detail,
               head_end=None if body is not None else _before_semicolon(node))


def _before_semicolon(node: Node) -> int:
    last = node.children[-1] if node.children else None
    return last.start_byte if last is not None and last.type == ";" else node.end_byte
