"""The one check every "replace this definition" tool makes: the new text defines *that* name.

``py_update_definition name=f`` given ``x = 1``, ``py_set_signature`` given ``def g(...)``,
``ts_c_update_definition`` given another function: each would silently swap one symbol for
another, leaving every caller of the old one broken. The tools list what the new text
defines (Python with ``ast``, other languages with tree-sitter) and ask :func:`mismatch`; a
non-empty answer is the refusal, which each tool completes with the tool to use instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Defined:
    """A name the new text defines, and what it is (``function``, ``class``, ``variable``...)."""

    name: str
    kind: str

    def describe(self) -> str:
        return f"the {self.kind} {self.name!r}" if self.kind != "definition" else repr(self.name)


def mismatch(param: str, expected: str, defined: Sequence[Defined], *, kind: str = "definition") -> str:
    """Why ``defined`` does not replace ``expected``, a ``kind`` ("definition", "function", "variable"...);
    "" when it does.

    A definition (function, class, struct...) is replaced by a definition of the same name, a
    variable by a statement assigning it.
    """
    wanted = _group(kind)
    if any(d.name == expected and _group(d.kind) == wanted for d in defined):
        return ""
    target = Defined(expected, kind).describe()
    if not defined:
        what = "no function or class" if wanted == "definition" else "no variable"
        return f"{param} defines {what}, not {target}"
    shown = [d.describe() for d in dict.fromkeys(defined)]
    listing = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    return f"{param} defines {listing}, not {target}"


def _group(kind: str) -> str:
    """Variables replace variables; any other kind (function, class, struct, method...) is a definition."""
    return "variable" if kind == "variable" else "definition"
