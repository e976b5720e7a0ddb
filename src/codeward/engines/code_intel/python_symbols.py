"""Python symbols at exact source positions: find, read and splice definitions with stdlib ``ast``.

A :class:`PythonModule` is one parse of a file's text. It lists every definition (classes,
functions, methods, nested ones) with its qualified name (``Outer.Inner.method``) and its
line range *including decorators*, plus the variables declared at module or class level.
Definitions inside ``if``/``try``/``with`` blocks belong to the enclosing scope, so
version-dependent alternatives and ``@overload`` stubs show up as several occurrences of
one name; callers pick one with a 1-based ``occurrence`` or get them all.

Everything here is pure text-and-tree work (no I/O, no module state); the tools in
:mod:`codeward.tools.python_ast` add the Workspace, the files and the messages.
"""

from __future__ import annotations

import ast
import difflib
import io
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from codeward.engines.code_intel.content_cache import ContentCache
from codeward.engines.code_intel.definition_swap import Defined
from codeward.kernel.python_parse import compile_tree, parse_python
from codeward.kernel.result import ErrorKind, Result

DEFINITION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
DefinitionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
PARSE_CACHE_SIZE = 64
SUGGESTIONS = 5


class SymbolKind(StrEnum):
    CLASS = "class"
    FUNCTION = "function"
    ASYNC_FUNCTION = "async function"
    METHOD = "method"
    ASYNC_METHOD = "async method"
    VARIABLE = "variable"

    @property
    def is_definition(self) -> bool:
        return self is not SymbolKind.VARIABLE


@dataclass(frozen=True, slots=True)
class Symbol:
    """One definition or declaration: what it is, where it is, and the node behind it."""

    qualname: str
    kind: SymbolKind
    node: ast.stmt
    start_line: int
    """First line, decorators included (1-based)."""
    end_line: int
    parent: str
    """Qualified name of the enclosing class or function ("" at module level)."""
    depth: int
    in_function: bool
    """Defined inside a function body (a local), not part of the module's public shape."""

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]

    @property
    def decorators(self) -> list[ast.expr]:
        return list(getattr(self.node, "decorator_list", []))


@dataclass(frozen=True)
class SourceText:
    """Text split exactly where Python splits lines (``\\n``; not form feeds), with offsets."""

    text: str
    lines: tuple[str, ...]
    starts: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> SourceText:
        lines = tuple(split_lines(text))
        starts: list[int] = []
        offset = 0
        for line in lines:
            starts.append(offset)
            offset += len(line)
        return cls(text, lines, tuple(starts))

    def line(self, number: int) -> str:
        """Line ``number`` (1-based) with its newline; "" past the end."""
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else ""

    def line_offset(self, number: int) -> int:
        """Character offset where line ``number`` starts (``len(text)`` past the last line)."""
        return self.starts[number - 1] if 1 <= number <= len(self.lines) else len(self.text)

    def char_col(self, number: int, byte_col: int) -> int:
        """Convert an ``ast`` column (UTF-8 bytes) to a character column on line ``number``."""
        line = self.line(number)
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "ignore"))

    def offset(self, number: int, byte_col: int) -> int:
        return self.line_offset(number) + self.char_col(number, byte_col)

    def span_lines(self, start: int, end: int) -> str:
        """Lines ``start``..``end`` (inclusive, 1-based) as one string."""
        return "".join(self.lines[start - 1 : end])

    def indentation(self, number: int) -> str:
        line = self.line(number)
        return line[: len(line) - len(line.lstrip(" \t\f"))]


@dataclass(frozen=True)
class PythonModule:
    """A parsed file: its text, tree, definitions and declarations, in source order."""

    source: SourceText
    tree: ast.Module
    definitions: tuple[Symbol, ...]
    variables: tuple[Symbol, ...]

    @cached_property
    def compiles(self) -> bool:
        """Whether the file also passes ``compile`` (symbol-table checks such as a stray ``return``)."""
        try:
            compile_tree(self.tree, "<codeward>")
        except (SyntaxError, ValueError, RecursionError):
            return False
        return True

    @property
    def text(self) -> str:
        return self.source.text

    def symbols(self) -> Iterator[Symbol]:
        yield from self.definitions
        yield from self.variables

    def find(self, qualname: str, *, definitions: bool = True, variables: bool = False) -> list[Symbol]:
        pools = ([*self.definitions] if definitions else []) + ([*self.variables] if variables else [])
        found = [s for s in pools if s.qualname == qualname]
        return sorted(found, key=lambda s: (s.start_line, s.node.col_offset))

    def members(self, container: str) -> list[Symbol]:
        """Definitions directly inside ``container`` ("" for module level)."""
        return [s for s in self.definitions if s.parent == container]


