"""Whether a new name is one a language takes: what every rename checks before asking anything."""

from __future__ import annotations

import re
from collections.abc import Collection

from codeward.kernel.result import ErrorKind, Result

IDENTIFIER = re.compile(r"^(?!\d)\w+$")
"""Letters, digits and ``_`` (Unicode letters too), not starting with a digit."""
DOLLAR_IDENTIFIER = re.compile(r"^(?!\d)[\w$]+$")
"""JavaScript and TypeScript also take ``$``."""


def check_new_name(new_name: str, old_name: str, keywords: Collection[str] = (), *, language: str = "",
                   dollar: bool = False) -> Result[str]:
    """``new_name`` stripped, or why it cannot replace ``old_name`` (not an identifier, a keyword, the same)."""
    name = new_name.strip()
    pattern = DOLLAR_IDENTIFIER if dollar else IDENTIFIER
    if not pattern.match(name) or name in keywords:
        what = f"{language} identifier" if language else "identifier here"
        return Result.fail(ErrorKind.INVALID_INPUT, f"new_name {new_name!r} is not a valid {what}",
                           "Give a plain name: letters, digits and _, not starting with a digit, not a keyword.",
                           data="")
    if name == old_name:
        return Result.fail(ErrorKind.INVALID_INPUT, f"the symbol is already named {name!r}",
                           "Give a different new_name.", data="")
    return Result.success(name)
