"""Checking a new definition on its own, for files tree-sitter cannot parse whole.

A C or C++ file full of macros (a header library, a JSON or msgpack codec) often has parse
errors the edit has nothing to do with; the grammar's error recovery moves them around when a
definition changes, so comparing the whole file before and after blames the new text for
errors that were already there. Here the definition is parsed alone — inside a ``struct`` when
it is a class member — and compared with the old definition parsed the same way: a problem
counts only when the old text did not have it at the same place. Where the old text was
already unparseable around the change, its brackets, strings and comments are compared
instead (:func:`bracket_balance`), which is what a macro cannot hide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeward.engines.code_intel.definition_swap import Defined
from codeward.engines.code_intel.outline_model import Symbol, encode_source, extract_symbols, parse_prepared, rules_for
from codeward.engines.code_intel.treesitter import SyntaxProblem, syntax_problems

MEMBER_CONTEXT = (b"struct __codeward_context {\n", b"\n};\n")
"""What a class member is parsed inside, so that ``void f() const override;`` reads as a member."""
BRACKETS = {"(": 0, ")": 0, "[": 1, "]": 1, "{": 2, "}": 2}
_RAW_STRING = re.compile(r'R"([^()\\ \t\n]{0,16})\(')


@dataclass(frozen=True)
class FragmentVerdict:
    """What checking a new definition alone found."""

    problem: SyntaxProblem | None = None
    """A problem the new text has and the old one did not (byte offsets into the new text)."""
    unbalanced: str = ""
    """Why the brackets do not add up, when only they could be checked."""
    brackets_only: bool = False
    """The old definition was unparseable around the change: only brackets, strings and comments were compared."""


def check_fragment(language: str, old: str, new: str, *, member: bool) -> FragmentVerdict:
    """Whether ``new`` brings a syntax problem ``old`` did not have, each parsed alone."""
    new_problems = _problems(language, new, member)
    if not new_problems:
        return FragmentVerdict()
    old_problems = _problems(language, old, member)
    old_bytes, new_bytes = encode_source(old), encode_source(new)
    prefix = _common_prefix(old_bytes, new_bytes)
    suffix = _common_prefix(old_bytes[prefix:][::-1], new_bytes[prefix:][::-1])
    old_end, new_end = len(old_bytes) - suffix, len(new_bytes) - suffix
    before = {(p.start_byte, p.end_byte, p.missing) for p in old_problems if p.end_byte <= prefix}
    after = {(len(old_bytes) - p.start_byte, len(old_bytes) - p.end_byte, p.missing)
             for p in old_problems if p.start_byte >= old_end}
    changed_was_broken = any(_touches(p, prefix, old_end) for p in old_problems)
    unsure = False
    for problem in new_problems:
        if problem.end_byte <= prefix and (problem.start_byte, problem.end_byte, problem.missing) in before:
            continue
        if problem.start_byte >= new_end and (len(new_bytes) - problem.start_byte, len(new_bytes) - problem.end_byte,
                                              problem.missing) in after:
            continue
        if changed_was_broken:
            unsure = True
            continue
        return FragmentVerdict(problem=problem)
    if not unsure:
        return FragmentVerdict()
    old_balance, new_balance = bracket_balance(old), bracket_balance(new)
    if new_balance != old_balance:
        return FragmentVerdict(unbalanced=_balance_difference(old_balance, new_balance), brackets_only=True)
    return FragmentVerdict(brackets_only=True)


def _common_prefix(first: bytes, second: bytes) -> int:
    shortest = min(len(first), len(second))
    return next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), shortest)


def defined_names(language: str, text: str, *, member: bool) -> list[Defined]:
    """The outermost definitions in ``text`` parsed alone, in order: name and kind."""
    data, offset = _wrapped(text, member)
    rules = rules_for(language)
    symbols = extract_symbols(parse_prepared(data, language, rules), rules)
    depth = 1 if member else 0
    end = len(data) - len(MEMBER_CONTEXT[1]) if member else len(data)
    return [Defined(s.name, s.kind) for s in symbols if s.depth == depth and _inside(s, offset, end)]


def _inside(symbol: Symbol, start: int, end: int) -> bool:
    return start <= symbol.start_byte and symbol.end_byte <= end


def _wrapped(text: str, member: bool) -> tuple[bytes, int]:
    data = encode_source(text)
    if not member:
        return data, 0
    head, tail = MEMBER_CONTEXT
    return head + data + tail, len(head)


def _problems(language: str, text: str, member: bool) -> list[SyntaxProblem]:
    """Syntax problems of ``text`` parsed alone, with byte offsets into ``text``."""
    data, offset = _wrapped(text, member)
    found = syntax_problems(parse_prepared(data, language), limit=200)
    size = len(encode_source(text))
    shifted = []
    for problem in found:
        start = min(max(problem.start_byte - offset, 0), size)
        end = min(max(problem.end_byte - offset, 0), size)
        shifted.append(SyntaxProblem(line=problem.line - (1 if member else 0), column=problem.column,
                                     end_line=problem.end_line - (1 if member else 0), start_byte=start,
                                     end_byte=end, missing=problem.missing, text=problem.text))
    return shifted


def _touches(problem: SyntaxProblem, start: int, end: int) -> bool:
    """Whether a problem overlaps (or, empty, sits at the edge of) the byte range ``start``-``end``."""
    if problem.start_byte < end and problem.end_byte > start:
        return True
    return start <= problem.start_byte <= end


def bracket_balance(text: str) -> tuple[int, int, int]:
    """Open minus closed ``()``, ``[]`` and ``{}`` outside comments, strings and character literals."""
    counts = [0, 0, 0]
    i, size = 0, len(text)
    while i < size:
        char = text[i]
        if text.startswith("//", i):
            i = _end_of(text, "\n", i)
        elif text.startswith("/*", i):
            i = _end_of(text, "*/", i + 2)
        elif char == "R" and (raw := _RAW_STRING.match(text, i)):
            i = _end_of(text, f"){raw.group(1)}\"", raw.end())
        elif char in "\"'":
            i = _end_of_literal(text, i)
        else:
            if char in BRACKETS:
                counts[BRACKETS[char]] += 1 if char in "([{" else -1
            i += 1
    return counts[0], counts[1], counts[2]


def _end_of(text: str, marker: str, start: int) -> int:
    found = text.find(marker, start)
    return len(text) if found < 0 else found + len(marker)


def _end_of_literal(text: str, start: int) -> int:
    """The index after a string or character literal (escapes honoured; it ends at a newline)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote or text[i] == "\n":
            return i + 1
        i += 1
    return len(text)


def _balance_difference(old: tuple[int, int, int], new: tuple[int, int, int]) -> str:
    pairs = ("()", "[]", "{}")
    parts = []
    for pair, before, after in zip(pairs, old, new, strict=True):
        if before != after:
            more, extra, other = (after - before, pair[0], pair[1]) if after > before else (before - after, pair[1],
                                                                                           pair[0])
            parts.append(f"{more} more '{extra}' than '{other}' compared with the old definition")
    return "; ".join(parts)
