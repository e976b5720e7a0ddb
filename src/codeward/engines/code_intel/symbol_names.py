"""Names as the code tools' ``name`` argument gives them, and as symbols are matched against them.

A qualified name may use any of ``::``, ``.``, ``#``, ``\\`` and ``:``; template or generic
arguments are ignored (``Foo<T>::bar`` is ``Foo::bar``); C++ operator names stay whole;
``name@LINE`` picks one of several same-named symbols by a line inside it. Each symbol's
normalized parts are computed once, when its file is parsed (:attr:`Symbol.lookup`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEPARATORS = re.compile(r"::|[.#\\:]")
_GENERIC_ARGS = re.compile(r"<[^<>]*>")
_LINE_SUFFIX = re.compile(r"^(.*?)\s*@\s*(\d+)$")


@dataclass(frozen=True)
class NameQuery:
    """A parsed ``name`` argument: its parts, an optional line, and whether it names an impl."""

    raw: str
    parts: tuple[str, ...]
    line: int | None = None
    impl: bool = False
    trait: str = ""
    """For ``impl Trait for Type``: the trait, normalised (only that impl block matches)."""


def parse_name(raw: str) -> NameQuery:
    text = raw.strip()
    line = None
    matched = _LINE_SUFFIX.match(text)
    if matched:
        text, line = matched.group(1), int(matched.group(2))
    impl = text.startswith("impl ")
    trait = ""
    if impl:
        text = text[5:].strip()
        if " for " in text:
            trait, text = (p.strip() for p in text.split(" for ", 1))
    if text.endswith("()") and not text.endswith("operator()"):
        text = text[:-2]
    parts = tuple(normal_part(p) for p in split_name(text))
    return NameQuery(raw, tuple(p for p in parts if p), line, impl, normal_part(trait))


def split_name(text: str) -> list[str]:
    # `operator::`-free split that leaves C++ operator names (`operator<<`, `operator()`) whole.
    head, marker, operator = text.partition("operator")
    if marker and (not head or _SEPARATORS.search(head[-2:]) or head.endswith(" ")):
        return [*_SEPARATORS.split(head)[:-1], marker + operator]
    return _SEPARATORS.split(text)


def normal_part(part: str) -> str:
    part = part.strip()
    if part.startswith("operator"):
        return re.sub(r"\s+", "", part)
    previous = None
    while previous != part:
        previous, part = part, _GENERIC_ARGS.sub("", part)
    return re.sub(r"\s+", "", part)


def normal_parts(parts: tuple[str, ...]) -> tuple[str, ...]:
    """A symbol's parts as a query sees them (``N.M`` of a C# namespace is two parts)."""
    return tuple(normal_part(piece) for part in parts for piece in split_name(part) if piece.strip())