# -- parsing ------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept, split only on ``\\n`` as Python's tokenizer does."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def parse_module(text: str) -> PythonModule:
    """Parse ``text``; raises ``SyntaxError`` (also for NUL bytes and undecodable text)."""
    if "\r" in text.replace("\r\n", ""):
        raise SyntaxError("the file uses bare CR (old Mac) line endings, which these tools cannot edit safely",
                          ("<unknown>", 1, 1, ""))
    try:
        tree = parse_python(text)
    except (ValueError, UnicodeEncodeError) as exc:
        raise SyntaxError(f"the text cannot be parsed as Python: {exc}", ("<unknown>", 1, 1, "")) from exc
    except (RecursionError, MemoryError) as exc:
        raise SyntaxError("the code is nested too deeply for the parser", ("<unknown>", 1, 1, "")) from exc
    source = SourceText.of(text)
    definitions: list[Symbol] = []
    variables: list[Symbol] = []
    _collect(source, tree.body, "", 0, False, False, definitions, variables)
    definitions.sort(key=lambda s: (s.start_line, s.node.col_offset))
    variables.sort(key=lambda s: (s.start_line, s.node.col_offset))
    return PythonModule(source, tree, tuple(definitions), tuple(variables))


def definition_start(node: ast.stmt) -> int:
    """First line of a definition, its decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _kind(node: DefinitionNode, parent_is_class: bool) -> SymbolKind:
    if isinstance(node, ast.ClassDef):
        return SymbolKind.CLASS
    if isinstance(node, ast.AsyncFunctionDef):
        return SymbolKind.ASYNC_METHOD if parent_is_class else SymbolKind.ASYNC_FUNCTION
    return SymbolKind.METHOD if parent_is_class else SymbolKind.FUNCTION


def definition_end(source: SourceText, node: DefinitionNode) -> int:
    """Last line of a definition: its last statement, plus comment lines after it that are
    indented at least as deep as its body (as ``inspect.getsource`` counts them)."""
    end = node.end_lineno or node.lineno
    body = node.body[0]
    if source.line(body.lineno)[: source.char_col(body.lineno, body.col_offset)].strip():
        return end  # the body sits on the header line: no indented block to extend
    depth = len(source.indentation(body.lineno))
    row = end + 1
    while row <= len(source.lines):
        stripped = source.line(row).strip()
        if stripped.startswith("#"):
            if len(source.indentation(row)) >= depth:
                end = row
        elif stripped:
            break
        row += 1
    return end


def _collect(
    source: SourceText,
    body: Sequence[ast.stmt],
    scope: str,
    depth: int,
    scope_is_class: bool,
    in_function: bool,
    definitions: list[Symbol],
    variables: list[Symbol],
) -> None:
    for stmt in body:
        if isinstance(stmt, DEFINITION_NODES):
            qualname = f"{scope}.{stmt.name}" if scope else stmt.name
            kind = _kind(stmt, scope_is_class)
            end = definition_end(source, stmt)
            definitions.append(Symbol(qualname, kind, stmt, definition_start(stmt), end, scope, depth, in_function))
            _collect(source, stmt.body, qualname, depth + 1, isinstance(stmt, ast.ClassDef),
                     in_function or isinstance(stmt, FUNCTION_NODES), definitions, variables)
            continue
        if not in_function:
            for target in declared_names(stmt):
                qualname = f"{scope}.{target}" if scope else target
                end = stmt.end_lineno or stmt.lineno
                variables.append(Symbol(qualname, SymbolKind.VARIABLE, stmt, stmt.lineno, end, scope, depth, False))
        for block in nested_blocks(stmt):
            _collect(source, block, scope, depth, scope_is_class, in_function, definitions, variables)


def nested_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists inside a compound statement that is not a def (if, try, with, for…)."""
    if isinstance(stmt, DEFINITION_NODES):
        return
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body


def declared_names(stmt: ast.stmt) -> list[str]:
    """Names a statement declares as a variable: ``x = …``, ``a, b = …``, ``x: T``, ``type X = …``."""
    if isinstance(stmt, ast.Assign):
        return [name for target in stmt.targets for name in _target_names(target)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    type_alias = getattr(ast, "TypeAlias", None)
    if type_alias is not None and isinstance(stmt, type_alias):
        name = getattr(stmt, "name", None)
        return [name.id] if isinstance(name, ast.Name) else []
    return []


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _target_names(element)]
    return []


