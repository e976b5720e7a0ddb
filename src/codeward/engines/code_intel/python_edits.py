"""Small, exact text edits of Python statements, as a person would make them by hand.

Insert a statement after another (on its own line, indented like it), remove one name from an
import or one string from ``__all__`` (with its comma, or its whole line in a one-per-line
list), add a string to ``__all__`` in the list's own style. Each edit is a
:class:`TextEdit` on the module's text (character offsets); :func:`apply_edits` applies a
set of them at once. Nothing here parses or checks the result: the tools re-parse every
new text before writing it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from codeward.engines.code_intel.python_symbols import PythonModule, SourceText


@dataclass(frozen=True, order=True)
class TextEdit:
    """Replace ``text[start:end]`` by ``replacement`` (an insertion when ``start == end``)."""

    start: int
    end: int
    replacement: str


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """``text`` with every edit applied; edits must not overlap (insertions at one point keep their order)."""
    ordered = sorted(enumerate(edits), key=lambda item: (item[1].start, item[1].end, item[0]))
    pieces: list[str] = []
    cursor = 0
    for _, edit in ordered:
        if edit.start < cursor:
            raise ValueError(f"overlapping edits at offset {edit.start}")
        pieces.append(text[cursor:edit.start])
        pieces.append(edit.replacement)
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def node_span(source: SourceText, node: ast.AST) -> tuple[int, int]:
    """Character offsets of a node (``ast`` columns are UTF-8 bytes)."""
    lineno = getattr(node, "lineno", 1)
    end_lineno = getattr(node, "end_lineno", None) or lineno
    return (source.offset(lineno, getattr(node, "col_offset", 0)),
            source.offset(end_lineno, getattr(node, "end_col_offset", 0) or 0))


def stands_alone(source: SourceText, node: ast.stmt) -> bool:
    """Whether a statement has its lines to itself (only indentation before, only a comment after)."""
    start, end = node_span(source, node)
    first = source.line_offset(node.lineno)
    last = node.end_lineno or node.lineno
    rest = source.text[end:source.line_offset(last + 1)].strip()
    return not source.text[first:start].strip() and (not rest or rest.startswith("#"))


def insert_after(module: PythonModule, node: ast.stmt, statement: str) -> TextEdit:
    """Add ``statement`` right after ``node``, on a line of its own with ``node``'s indentation
    (or after a ``;`` when ``node`` shares its line, as in ``if x: import a``)."""
    source = module.source
    if not stands_alone(source, node):
        _, end = node_span(source, node)
        return TextEdit(end, end, f"; {statement}")
    last = node.end_lineno or node.lineno
    at = source.line_offset(last + 1)
    lead = "" if at == 0 or source.text[:at].endswith("\n") else "\n"
    return TextEdit(at, at, f"{lead}{source.indentation(node.lineno)}{statement}\n")


def insert_at_line(source: SourceText, line: int, text: str) -> TextEdit:
    """Insert whole lines before line ``line`` (1-based; one past the end appends)."""
    at = source.line_offset(line)
    lead = "" if at == 0 or source.text[:at].endswith("\n") else "\n"
    return TextEdit(at, at, lead + text)


def remove_item(source: SourceText, item: ast.AST) -> TextEdit:
    """Remove one item of a comma-separated list (an import's alias, an element of ``__all__``).

    Its comma goes with it (the one after it, or before it when it is last); an item alone on
    its line takes the whole line.
    """
    start, end = node_span(source, item)
    text = source.text
    after = _skip_blank(text, end)
    if after < len(text) and text[after] == ",":
        cut_end = _skip_blank(text, after + 1, newlines=False)
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", after)
        line_end = len(text) if line_end < 0 else line_end
        rest = text[after + 1:line_end].strip()
        if not text[line_start:start].strip() and (not rest or rest.startswith("#")) and "\n" not in text[end:after]:
            return TextEdit(line_start, min(line_end + 1, len(text)), "")
        return TextEdit(start, cut_end, "")
    before = start - 1
    while before >= 0 and text[before] in " \t\r\n\\":
        before -= 1
    if before >= 0 and text[before] == ",":
        line_start = text.rfind("\n", 0, start) + 1
        if not text[line_start:start].strip() and "\n" in text[before:start]:
            line_end = text.find("\n", end)
            rest = text[end:line_end if line_end >= 0 else len(text)].strip()
            if not rest or rest.startswith("#"):
                return TextEdit(line_start, min((line_end if line_end >= 0 else len(text)) + 1, len(text)), "")
        return TextEdit(before, end, "")
    return TextEdit(start, end, "")


def _skip_blank(text: str, position: int, *, newlines: bool = True) -> int:
    """The first offset at or after ``position`` that is not a blank (or a comment, with ``newlines``)."""
    cursor = position
    while cursor < len(text):
        char = text[cursor]
        if char in " \t" or (newlines and char in "\r\n\\"):
            cursor += 1
        elif newlines and char == "#":
            line_end = text.find("\n", cursor)
            cursor = len(text) if line_end < 0 else line_end
        else:
            break
    return cursor


def append_item(source: SourceText, sequence: ast.List | ast.Tuple, item: str) -> TextEdit:
    """Add ``item`` (source text) at the end of a list or tuple display, in its style: one per line
    with a trailing comma when it is written so, else after a comma on the last item's line."""
    if not sequence.elts:
        _, end = node_span(source, sequence)
        return TextEdit(end - 1, end - 1, item + ("," if isinstance(sequence, ast.Tuple) else ""))
    return _after_last(source, list(sequence.elts), sequence.lineno, item)


def append_alias(source: SourceText, statement: ast.ImportFrom, alias: str) -> TextEdit:
    """Add ``alias`` (``name`` or ``name as other``) to the names a ``from`` import takes, in its style."""
    return _after_last(source, list(statement.names), statement.lineno, alias)


def _after_last(source: SourceText, items: list[ast.AST], opening_line: int, item: str) -> TextEdit:
    text = source.text
    last = items[-1]
    _, last_end = node_span(source, last)
    after = _skip_blank(text, last_end, newlines=False)
    trailing_comma = after < len(text) and text[after] == ","
    lines = [getattr(i, "lineno", 0) for i in items]
    one_per_line = lines[-1] != opening_line and len(set(lines)) == len(lines)
    if one_per_line and trailing_comma:
        indent = source.indentation(lines[-1])
        line_end = text.find("\n", after)
        line_end = len(text) if line_end < 0 else line_end
        return TextEdit(line_end, line_end, f"\n{indent}{item},")
    if trailing_comma:
        return TextEdit(after + 1, after + 1, f" {item},")
    return TextEdit(last_end, last_end, f", {item}")


def string_literal_like(source: SourceText, example: ast.expr | None, value: str) -> str:
    """``value`` as a string literal quoted like ``example`` (double quotes when there is none)."""
    quote = '"'
    if isinstance(example, ast.Constant) and isinstance(example.value, str):
        start, _ = node_span(source, example)
        if source.text[start:start + 1] == "'":
            quote = "'"
    return f"{quote}{value}{quote}"
