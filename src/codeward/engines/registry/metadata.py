"""Tool metadata read from source with ``ast`` and ``literal_eval`` — the file is never imported.

A tool file declares itself with module-level assignments (``__version__``, ``__tool_type__``,
``__executor_id__``, ``__category__``, optionally ``__dependencies__`` and ``CONFIG``), a module
docstring (whose optional ``Config Schema:`` section is the JSON Schema of its parameters)
and, for Python tools, a ``main`` function. Importing would run the file's code merely to
list it; parsing cannot.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from typing import Any

from codeward.kernel.python_parse import parse_python

SCHEMA_HEADING = "config schema:"
DUNDER_FIELDS = ("__version__", "__tool_type__", "__executor_id__", "__category__", "__dependencies__", "__env__",
                 "__network__")
LITERAL_FIELDS = (*DUNDER_FIELDS, "CONFIG")


@dataclass(frozen=True)
class ToolSource:
    """What a tool file says about itself, before validation."""

    docstring: str = ""
    description: str = ""
    schema_text: str = ""
    """The raw ``Config Schema:`` section (parsed and checked by validation)."""
    values: dict[str, Any] = field(default_factory=dict)
    """Literal values of the declared fields, by field name."""
    not_literal: dict[str, int] = field(default_factory=dict)
    """Fields assigned something other than a literal, with their line numbers."""
    has_main: bool = False
    main_is_async: bool = False
    syntax_error: str = ""


def read_tool_source(text: str) -> ToolSource:
    """Parse a tool's source; a syntax error is reported, never raised."""
    try:
        tree = parse_python(text)
    except SyntaxError as exc:
        return ToolSource(syntax_error=f"line {exc.lineno}: {exc.msg}")
    except ValueError as exc:  # NUL bytes
        return ToolSource(syntax_error=str(exc))
    docstring = ast.get_docstring(tree) or ""
    description, schema_text = split_docstring(docstring)
    values: dict[str, Any] = {}
    not_literal: dict[str, int] = {}
    has_main = main_is_async = False
    for node in tree.body:
        for target, value in _assignments(node):
            if target in LITERAL_FIELDS:
                try:
                    values[target] = ast.literal_eval(value)
                    not_literal.pop(target, None)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    not_literal[target] = value.lineno
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "main":
            has_main, main_is_async = True, isinstance(node, ast.AsyncFunctionDef)
    return ToolSource(docstring, description, schema_text, values, not_literal, has_main, main_is_async)


def split_docstring(docstring: str) -> tuple[str, str]:
    """The description and the ``Config Schema:`` section (everything after the heading)."""
    lines = docstring.splitlines()
    for index, line in enumerate(lines):
        if line.strip().lower() == SCHEMA_HEADING:
            return "\n".join(lines[:index]).strip(), textwrap.dedent("\n".join(lines[index + 1 :])).strip()
    return docstring.strip(), ""


def _assignments(node: ast.stmt) -> list[tuple[str, ast.expr]]:
    if isinstance(node, ast.Assign):
        return [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [(node.target.id, node.value)]
    return []
