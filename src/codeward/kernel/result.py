"""Errors as values: every tool returns a `Result` instead of raising.

Exceptions are for bugs. A tool that cannot do what was asked returns a `Result` whose
`errors` say what went wrong and what to do instead; the MCP boundary turns those into a
tool result with ``isError: true`` so the model can correct itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")


class ErrorKind(StrEnum):
    """What class of failure an error is; callers branch on this, never on message text."""

    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    INVALID_INPUT = "invalid_input"
    CONFLICT = "conflict"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    TOO_LARGE = "too_large"
    INTERNAL = "internal"


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One failure: its kind, a message saying what happened, and a hint saying what to do."""

    kind: ErrorKind
    message: str
    hint: str = ""
    source: str = ""

    def render(self) -> str:
        """The text a model or a person sees: ``ERROR (kind): message. hint``."""
        text = f"ERROR ({self.kind.value}): {self.message}"
        if self.hint:
            text += f"\nHint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "message": self.message, "hint": self.hint, "source": self.source}


@dataclass(frozen=True, slots=True)
class Result(Generic[T]):
    """The outcome of a tool: ``data`` when it worked, ``errors`` when it did not.

    ``data`` is always readable; on failure it holds the zero value the tool chose
    (usually ``""`` or ``None``), so callers never need a ``None`` check to read it.
    """

    data: T
    errors: list[ErrorInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @classmethod
    def success(cls, data: T, *notes: str) -> Result[T]:
        return cls(data=data, notes=list(notes))

    @classmethod
    def fail(cls, kind: ErrorKind, message: str, hint: str = "", *, data: Any = None, source: str = "") -> Result[Any]:
        return cls(data=data, errors=[ErrorInfo(kind, message, hint, source)])

    def cast(self, data: U) -> Result[U]:
        """The same errors carried over to a result of another type (for propagating failures)."""
        return Result(data=data, errors=list(self.errors), notes=list(self.notes))

    def error_text(self) -> str:
        return "\n".join(error.render() for error in self.errors)


def quoted(text: str) -> str:
    """``text`` in quotes for a message, as the caller typed it: ``'def \\w+'``, not ``'def \\\\w+'``.

    ``repr`` doubles every backslash, which misquotes a regular expression or a Windows path;
    only characters that cannot stand in one line of text (newlines, controls) fall back to it.
    """
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        return repr(text)
    quote = '"' if "'" in text and '"' not in text else "'"
    return f"{quote}{text}{quote}"
