"""The built-in toolsets. Each module here defines tools with ``@tool``; this list says which.

Add a module to :data:`TOOL_MODULES` to make its tools part of the default catalog.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from codeward.catalog import Catalog

TOOL_MODULES: tuple[str, ...] = (
    "codeward.tools.files",
    "codeward.tools.search",
    "codeward.tools.file_ops",
    "codeward.tools.patch",
    "codeward.tools.checkpoint_tools",
    "codeward.tools.analysis",
    "codeward.tools.git_tools",
    "codeward.tools.treesitter_tools",
    "codeward.tools.python_ast",
    "codeward.tools.python_refs",
    "codeward.tools.web",
    "codeward.tools.runtime",
    "codeward.tools.beads",
    "codeward.tools.coding_review",
    "codeward.tools.coding_exec",
    "codeward.tools.shell",
    "codeward.tools.tests",
    "codeward.tools.registry_tools",
    "codeward.tools.seed_names",
)


def default_catalog(toolsets: Iterable[str] | None = None) -> Catalog:
    """The catalog of every built-in tool, optionally limited to some toolsets.

    Its schemas come from the user's schema cache when this build saved them before.
    """
    from codeward.schema_cache import SchemaCache

    modules = [importlib.import_module(name) for name in TOOL_MODULES]
    catalog = Catalog.from_modules(modules, toolsets)
    cache = SchemaCache.default()
    if cache is not None:
        cache.prime(catalog)
    return catalog
