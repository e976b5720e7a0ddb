"""Arguments the navigation tools share (``py_find_references``/``find_references``, the renames...)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

OffsetArg = Annotated[int, Field(ge=0, description="References to skip (next_offset of the last page).")]
LimitArg = Annotated[int, Field(ge=1, le=2000, description="References per page.")]
ApplyArg = Annotated[bool, Field(description="Write the changes; by default only the unified diff is shown.")]
UnsureArg = Annotated[Literal["refuse", "rename", "leave"], Field(
    description="Occurrences of the name not tied to the symbol: refuse to apply while any exist, rename them "
                "too, or leave them.")]