class ParseCache:
    """Parsed modules keyed by a hash of their text, so repeated questions about a file are cheap
    (a :class:`~codeward.engines.code_intel.content_cache.ContentCache`; a file that does not parse raises again)."""

    def __init__(self, size: int = PARSE_CACHE_SIZE) -> None:
        self._cache: ContentCache[PythonModule] = ContentCache(size, errors=(SyntaxError,))

    def parse(self, text: str) -> PythonModule:
        return self._cache.get("python", text, parse_module)


# -- syntax errors --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    line: int
    column: int
    message: str
    source_line: str

    def render(self, display: str) -> str:
        where = f"{display}, line {self.line}, column {self.column}: {self.message}"
        if not self.source_line.strip():
            return where
        shown = self.source_line.rstrip("\r\n").expandtabs(4)
        gutter = f"    {self.line} | "
        caret = " " * (len(gutter) - 2) + "| " + " " * max(self.column - 1, 0) + "^"
        return f"{where}\n{gutter}{shown}\n{caret}"


def syntax_problem(exc: SyntaxError, text: str) -> SyntaxProblem:
    """Where a ``SyntaxError`` is, with the offending line taken from ``text`` itself."""
    line = exc.lineno or 1
    column = exc.offset or 1
    lines = split_lines(text)
    source_line = lines[line - 1] if 1 <= line <= len(lines) else (exc.text or "")
    return SyntaxProblem(line, column, exc.msg or str(exc), source_line)


def check_edit(new_text: str, original: PythonModule | None) -> SyntaxProblem | None:
    """The problem ``new_text`` has, or ``None``; compile checks apply when the original passed them."""
    try:
        tree = parse_python(new_text)
    except SyntaxError as exc:
        return syntax_problem(exc, new_text)
    except (ValueError, UnicodeEncodeError, RecursionError, MemoryError) as exc:
        return SyntaxProblem(1, 1, f"the text cannot be parsed as Python: {exc}", "")
    if original is None or original.compiles:
        try:
            compile_tree(tree, "<codeward>")
        except SyntaxError as exc:
            return syntax_problem(exc, new_text)
        except (ValueError, RecursionError) as exc:
            return SyntaxProblem(1, 1, str(exc), "")
    return None


# -- finding symbols ------------------------------------------------------------------------


def valid_name(name: str) -> bool:
    return bool(name) and all(part.isidentifier() for part in name.split("."))


def name_problem(name: str) -> Result[list[Symbol]] | None:
    """An INVALID_INPUT result when ``name`` is not a dotted Python name."""
    if valid_name(name):
        return None
    hint = "Give the definition's name as written; a method is its class, a dot, its name (dots, not '::' or '/')."
    if "::" in name:
        hint = f"Python names use dots: {name.replace('::', '.')!r}."
    elif "(" in name:
        hint = f"Give the bare name without parentheses or arguments: {name.split('(')[0].strip()!r}."
    return Result.fail(ErrorKind.INVALID_INPUT, f"{name!r} is not a Python name", hint, data=[])


def suggest(module: PythonModule, name: str, *, definitions: bool = True, variables: bool = False) -> str:
    """A hint listing the closest names (last-component matches first), as the tools report it."""
    pool = [s for s in module.symbols() if (s.kind.is_definition and definitions) or
            (not s.kind.is_definition and variables)]
    names = list(dict.fromkeys(s.qualname for s in pool))
    last = name.rpartition(".")[2]
    same_tail = [n for n in names if n.rpartition(".")[2] == last and n != name]
    close = difflib.get_close_matches(name, names, n=SUGGESTIONS, cutoff=0.6)
    close_tail = difflib.get_close_matches(last, [n.rpartition(".")[2] for n in names], n=SUGGESTIONS, cutoff=0.7)
    by_tail = [n for n in names if n.rpartition(".")[2] in close_tail]
    picks = list(dict.fromkeys([*same_tail, *close, *by_tail]))[:SUGGESTIONS]
    if picks:
        return (f"Closest names: {', '.join(picks)}. A method is named by its class, a dot and its name; "
                "py_get_code_outline lists all.")
    if not names:
        return "The file defines no such symbols at all; check the path."
    return "List the names with py_get_code_outline (a method is named by its class, a dot and its name)."


