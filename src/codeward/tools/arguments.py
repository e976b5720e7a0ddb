"""Argument shapes several tools share, defined once so they read the same (or say nothing) everywhere.

Every listed word costs context on every request, so an argument says only what its name, type,
default and enum do not: paths are relative to the primary root (the server's instructions say so
once, not every ``path``), ``dry_run`` changes nothing, and the rules below are written here only.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Scope = Annotated[str, Field(description="File or folder ('.': the whole workspace).")]
"""Where a search or analysis looks."""
PySymbol = Annotated[str, Field(description="As written in the file; a method or nested class: Class.name.")]
"""A Python definition by name."""
Occurrence = Annotated[int | None, Field(ge=1, description="Which one (1-based) when several definitions share "
                                                          "the name.")]
CodeSymbol = Annotated[str, Field(description="Members qualified with '::' or '.'; name@line picks one of "
                                              "several overloads.")]
"""A definition by name in any tree-sitter language."""
NewDefinition = Annotated[str, Field(description="The whole new definition, re-indented to the old one's place.")]
