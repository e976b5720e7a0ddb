"""The registry's vocabulary: item kinds, spaces, and one item as the index knows it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


class Kind(StrEnum):
    """What an item is: a runnable tool, reusable instructions, or a note."""

    TOOL = "tool"
    DIRECTIVE = "directive"
    KNOWLEDGE = "knowledge"

    @property
    def folder(self) -> str:
        return {Kind.TOOL: "tools", Kind.DIRECTIVE: "directives", Kind.KNOWLEDGE: "knowledge"}[self]

    @property
    def suffix(self) -> str:
        return ".py" if self is Kind.TOOL else ".md"


class Space(StrEnum):
    """Where an item lives. Project items shadow user items, which shadow hub items."""

    PROJECT = "project"
    USER = "user"
    HUB = "hub"
    """A shared registry folder (a team's git checkout or network share) to publish to and pull from."""
    BUILTIN = "builtin"

    @property
    def rank(self) -> int:
        return (Space.PROJECT, Space.USER, Space.HUB, Space.BUILTIN).index(self)


class ToolType(StrEnum):
    """``__tool_type__`` values. Primitives are built into codeward; files cannot be primitives."""

    PRIMITIVE = "primitive"
    RUNTIME = "runtime"
    PYTHON = "python"
    API = "api"
    MCP_TOOL = "mcp_tool"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an item: where, which field, what, and how to fix it."""

    file: str
    field: str
    message: str
    fix: str

    def render(self) -> str:
        return f"{self.file}: {self.field}: {self.message}. Fix: {self.fix}"


@dataclass(frozen=True)
class Item:
    """An item as indexed: identity, the searchable text and the parsed metadata."""

    kind: Kind
    name: str
    space: Space
    path: Path | None
    """The file (``None`` for built-in items)."""
    description: str = ""
    category: str = ""
    version: str = ""
    content: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    """Kind-specific metadata (tool type, executor, CONFIG, arguments...), JSON-compatible."""
    problems: tuple[Problem, ...] = ()

    @property
    def summary(self) -> str:
        return self.description.strip().splitlines()[0] if self.description.strip() else ""

    @property
    def valid(self) -> bool:
        return not self.problems