def lookup(
    module: PythonModule,
    name: str,
    display: str,
    *,
    occurrence: int | None = None,
    definitions: bool = True,
    variables: bool = False,
) -> Result[list[Symbol]]:
    """Every symbol named ``name`` (or just the ``occurrence``-th), or a NOT_FOUND with suggestions."""
    problem = name_problem(name)
    if problem:
        return problem
    found = module.find(name, definitions=definitions, variables=variables)
    if not found:
        what = "definition" if definitions and not variables else "variable declaration" if variables and \
            not definitions else "symbol"
        other = module.find(name, definitions=not definitions, variables=not variables)
        if other:
            kind = other[0].kind.value
            tool = "py_get_definition" if other[0].kind.is_definition else "py_get_var_declaration"
            return Result.fail(ErrorKind.NOT_FOUND, f"{name!r} in {display} is a {kind}, not a {what}",
                               f"Use {tool} for it.", data=[])
        return Result.fail(ErrorKind.NOT_FOUND, f"no {what} named {name!r} in {display}",
                           suggest(module, name, definitions=definitions, variables=variables), data=[])
    if occurrence is None:
        return Result.success(found)
    if not 1 <= occurrence <= len(found):
        lines = ", ".join(str(s.start_line) for s in found)
        count = "once" if len(found) == 1 else f"{len(found)} times"
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"occurrence {occurrence} is out of range: {name!r} is defined {count} in {display} "
                           f"(line{'s' if len(found) > 1 else ''} {lines})",
                           f"Pass occurrence between 1 and {len(found)}, or omit it.", data=[])
    return Result.success([found[occurrence - 1]])


def lookup_one(
    module: PythonModule,
    name: str,
    display: str,
    *,
    occurrence: int | None = None,
    definitions: bool = True,
    variables: bool = False,
) -> Result[Symbol | None]:
    """Exactly one symbol for a write; several without ``occurrence`` is a CONFLICT listing them."""
    found = lookup(module, name, display, occurrence=occurrence, definitions=definitions, variables=variables)
    if not found.ok:
        return found.cast(None)
    if len(found.data) > 1:
        places = "; ".join(f"{i}: lines {s.start_line}-{s.end_line}" for i, s in enumerate(found.data, 1))
        return Result.fail(ErrorKind.CONFLICT, f"{name!r} is defined {len(found.data)} times in {display} ({places})",
                           "Pass occurrence=N (1-based, in file order) to choose one.")
    return Result.success(found.data[0])


# -- positions inside a definition ----------------------------------------------------------


def header_span(module: PythonModule, node: DefinitionNode) -> tuple[int, int]:
    """Character offsets of a def/class header: from ``def``/``async``/``class`` through its colon."""
    source = module.source
    start = source.offset(node.lineno, node.col_offset)
    body = node.body[0]
    stop = source.offset(body.lineno, body.col_offset)
    region = source.text[start:stop]
    colon = _last_top_level_colon(region)
    if colon is None:  # pragma: no cover - tokenize failed on a header that ast accepted
        colon = region.rfind(":")
    return start, start + colon + 1


def _last_top_level_colon(region: str) -> int | None:
    """Index in ``region`` of the last ``:`` outside brackets, strings and comments."""
    starts = [0]
    for line in split_lines(region):
        starts.append(starts[-1] + len(line))
    depth = 0
    found: int | None = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(region).readline):
            if tok.type != tokenize.OP:
                continue
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
            elif tok.string == ":" and depth == 0:
                found = starts[tok.start[0] - 1] + tok.start[1]
    except (tokenize.TokenError, SyntaxError):
        return found
    return found


def signature_text(module: PythonModule, symbol: Symbol) -> str:
    """``def name(args) -> ret:`` / ``class Name(bases):`` as written, continuation lines dedented."""
    node = symbol.node
    assert isinstance(node, DEFINITION_NODES)
    start, end = header_span(module, node)
    indent = module.source.indentation(node.lineno)
    return reindent(indent + module.text[start:end], "").rstrip("\n")


