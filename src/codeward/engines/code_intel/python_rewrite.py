"""New text for a Python file: skeletons, removals, insertions at anchors, region markers.

Every function here takes a parsed :class:`~codeward.engines.code_intel.python_symbols.PythonModule` and
returns the new text (or a :class:`Result` explaining why not); none of them touches disk or
checks the result's syntax — the tools re-parse every result before writing it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import StrEnum

from codeward.engines.code_intel.python_symbols import (
    FUNCTION_NODES,
    PythonModule,
    SourceText,
    Symbol,
    SymbolKind,
    definition_start,
    docstring_node,
    header_span,
    leading_whitespace,
    logical_line_rows,
    lookup,
)
from codeward.kernel.result import ErrorKind, Result

REGION_START = "#region: "
REGION_END = "#endregion: "


class AnchorType(StrEnum):
    """Where py_add_def / py_move_def put a definition (see docs/python-tools.md)."""

    START = "start"
    """Start of the file (after the module docstring and leading imports), or of a class body
    (after its docstring) when anchor_symbol names a class."""
    END = "end"
    """End of the file, or of a class body when anchor_symbol names a class."""
    BEFORE = "before"
    """Just before anchor_symbol (above its decorators and the comments attached to it)."""
    AFTER = "after"
    """Just after anchor_symbol (after its last line)."""


@dataclass(frozen=True, slots=True)
class InsertionPoint:
    line: int
    """Insert before this 1-based line (one past the last line appends)."""
    indent: str
    container: str
    """Qualified name of the class whose body receives the code ("" for the module)."""


# -- skeleton -------------------------------------------------------------------------------


def skeleton(module: PythonModule) -> str:
    """The file with every function body replaced by ``...`` (docstrings, headers, comments kept)."""
    source = module.source
    edits: list[tuple[int, int, str]] = []
    for symbol in module.definitions:
        node = symbol.node
        if symbol.in_function or not isinstance(node, FUNCTION_NODES):
            continue
        doc = docstring_node(node)
        if doc is not None and len(node.body) == 1:
            continue
        _, colon_end = header_span(module, node)
        colon_line = source.text.count("\n", 0, colon_end) + 1
        cut_end = _line_content_end(source, symbol.end_line)
        body = node.body[0]
        if body.lineno == colon_line:
            edits.append((colon_end, cut_end, " ..."))
            continue
        indent = source.indentation(body.lineno)
        keep_through = doc.end_lineno if doc is not None and doc.end_lineno else colon_line
        edits.append((_line_content_end(source, keep_through), cut_end, f"\n{indent}..."))
    text = source.text
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _line_content_end(source: SourceText, number: int) -> int:
    """Offset of the end of line ``number`` without its newline."""
    line = source.line(number)
    return source.line_offset(number) + len(line.rstrip("\r\n"))


# -- statement regions ----------------------------------------------------------------------


def statement_region(module: PythonModule, stmt: ast.stmt) -> tuple[int, int, bool]:
    """Offsets of a simple statement: whole lines when it is alone on them, else its exact span.

    The third value says which: ``True`` for whole lines (trailing comment included).
    """
    source = module.source
    start = source.offset(stmt.lineno, stmt.col_offset)
    end_line = stmt.end_lineno or stmt.lineno
    end = source.offset(end_line, stmt.end_col_offset or 0)
    before = source.text[source.line_offset(stmt.lineno) : start]
    after = source.text[end : _line_content_end(source, end_line)]
    if not before.strip() and (not after.strip() or after.strip().startswith("#")):
        return source.line_offset(stmt.lineno), source.line_offset(end_line + 1), True
    return start, end, False


# -- removal --------------------------------------------------------------------------------


def removal_lines(module: PythonModule, symbol: Symbol) -> tuple[int, int]:
    """Lines (inclusive) to cut for a definition, with the blank lines that separated it.

    A definition followed by a sibling takes its trailing blank lines with it; the last one
    in its block takes the blank lines before it, so the spacing around stays as it was.
    """
    source = module.source
    first, last = symbol.start_line, symbol.end_line
    total = len(source.lines)
    indent = len(source.indentation(first))
    after = last
    while after < total and not source.line(after + 1).strip():
        after += 1
    before = first
    while before > 1 and not source.line(before - 1).strip():
        before -= 1
    sibling_follows = after < total and len(leading_whitespace(source.line(after + 1))) >= indent
    if sibling_follows:
        return (first, after) if before < first or first == 1 or _opens_block(source, first - 1, indent) \
            else (first, last)
    return before, last


def _opens_block(source: SourceText, number: int, indent: int) -> bool:
    return len(source.indentation(number)) < indent


def cut_lines(source: SourceText, first: int, last: int) -> str:
    return source.text[: source.line_offset(first)] + source.text[source.line_offset(last + 1) :]


# -- insertion ------------------------------------------------------------------------------


def insertion_point(
    module: PythonModule, anchor: AnchorType, anchor_symbol: str, display: str
) -> Result[InsertionPoint | None]:
    """Resolve an anchor to a line and indentation, or explain why it cannot be used."""
    source = module.source
    if anchor in (AnchorType.BEFORE, AnchorType.AFTER):
        if not anchor_symbol:
            return Result.fail(ErrorKind.INVALID_INPUT, f"anchor_type {anchor.value!r} needs an anchor_symbol",
                               "Name the definition or variable to insert next to in anchor_symbol.")
        found = lookup(module, anchor_symbol, display, definitions=True, variables=True)
        if not found.ok:
            return found.cast(None)
        if anchor is AnchorType.BEFORE:
            target = found.data[0]
            line = attached_comment_start(source, target.start_line)
        else:
            target = found.data[-1]
            line = target.end_line + 1
        return Result.success(InsertionPoint(line, source.indentation(target.start_line), target.parent))
    if not anchor_symbol:
        return Result.success(InsertionPoint(_module_start(module) if anchor is AnchorType.START
                                             else len(source.lines) + 1, "", ""))
    found = lookup(module, anchor_symbol, display, definitions=True)
    if not found.ok:
        return found.cast(None)
    classes = [s for s in found.data if s.kind is SymbolKind.CLASS]
    if not classes:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"{anchor_symbol!r} is a {found.data[0].kind.value}; anchor_type {anchor.value!r} "
                           "takes a class (to insert into its body) or no anchor_symbol (the file)",
                           "Use anchor_type 'before' or 'after' to insert next to a function.")
    if len(classes) > 1:
        lines = ", ".join(str(c.start_line) for c in classes)
        return Result.fail(ErrorKind.CONFLICT, f"class {anchor_symbol!r} is defined {len(classes)} times in "
                           f"{display} (lines {lines})", "Anchor on a unique class, or edit one with set_file_slice.")
    target = classes[0]
    node = target.node
    assert isinstance(node, ast.ClassDef)
    _, colon_end = header_span(module, node)
    colon_line = source.text.count("\n", 0, colon_end) + 1
    if node.body[0].lineno == colon_line:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"class {anchor_symbol!r} has its body on the header line ({display}:{colon_line})",
                           "Rewrite the class over several lines with py_update_definition first.")
    indent = source.indentation(node.body[0].lineno)
    if anchor is AnchorType.END:
        return Result.success(InsertionPoint(target.end_line + 1, indent, target.qualname))
    doc = docstring_node(node)
    line = (doc.end_lineno or doc.lineno) + 1 if doc is not None else colon_line + 1
    return Result.success(InsertionPoint(line, indent, target.qualname))


def _module_start(module: PythonModule) -> int:
    """Line after the module docstring and the imports at the top (or before the first statement)."""
    body = module.tree.body
    last = 0
    for index, stmt in enumerate(body):
        is_doc = index == 0 and docstring_node(module.tree) is not None
        if is_doc or isinstance(stmt, ast.Import | ast.ImportFrom):
            last = stmt.end_lineno or stmt.lineno
            continue
        break
    if last:
        return last + 1
    if not body:
        return len(module.source.lines) + 1
    return attached_comment_start(module.source, definition_start(body[0]), keep_header=True)


def attached_comment_start(source: SourceText, line: int, *, keep_header: bool = False) -> int:
    """The first line of the comment block directly above ``line`` (no blank line between, same indentation)."""
    indent = source.indentation(line)
    start = line
    while start > 1:
        above = source.line(start - 1)
        if not above.strip().startswith("#") or source.indentation(start - 1) != indent:
            break
        if keep_header and (above.startswith("#!") or "coding" in above):
            break
        start -= 1
    return start


def insert_block(source: SourceText, point: InsertionPoint, block: str, separation: int) -> str:
    """Insert an already indented ``block`` at ``point`` with ``separation`` blank lines around it.

    Blank lines already there count toward the separation; none are added next to the
    container's header, at the start or end of the file, or before the container's end.
    """
    lines = source.lines
    index = point.line - 1
    blank_before = 0
    while index - blank_before - 1 >= 0 and not lines[index - blank_before - 1].strip():
        blank_before += 1
    blank_after = 0
    while index + blank_after < len(lines) and not lines[index + blank_after].strip():
        blank_after += 1
    previous = index - blank_before - 1
    following = index + blank_after
    width = len(point.indent)
    need_before = 0
    if previous >= 0 and len(leading_whitespace(lines[previous])) >= width:
        need_before = max(0, separation - blank_before)
    need_after = 0
    if following < len(lines) and len(leading_whitespace(lines[following])) >= width:
        need_after = max(0, separation - blank_after)
    offset = source.line_offset(point.line)
    prefix = source.text[:offset]
    lead = "\n" if prefix and not prefix.endswith("\n") else ""
    insertion = lead + "\n" * need_before + block + "\n" * need_after
    return prefix + insertion + source.text[offset:]


def separation_for(point: InsertionPoint, block: str) -> int:
    """PEP 8 spacing: two blank lines around top-level defs and classes, one elsewhere."""
    code = [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]
    is_def = bool(code) and code[0].startswith(("def ", "async ", "class ", "@"))
    return 2 if point.indent == "" and is_def else 1


# -- regions --------------------------------------------------------------------------------


def region_wrap(module: PythonModule, start: int, end: int, region_name: str) -> Result[str]:
    """Text with ``#region: name`` before line ``start`` and ``#endregion: name`` after ``end``."""
    source = module.source
    total = len(source.lines)
    if not 1 <= start <= end <= total:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"lines {start}-{end} are not a range inside the file, which has {total} lines",
                           f"Give 1 <= start_line <= end_line <= {total}.", data="")
    rows = logical_line_rows(source.text)
    if rows is None:
        return Result.fail(ErrorKind.INVALID_INPUT, "the file cannot be tokenized",
                           "Fix its syntax first (py_check_syntax).", data="")
    starts, ends = rows
    if start not in starts:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"line {start} is in the middle of a statement or string, not where one begins",
                           "Start the region on the first line of a statement (or on a comment/blank line).",
                           data="")
    if end not in ends:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"line {end} is in the middle of a statement or string, not where one ends",
                           "End the region on the last line of a statement (or on a comment/blank line).",
                           data="")
    split = _splits_decorators(module, start, end)
    if split:
        return Result.fail(ErrorKind.INVALID_INPUT, split,
                           "Keep a definition's decorators and its def/class on the same side of the markers.",
                           data="")
    code_rows = [r for r in range(start, end + 1) if r in starts and not _is_comment_or_blank(source.line(r))]
    anchor_row = code_rows[0] if code_rows else start
    indent = source.indentation(anchor_row)
    for row in code_rows:
        if len(source.indentation(row)) < len(indent):
            return Result.fail(ErrorKind.INVALID_INPUT,
                               f"line {row} is less indented than line {anchor_row}: the range leaves the block "
                               "it starts in", "Choose lines that sit inside one block.", data="")
    following = next((r for r in range(end + 1, total + 1)
                      if r in starts and not _is_comment_or_blank(source.line(r))), None)
    if following is not None and code_rows and len(source.indentation(following)) > len(indent):
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"the range ends inside a block that continues on line {following}",
                           f"Extend end_line to the end of that block (at least line {following}'s block).",
                           data="")
    text = source.text
    open_at = source.line_offset(start)
    close_at = source.line_offset(end + 1)
    closing_prefix = "" if text[:close_at].endswith("\n") else "\n"
    return Result.success(
        text[:open_at] + f"{indent}{REGION_START}{region_name}\n" + text[open_at:close_at]
        + f"{closing_prefix}{indent}{REGION_END}{region_name}\n" + text[close_at:]
    )


def _splits_decorators(module: PythonModule, start: int, end: int) -> str:
    """Why the range separates decorators from their definition ("" when it does not)."""
    for symbol in module.definitions:
        header = symbol.node.lineno
        if symbol.start_line < start <= header:
            return f"line {start} is inside the decorators of {symbol.qualname} (lines {symbol.start_line}-{header})"
        if symbol.start_line <= end < header:
            return f"line {end} is a decorator of {symbol.qualname}, whose def is on line {header}"
    return ""


def _is_comment_or_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")
