"""Definitions in the scripting languages: Python, Ruby, PHP, Lua and Bash.

Python: classes and functions (decorators included, nested classes). Ruby: modules,
classes, instance methods (``Foo#bar``) and singleton methods (``Foo.bar``). PHP:
namespaces (``namespace A\\B;`` scopes what follows), classes, interfaces, traits, enums,
functions and methods (``User::find``). Lua: functions, including ``M.f`` and ``M:m``
(named as written). Bash: functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeward.engines.code_intel.outline_model import Def, Rules, field_text, first_child_of_type, node_text

if TYPE_CHECKING:
    from tree_sitter import Node

PHP_TYPES = {"class_declaration": "class", "interface_declaration": "interface", "trait_declaration": "trait",
             "enum_declaration": "enum"}
OPAQUE = frozenset({"comment", "string", "parameters", "formal_parameters", "method_parameters",
                    "argument_list", "arguments", "import_statement", "import_from_statement",
                    "expression_statement", "return_statement", "heredoc_body", "use_declaration",
                    "namespace_use_declaration", "text"})


def rules(language: str) -> Rules:
    if language == "python":
        return Rules(classify=_python, separator=".", wrappers=frozenset({"decorated_definition"}), opaque=OPAQUE)
    if language == "ruby":
        return Rules(classify=_ruby, separator="::", opaque=OPAQUE)
    if language == "php":
        return Rules(classify=_php, separator="::", leading=frozenset({"attribute_list"}), opaque=OPAQUE)
    if language == "lua":
        return Rules(classify=_lua, separator=".", wrappers=frozenset({"local_declaration", "variable_declaration"}),
                     opaque=OPAQUE)
    return Rules(classify=_bash, separator=".", opaque=OPAQUE)


def _python(node: Node) -> Def | None:
    if node.type == "class_definition":
        bases = node.child_by_field_name("superclasses")
        return Def("class", field_text(node, "name"), node, members=node.child_by_field_name("body"),
                   detail=node_text(bases), head_end=_python_colon(node))
    if node.type == "function_definition":
        return Def("function", field_text(node, "name"), node, body=node.child_by_field_name("body"),
                   head_end=_python_colon(node))
    if node.type == "block" and node.parent is not None and node.parent.type == "function_definition":
        return None
    return None


def _python_colon(node: Node) -> int:
    """End of ``def f(...) -> T:`` / ``class C(B):`` (through the colon)."""
    for child in node.children:
        if child.type == ":":
            return child.end_byte
    body = node.child_by_field_name("body")
    return body.start_byte if body is not None else node.end_byte


def _ruby(node: Node) -> Def | None:
    kind = node.type
    if kind in ("class", "module"):
        scope, name = _ruby_constant_path(node.child_by_field_name("name"))
        superclass = node.child_by_field_name("superclass")
        body = node.child_by_field_name("body")
        return Def(kind, name, node, scope=scope, members=body, detail=node_text(superclass),
                   head_end=body.start_byte if body is not None else _ruby_head_end(node)) if name else None
    if kind == "method":
        in_singleton = node.parent is not None and node.parent.parent is not None and \
            node.parent.parent.type == "singleton_class"
        return Def("method", field_text(node, "name"), node, body=node.child_by_field_name("body"),
                   separator="." if in_singleton else "#", head_end=_ruby_head_end(node))
    if kind == "singleton_method":
        return Def("method", field_text(node, "name"), node, body=node.child_by_field_name("body"),
                   separator=".", head_end=_ruby_head_end(node))
    return None


def _ruby_head_end(node: Node) -> int:
    end = node.start_byte
    for field in ("name", "parameters", "superclass"):
        part = node.child_by_field_name(field)
        if part is not None:
            end = max(end, part.end_byte)
    return end


def _ruby_constant_path(node: Node | None) -> tuple[tuple[str, ...], str]:
    if node is None:
        return (), ""
    if node.type == "scope_resolution":
        scope_node = node.child_by_field_name("scope")
        head: tuple[str, ...] = ()
        if scope_node is not None:
            inner_scope, inner = _ruby_constant_path(scope_node)
            head = (*inner_scope, inner)
        return head, field_text(node, "name")
    return (), node_text(node)


def _php(node: Node) -> Def | None:
    kind = node.type
    if kind in PHP_TYPES:
        parts = [node_text(c) for c in node.named_children if c.type in ("base_clause", "class_interface_clause")]
        return Def(PHP_TYPES[kind], field_text(node, "name"), node, members=node.child_by_field_name("body"),
                   detail=" ".join(" ".join(p.split()) for p in parts), separator="\\")
    if kind == "namespace_definition":
        body = node.child_by_field_name("body")
        name = field_text(node, "name")
        return Def("namespace", name, node, members=body, scopes_siblings=body is None, separator="\\",
                   head_end=None if body is not None else _before_semicolon(node)) if name else None
    if kind in ("function_definition", "method_declaration"):
        body = node.child_by_field_name("body")
        return Def("function" if kind == "function_definition" else "method", field_text(node, "name"), node,
                   body=body, definition=body is not None, separator=_php_separator(node),
                   head_end=None if body is not None else _before_semicolon(node))
    return None


def _php_separator(node: Node) -> str:
    """Functions in a namespace are ``App\\helper``; methods are ``User::find``."""
    return "::" if node.type == "method_declaration" else "\\"


def _lua(node: Node) -> Def | None:
    if node.type == "function_declaration":
        scope, name = _lua_name(node.child_by_field_name("name"))
        return Def("function", name, node, scope=scope, body=node.child_by_field_name("body"),
                   head_end=_lua_head_end(node)) if name else None
    if node.type == "assignment_statement":
        names = node.child_by_field_name("variable_list") or first_child_of_type(node, "variable_list")
        values = first_child_of_type(node, "expression_list")
        if names is None or values is None or names.named_child_count != 1 or values.named_child_count != 1:
            return None
        value = values.named_children[0]
        if value.type == "function_definition":
            scope, name = _lua_name(names.named_children[0])
            return Def("function", name, node, scope=scope, body=value.child_by_field_name("body"),
                       head_end=_lua_head_end(value)) if name else None
    return None


def _lua_name(node: Node | None) -> tuple[tuple[str, ...], str]:
    """``a.b.c`` / ``a.b:c`` → ((``a``, ``b``), ``c``); other expressions keep their text."""
    if node is None:
        return (), ""
    if node.type in ("dot_index_expression", "method_index_expression"):
        table = node.child_by_field_name("table")
        last = node.child_by_field_name("field") or node.child_by_field_name("method")
        if table is not None and last is not None:
            scope, head = _lua_name(table)
            return (*scope, head), node_text(last)
    return (), node_text(node)


def _lua_head_end(node: Node) -> int:
    params = node.child_by_field_name("parameters")
    return params.end_byte if params is not None else node.end_byte


def _bash(node: Node) -> Def | None:
    if node.type == "function_definition":
        return Def("function", field_text(node, "name"), node, body=node.child_by_field_name("body"))
    return None


def _before_semicolon(node: Node) -> int:
    last = node.children[-1] if node.children else None
    return last.start_byte if last is not None and last.type == ";" else node.end_byte