def docstring_node(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if not body:
        return None
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def string_rows(text: str) -> frozenset[int]:
    """1-based rows that start inside a multi-line string (their text must never be re-indented)."""
    rows: set[int] = set()
    fstring_starts: list[int] = []
    fstring_start = getattr(tokenize, "FSTRING_START", -1)
    fstring_end = getattr(tokenize, "FSTRING_END", -1)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == fstring_start:
                fstring_starts.append(tok.start[0])
            elif tok.type == fstring_end and fstring_starts:
                rows.update(range(fstring_starts.pop() + 1, tok.end[0] + 1))
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return frozenset(rows)


def logical_line_rows(text: str) -> tuple[frozenset[int], frozenset[int]] | None:
    """Rows where a statement may start and rows where one ends (``None`` when tokenizing fails).

    Blank and comment-only rows count as both: a comment can go before or after them.
    """
    starts: set[int] = set()
    ends: set[int] = set()
    expect_start = True
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if tok.type == tokenize.NL and expect_start:
                starts.add(tok.start[0])
                ends.add(tok.start[0])
                continue
            if tok.type == tokenize.COMMENT and expect_start:
                continue
            if expect_start:
                starts.add(tok.start[0])
                expect_start = False
            if tok.type == tokenize.NEWLINE:
                ends.add(tok.start[0])
                expect_start = True
    except (tokenize.TokenError, SyntaxError):
        return None
    return frozenset(starts), frozenset(ends)


# -- re-indenting new code ------------------------------------------------------------------


def leading_whitespace(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]


def normalize_block(content: str) -> str:
    """``content`` with ``\\n`` newlines, no leading/trailing blank lines, one final newline."""
    lines = content.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def reindent(content: str, indent: str) -> str:
    """Shift a block so its first line starts at ``indent``, keeping relative indentation.

    Lines inside multi-line strings keep their bytes (the string's value must not change),
    except docstrings, which move with the code as every formatter does (``inspect.cleandoc``
    gives the same text). Lines less indented than the first (a comment at column 0, a
    docstring line after a backslash) cannot be shifted consistently and keep their bytes.
    """
    block = normalize_block(content)
    if not block:
        return ""
    lines = block.split("\n")[:-1]
    base = leading_whitespace(lines[0])
    if base == indent:
        return block
    protected = string_rows(block) - docstring_rows(block, base)
    out: list[str] = []
    for row, line in enumerate(lines, 1):
        if row in protected:
            out.append(line)
        elif not line.strip():
            out.append("")
        elif line.startswith(base):
            out.append(indent + line[len(base):])
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def docstring_rows(block: str, base: str) -> frozenset[int]:
    """1-based rows continuing a docstring in ``block`` (whose first line is indented by ``base``)."""
    wrapped, shift = (f"if True:\n{block}", 1) if base else (block, 0)
    try:
        tree = parse_python(wrapped)
    except (SyntaxError, ValueError):
        return frozenset()
    rows: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = docstring_node(node)
            if doc is not None and doc.end_lineno and doc.end_lineno > doc.lineno:
                rows.update(range(doc.lineno + 1 - shift, doc.end_lineno + 1 - shift))
    return frozenset(rows)


def rename_definition(block: str, new_name: str) -> str:
    """``block`` (one def/class at column 0, decorators allowed) with the defined name replaced."""
    node = first_definition(block)
    if node is None or node.name == new_name:
        return block
    source = SourceText.of(block)
    keyword_at = source.char_col(node.lineno, node.col_offset)
    name_at = source.line(node.lineno).index(node.name, keyword_at)
    offset = source.line_offset(node.lineno) + name_at
    return block[:offset] + new_name + block[offset + len(node.name):]


def first_definition(block: str) -> DefinitionNode | None:
    """The first def/class of a block at column 0 (``None`` when there is none or it does not parse)."""
    try:
        tree = parse_python(block)
    except (SyntaxError, ValueError):
        return None
    return next((n for n in tree.body if isinstance(n, DEFINITION_NODES)), None)


def top_level_definitions(tree: ast.Module) -> list[Defined]:
    """What a piece of code defines at its top level: functions, classes and assigned variables."""
    found: list[Defined] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            found.append(Defined(stmt.name, "class"))
        elif isinstance(stmt, FUNCTION_NODES):
            found.append(Defined(stmt.name, "function"))
        else:
            found.extend(Defined(name, "variable") for name in declared_names(stmt))
    return found


def all_arguments(args: ast.arguments) -> list[ast.arg]:
    """Every parameter of a function or lambda: positional-only, ordinary, keyword-only, ``*``, ``**``."""
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found.extend(a for a in (args.vararg, args.kwarg) if a is not None)
    return found


def loaded_names(node: ast.AST) -> set[str]:
    """Names a piece of code reads (for "does the destination import what this needs")."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def module_level_names(module: PythonModule) -> set[str]:
    """Names bound at module level: imports, defs, classes and assignments (any block depth)."""
    names: set[str] = set()
    stack: list[ast.stmt] = list(module.tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(stmt, DEFINITION_NODES):
            names.add(stmt.name)
            continue
        names.update(declared_names(stmt))
        for block in nested_blocks(stmt):
            stack.extend(block)
    return names
