"""What the code tools do with a parsed file: find a symbol by name, show an outline or a
skeleton, cut out a definition or signature, and replace a definition safely.

Names: a qualified name uses the language's separator (``ns::Foo::bar``, ``pkg.Cls.m``,
``Foo#bar``), but any of ``::``, ``.``, ``#``, ``\\`` and ``:`` is accepted, template or
generic arguments are ignored (``Foo<T>::bar`` is ``Foo::bar``), and a suffix is enough
(``bar`` finds ``ns::Foo::bar``). ``name@LINE`` picks one of several same-named symbols
(overloads) by a line inside it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from codeward.engines.code_intel.definition_swap import mismatch
from codeward.engines.code_intel.fragment_check import FragmentVerdict, check_fragment, defined_names
from codeward.engines.code_intel.outline_model import ParsedSource, Symbol, encode_source, parse_prepared, parse_source
from codeward.engines.code_intel.symbol_names import NameQuery, normal_part, parse_name
from codeward.engines.code_intel.treesitter import SyntaxProblem, syntax_problems
from codeward.kernel.result import ErrorKind, Result

MAX_SUGGESTIONS = 8
C_FAMILY = frozenset({"c", "cpp"})


def candidates(symbols: tuple[Symbol, ...], query: NameQuery) -> list[Symbol]:
    """Symbols the query names, best first: exact qualified match, definitions, then types before impls."""
    size = len(query.parts)
    found = [s for s in symbols if size and s.lookup[-size:] == query.parts]
    if query.impl:
        found = [s for s in found if s.kind == "impl" and (
            not query.trait or normal_part(s.detail.removeprefix("impl ").split(" for ")[0]) == query.trait)]
        inherent = [s for s in found if " for " not in s.detail]
        if not query.trait and inherent:
            found = inherent
    if query.line is not None:
        line = query.line
        found = [s for s in found if s.start_line <= line <= s.end_line]
        found.sort(key=lambda s: s.end_line - s.start_line)  # the innermost first
    return sorted(found, key=lambda s: _rank(s, size))


def _rank(symbol: Symbol, size: int) -> tuple[bool, bool, bool]:
    return (len(symbol.parts) != size, not symbol.definition, symbol.kind == "impl")


def find_symbol(parsed: ParsedSource, name: str, display: str, *, unique: bool) -> Result[Symbol | None]:
    """The symbol ``name`` refers to. With ``unique``, equally good matches are a CONFLICT."""
    query = parse_name(name)
    if not query.parts:
        return Result.fail(ErrorKind.INVALID_INPUT, f"name {name!r} is empty",
                           "Give the definition's name; qualify a member by its class with '::' or '.'.")
    found = candidates(parsed.symbols, query)
    if not found:
        return Result.fail(ErrorKind.NOT_FOUND, f"no definition named {name!r} in {display}",
                           closest_names_hint(parsed.symbols, query))
    best = found[0]
    rivals = [s for s in found[1:] if _rank(s, len(query.parts)) == _rank(best, len(query.parts))
              and query.line is None]
    if rivals and unique:
        listing = ", ".join(f"{s.qualified} (lines {s.start_line}-{s.end_line})" for s in [best, *rivals][:10])
        return Result.fail(ErrorKind.CONFLICT,
                           f"{name!r} matches {len(rivals) + 1} definitions in {display}: {listing}",
                           f"Name one by a line inside it, e.g. '{best.qualified}@{best.start_line}', "
                           "or use a more qualified name.")
    notes = []
    if rivals:
        lines = ", ".join(str(s.start_line) for s in rivals[:10])
        notes.append(f"[{len(rivals)} more definitions match {name!r} (lines {lines}); "
                     f"add @LINE to pick one, e.g. {best.qualified}@{rivals[0].start_line}]")
    return Result.success(best, *notes)


def closest_names_hint(symbols: tuple[Symbol, ...], query: NameQuery) -> str:
    if not symbols:
        return "The file defines no symbols this tool recognises; check the path or read the file."
    wanted = "::".join(query.parts)
    names = {"::".join(s.lookup): s.qualified for s in symbols}
    names.update({normal_part(s.name): s.qualified for s in symbols})
    close = difflib.get_close_matches(wanted, list(names), n=MAX_SUGGESTIONS, cutoff=0.5)
    if not close and query.parts:
        close = difflib.get_close_matches(query.parts[-1], list(names), n=MAX_SUGGESTIONS, cutoff=0.5)
    shown = list(dict.fromkeys(names[c] for c in close))
    if shown:
        return f"Closest names: {', '.join(shown)}."
    defined = list(dict.fromkeys(s.qualified for s in symbols))
    more = f" (and {len(defined) - 20} more; see the outline)" if len(defined) > 20 else ""
    return f"Names defined here: {', '.join(defined[:20])}{more}."


# -- reading ------------------------------------------------------------------------------


def definition_span(parsed: ParsedSource, symbol: Symbol) -> tuple[int, int]:
    """Byte span of a definition, widened to the line start when only indentation precedes it."""
    start = symbol.start_byte
    line_start = parsed.data.rfind(b"\n", 0, start) + 1
    if parsed.data[line_start:start].strip(b" \t") == b"":
        start = line_start
    return start, symbol.end_byte


def definition_text(parsed: ParsedSource, symbol: Symbol) -> str:
    start, end = definition_span(parsed, symbol)
    return parsed.text_of(start, end)


def signature_text(parsed: ParsedSource, symbol: Symbol) -> str:
    """The declaration part: from the definition start (decorators excluded) to its body."""
    text = parsed.text_of(symbol.sig_start, symbol.head_end).rstrip()
    return text.rstrip("{").rstrip()


def skeleton(parsed: ParsedSource) -> str:
    """The file with every function body elided (``{ ... }`` or ``...``); everything else as is."""
    spans = sorted((s.body for s in parsed.symbols if s.body is not None and s.is_function), key=lambda b: b[0])
    pieces: list[bytes] = []
    cursor = 0
    for start, end in spans:
        if start < cursor:
            continue  # nested in a body already elided
        replacement, start = _elision(parsed, start, end)
        pieces.append(parsed.data[cursor:start])
        pieces.append(replacement)
        cursor = end
    pieces.append(parsed.data[cursor:])
    return b"".join(pieces).decode("utf-8", "surrogateescape")


def _elision(parsed: ParsedSource, start: int, end: int) -> tuple[bytes, int]:
    body = parsed.data[start:end]
    if body.startswith(b"{"):
        return (b"{ ... }" if body.rstrip().endswith(b"}") else b"{ ..."), start
    if parsed.language == "python":
        return _python_elision(parsed, start, end)
    expression_body = body.startswith(b"=") or parsed.language in ("javascript", "typescript", "tsx")
    if expression_body and b"\n" not in body.strip():
        return body, start  # `= expr` / `=> expr` / an arrow function's expression: short, keep it
    return b"...", start


def _python_elision(parsed: ParsedSource, start: int, end: int) -> tuple[bytes, int]:
    block = parsed.tree.root_node.descendant_for_byte_range(start, end)
    while block is not None and block.type != "block":
        block = block.parent
    first = block.named_children[0] if block is not None and block.named_children else None
    docstring = first is not None and (first.type == "string" or (
        first.type == "expression_statement" and bool(first.named_children)
        and first.named_children[0].type == "string"))
    if first is not None and docstring:
        indent = b" " * first.start_point[1]
        return b"\n" + indent + b"...", first.end_byte
    return b"...", start


# -- editing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replacement:
    """A checked edit: the new text, where the new definition sits, and the re-parsed file."""

    text: str
    start_line: int
    end_line: int
    parsed: ParsedSource
    notes: tuple[str, ...] = ()


def replace_definition(parsed: ParsedSource, symbol: Symbol, new_content: str, display: str) -> Result[Replacement]:
    """Swap a definition for ``new_content`` by its byte range; refuse when that introduces a syntax error
    or defines another name.

    In a C or C++ file tree-sitter already fails to parse somewhere (macros it cannot expand),
    only the new definition is checked, alone (:mod:`codeward.engines.code_intel.fragment_check`); elsewhere
    the whole file is re-parsed and must not gain an error.
    """
    start, end = definition_span(parsed, symbol)
    old = parsed.data[start:end].decode("utf-8", "surrogateescape")
    content = _fit(new_content.replace("\r\n", "\n"), old)
    if not content.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "new_content is empty",
                           "Give the complete new definition; to delete lines use set_file_slice.")
    new_bytes = encode_source(content)
    first_line = parsed.data.count(b"\n", 0, start) + 1
    if content == old:
        return Result.success(Replacement(parsed.data.decode("utf-8", "surrogateescape"), first_line,
                                          symbol.end_line, parsed))
    data = parsed.data[:start] + new_bytes + parsed.data[end:]
    member = parsed.language in C_FAMILY and _enclosing_type(parsed, symbol) is not None
    swapped = _swapped_name(parsed, symbol, old, content, member)
    if swapped:
        return Result.fail(ErrorKind.INVALID_INPUT, f"refused: {swapped}; the update replaces {symbol.qualified} "
                           f"and keeps its name ({display} is unchanged)",
                           f"To rename {symbol.name}, rename it and its callers first (search_text finds them), "
                           "then update it; to add another definition, insert it with edit_file.")
    notes: tuple[str, ...] = ()
    if parsed.language in C_FAMILY and syntax_problems(parsed.tree, limit=1):
        verdict = check_fragment(parsed.language, old, content, member=member)
        refused = _fragment_refusal(verdict, symbol, content, first_line, display)
        if refused is not None:
            return refused
        if verdict.brackets_only:
            notes = (f"[tree-sitter cannot parse {symbol.qualified} even as it was (macros?): the new text was "
                     "checked for balanced brackets, strings and comments only]",)
    else:
        tree = parse_prepared(data, parsed.language)
        problem = _introduced_problem(parsed, syntax_problems(tree, limit=200), start, start + len(new_bytes))
        if problem is not None:
            return Result.fail(ErrorKind.INVALID_INPUT,
                               f"the new definition of {symbol.qualified} would leave {display} with a syntax error "
                               f"at {problem.describe()}; nothing was changed",
                               "Fix the new_content (balanced braces/brackets, complete statements) and try again.")
    text = data.decode("utf-8", "surrogateescape")
    last_line = first_line + content.count("\n") - (1 if content.endswith("\n") else 0)
    return Result.success(Replacement(text, first_line, last_line, parse_source(text, parsed.language), notes))


def _fragment_refusal(verdict: FragmentVerdict, symbol: Symbol, content: str, first_line: int,
                      display: str) -> Result[Replacement] | None:
    hint = (f"{display} already had parse errors elsewhere (macros tree-sitter cannot expand); they do not count: "
            "only the new definition was checked. Fix the new_content and try again.")
    if verdict.problem is not None:
        problem = verdict.problem
        before = encode_source(content)[:problem.start_byte].decode("utf-8", "surrogateescape")
        row = before.count("\n")
        column = len(before) - (before.rfind("\n") + 1) + 1
        what = f"missing {problem.text!r}" if problem.missing else f"cannot parse {_snippet(problem.text)!r}"
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"the new definition of {symbol.qualified} has a syntax error at line {first_line + row}, "
                           f"column {column} (line {row + 1} of new_content): {what}; nothing was changed", hint)
    if verdict.unbalanced:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"the new definition of {symbol.qualified} does not balance its brackets as the old one "
                           f"did: {verdict.unbalanced}; nothing was changed", hint)
    return None


def _snippet(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _enclosing_type(parsed: ParsedSource, symbol: Symbol) -> Symbol | None:
    """The class, struct or union whose body holds ``symbol`` (not an out-of-line member's class)."""
    holders = [s for s in parsed.symbols if s.kind in ("class", "struct", "union") and s is not symbol
               and s.body is None and s.start_byte < symbol.start_byte and symbol.end_byte <= s.end_byte]
    return max(holders, key=lambda s: s.start_byte, default=None)


def _swapped_name(parsed: ParsedSource, symbol: Symbol, old: str, new: str, member: bool) -> str:
    """Why ``new`` is not a definition of ``symbol``'s name ("" when it is).

    The names come from parsing each text alone; where the grammar cannot name what the old text
    defines (macros, a member out of its class), the name must at least be written in the new one.
    """
    expected = normal_part(symbol.name)
    found = defined_names(parsed.language, new, member=member)
    if expected in (normal_part(d.name) for d in found):
        return ""
    if expected in (normal_part(d.name) for d in defined_names(parsed.language, old, member=member)) and found:
        return mismatch("new_content", symbol.name, found, kind=symbol.kind)
    if re.search(rf"(?<![\w~]){re.escape(symbol.name)}(?!\w)", new):
        return ""  # the grammar cannot name the definitions here (macros), but the name is written
    return mismatch("new_content", symbol.name, found, kind=symbol.kind)


def _fit(content: str, old: str) -> str:
    """Match the old definition's trailing newline and, for content whose first line is not indented,
    its indentation (preprocessor lines stay at the start of their line)."""
    if not old.endswith("\n") and content.endswith("\n"):
        content = content[:-1]
    indent = old[: len(old) - len(old.lstrip(" \t"))]
    lines = content.split("\n")
    first = next((ln for ln in lines if ln.strip()), "")
    if indent and first and first == first.lstrip(" \t"):
        content = "\n".join(indent + ln if ln.strip() and not ln.startswith("#") else ln for ln in lines)
    return content


def _introduced_problem(parsed: ParsedSource, after: list[SyntaxProblem], start: int, end: int) -> SyntaxProblem | None:
    """A syntax problem the edit caused: one inside the new text, or any beyond the old count."""
    before = syntax_problems(parsed.tree, limit=200)
    for problem in after:
        overlaps = problem.start_byte < end and problem.end_byte > start
        if overlaps or (problem.missing and start <= problem.start_byte <= end):
            return problem
    if len(after) > len(before):
        old_keys = {(p.text, p.missing) for p in before}
        fresh = [p for p in after if (p.text, p.missing) not in old_keys]
        return fresh[0] if fresh else after[-1]
    return None
