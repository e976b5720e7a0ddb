"""Arguments the navigation tools share (``py_find_references``/``find_references``, the renames...)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

OffsetArg = Annotated[int, Field(ge=0, description="next_offset of the last page.")]
LimitArg = Annotated[int, Field(ge=1, le=2000)]
ApplyArg = Annotated[bool, Field(description="Write the changes (default: show the diff).")]
UnsureArg = Annotated[Literal["refuse", "rename", "leave"], Field(
    description="Unsure name matches: refuse to apply, rename or leave them.")]
