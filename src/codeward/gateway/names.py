"""Exposed tool names: ``alias__tool``, always valid, never clashing, decided the same way every time;
and which of a server's tools are offered at all (its ``allow``/``deny`` lists, :class:`ToolFilter`).

The rule (also in docs/gateway.md):

1. The name is ``<alias>__<upstream tool name>``. Aliases never contain ``__`` nor end with
   ``_`` (refused at config load), so the leftmost ``__`` always splits alias from tool.
2. Characters outside ``[a-zA-Z0-9_-]`` in the upstream name become ``_``.
3. A name longer than the limit (128, or 64 for clients that need it), or one that another
   tool already holds, is cut to ``limit - 9`` characters and gets ``_`` plus the first 8 hex
   digits of the SHA-256 of ``alias__<original tool name>``.
4. Names that need no change are assigned first, then the others in sorted order, so which
   tool keeps the plain name never depends on listing order. A clash never aborts anything.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from codeward.config.mcp import ALIAS_SEPARATOR, ServerConfig

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
HASH_DIGITS = 8


@dataclass(frozen=True)
class ToolRef:
    """Where an exposed name leads: the server alias and the tool's name on that server."""

    alias: str
    tool: str


def split_name(name: str) -> tuple[str, str] | None:
    """``alias__tool`` → ``(alias, tool)`` at the leftmost ``__``; None when there is no ``__``."""
    alias, sep, tool = name.partition(ALIAS_SEPARATOR)
    if not sep or not alias or not tool:
        return None
    return alias, tool


def plain_name(alias: str, tool: str) -> str:
    """The name before any fix-up: ``alias__tool``."""
    return f"{alias}{ALIAS_SEPARATOR}{tool}"


def hashed_name(alias: str, tool: str, limit: int) -> str:
    """The fallback name for a tool whose plain name is invalid, too long or taken."""
    digest = hashlib.sha256(plain_name(alias, tool).encode("utf-8")).hexdigest()[:HASH_DIGITS]
    stem = _INVALID_CHARS.sub("_", plain_name(alias, tool))[: limit - HASH_DIGITS - 1]
    return f"{stem}_{digest}"


def assign_names(refs: Iterable[ToolRef], *, limit: int = 128, reserved: Iterable[str] = ()) -> dict[str, ToolRef]:
    """Give every upstream tool a unique valid exposed name (see the module docstring).

    ``reserved`` names (native tools) are never handed out. Returns exposed name → ref.
    """
    if not 16 <= limit <= 128:
        raise ValueError(f"name limit must be between 16 and 128, got {limit}")
    taken: set[str] = set(reserved)
    assigned: dict[str, ToolRef] = {}
    pending: list[ToolRef] = []
    unique = list(dict.fromkeys(refs))
    for ref in unique:
        name = plain_name(ref.alias, ref.tool)
        if len(name) <= limit and VALID_NAME.match(name) and name not in taken:
            taken.add(name)
            assigned[name] = ref
        else:
            pending.append(ref)
    for ref in sorted(pending, key=lambda r: (r.alias, r.tool)):
        cleaned = _INVALID_CHARS.sub("_", plain_name(ref.alias, ref.tool))
        name = cleaned if len(cleaned) <= limit and cleaned not in taken else hashed_name(ref.alias, ref.tool, limit)
        n = 2
        while name in taken:  # a hash collision as well: astronomically rare, still deterministic
            suffix = f"-{n}"
            name = hashed_name(ref.alias, ref.tool, limit)[: limit - len(suffix)] + suffix
            n += 1
        taken.add(name)
        assigned[name] = ref
    return assigned


def exposed_names_by_ref(assigned: Mapping[str, ToolRef]) -> dict[ToolRef, str]:
    return {ref: name for name, ref in assigned.items()}


def matches(name: str, patterns: tuple[str, ...]) -> bool:
    """Exact names, or shell-style globs like ``alias__*`` (case-sensitive)."""
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


@dataclass(frozen=True)
class ToolFilter:
    """A server's ``allow``/``deny`` lists over its own tool names; deny wins; empty allow = all."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def of(cls, server: ServerConfig) -> ToolFilter:
        return cls(server.allow, server.deny)

    def offers(self, tool: str) -> bool:
        if self.deny and matches(tool, self.deny):
            return False
        return not self.allow or matches(tool, self.allow)
