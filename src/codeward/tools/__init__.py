"""The built-in toolsets. Each module here defines tools with ``@tool``; this list says which.

Add a module to :data:`TOOL_MODULES` to make its tools part of the default catalog. A toolset in
:data:`OPT_IN_TOOLSETS` is in the catalog but a server lists it only when ``[server] toolsets``
names it (or ``"all"``): :func:`served_toolsets`.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterable

from codeward.kernel.catalog import Catalog, specs_in
from codeward.kernel.schema_cache import SchemaCache

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
    "codeward.tools.python_move",
    "codeward.tools.python_refs",
    "codeward.tools.navigation",
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


OPT_IN_TOOLSETS: frozenset[str] = frozenset({"lsp"})
"""Toolsets a server offers only when asked: ``lsp`` (language-server navigation and renames) starts
language servers, and the default listing stays as lean as it was."""
EVERY_TOOLSET = "all"
"""``[server] toolsets = ["all"]``: every toolset, the opt-in ones too."""


def served_toolsets(requested: Collection[str] | None, known: Iterable[str]) -> set[str]:
    """The toolsets a server lists: the ones named (``"all"`` for every one), or, when none are named,
    every toolset but the opt-in ones."""
    every = set(known)
    if requested is None:
        return every - OPT_IN_TOOLSETS
    if EVERY_TOOLSET in requested:
        return every
    return set(requested)


def default_catalog(toolsets: Iterable[str] | None = None) -> Catalog:
    """The catalog of every built-in tool, optionally limited to some toolsets.

    When this build saved its listing before (:mod:`codeward.kernel.schema_cache`), the catalog comes from
    it and no tool module is imported until one of its tools runs; otherwise the modules are
    imported and the listing saved for the next start.
    """
    cache = SchemaCache.default()
    specs = cache.specs(TOOL_MODULES) if cache is not None else None
    if specs is None:
        specs = [spec for name in TOOL_MODULES for spec in specs_in(importlib.import_module(name))]
        if cache is not None:
            cache.save(TOOL_MODULES, specs)
    wanted = set(toolsets) if toolsets is not None else None
    return Catalog(spec for spec in specs if wanted is None or spec.toolset in wanted)


def served_catalog(toolsets: Collection[str] | None = None) -> Catalog:
    """What a server lists for ``[server] toolsets`` (see :func:`served_toolsets`)."""
    return default_catalog(served_toolsets(toolsets, default_catalog().toolsets()))
