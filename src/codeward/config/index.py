"""``[index]``: the repository symbol index (``codeward index``, ``find_symbol``, ``repo_map``...)."""

from __future__ import annotations

from typing import ClassVar

from codeward.config.base import Bool, Table


class IndexSettings(Table):
    """How the symbol index is built."""

    table_name: ClassVar[str] = "index"

    ctags: Bool = True
    """Take a cold build's definitions from universal-ctags when it is installed (much faster on big
    trees); ``false`` makes every build the exact tree-sitter one."""
