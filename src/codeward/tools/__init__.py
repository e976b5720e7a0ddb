"""The built-in toolsets. Each module here defines tools with ``@tool``; this list says which.

Add a module to :data:`TOOL_MODULES` to make its tools part of the default catalog, and give a new
toolset its line in :data:`TOOLSET_SUMMARIES` (what the ``toolsets`` tool shows a model). A server
lists the :data:`CORE_TOOLS` and reaches every other toolset through the discovery tools, unless
``[server] toolsets`` says otherwise (:func:`toolset_choice`). A toolset in :data:`OPT_IN_TOOLSETS` is
in the catalog but served only when ``[server] toolsets`` names it (or ``"all"``).
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from codeward.kernel.catalog import Catalog, ToolSpec, specs_in
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
    "codeward.tools.processes",
    "codeward.tools.shell",
    "codeward.tools.tests",
    "codeward.tools.registry_tools",
    "codeward.tools.toolsets",
    "codeward.tools.seed_names",
)

CORE = "core"
"""``[server] toolsets`` keyword, and its meaning when unset: the core tools listed, every toolset reachable."""
EVERY_TOOLSET = "all"
"""``[server] toolsets = ["all"]``: every toolset served and listed."""
OPT_IN_TOOLSETS: frozenset[str] = frozenset({"lsp"})
"""Toolsets a server serves only when asked: ``lsp`` (language-server navigation and renames) starts
language servers."""
DISCOVERY_TOOLSET = "discovery"
"""``toolsets`` and ``call_tool``: served only with the lean listing, where there is something to discover."""

CORE_TOOLS: tuple[str, ...] = (
    "read_file", "search_text", "search_files", "get_tree", "edit_file", "write_file", "apply_patch",
    "find_symbol", "code_get_outline", "run_shell", "git_status", "get_git_diff", "undo",
    "toolsets", "call_tool",
)
"""What a coding agent uses every minute — read, search, edit, patch, tree and symbols, the shell, git
status and diff, undo — and the two discovery tools: listed in every session of a lean server."""

TOOLSET_SUMMARIES: Mapping[str, str] = {
    "files": "Directories, line slices, new folders, moves and deletions.",
    "checkpoints": "Every tool edit recorded; list them, undo any.",
    "analysis": "Repository-wide: where symbols are defined, call trees, a ranked map, file summaries.",
    "git": "History, one commit, blame; commit named files.",
    "python": "Python by symbol: outlines, definitions, exact edits, moves, renames, references.",
    "cpp": "C and C++ by symbol (tree-sitter): outlines, definitions, signatures, edits.",
    "code": "Any supported language by symbol (tree-sitter): outlines, definitions, edits.",
    "web": "Fetch a URL as Markdown; search the web.",
    "runtime": "The server's own call figures, memory and CPU.",
    "beads": "The project's Beads issue tracker (.beads/).",
    "coding": "Static analysis, quality gates and reports; run code in a sandbox or Docker.",
    "shell": "The project's tests and long-running processes (dev servers, REPLs) in the sandbox; run_shell is core.",
    "registry": "The .ai/ registry: search, read and run user tools, directives and knowledge.",
    "lsp": "Language servers: whole-project references, renames, definitions, diagnostics.",
    DISCOVERY_TOOLSET: "Find, enable and call the other toolsets.",
}
"""One line per toolset: what ``toolsets`` lists beside its tools' names."""


@dataclass(frozen=True)
class ToolsetChoice:
    """What ``[server] toolsets`` asks for: which toolsets are served, and whether the listing is lean."""

    served: frozenset[str] | None
    """The toolsets served; None for every one but the opt-in ones not asked for (the discovery tools only
    when lean)."""
    lean: bool
    """List the core tools (and :attr:`listed`); reach the rest through the discovery tools."""
    listed: frozenset[str] = frozenset()
    """Toolsets listed in full from the start besides the core (``["core", "python"]``)."""
    opt_in: bool = False
    """Serve the :data:`OPT_IN_TOOLSETS` too (``["all"]``)."""

    def wants(self, spec: ToolSpec) -> bool:
        if spec.toolset == DISCOVERY_TOOLSET:
            return self.lean
        if self.served is not None:
            return spec.toolset in self.served
        return self.opt_in or spec.toolset not in OPT_IN_TOOLSETS or spec.toolset in self.listed


def toolset_choice(requested: Collection[str] | None) -> ToolsetChoice:
    """Unset or naming ``core``: lean, every toolset but the opt-in ones served (the others named are served
    and listed from the start); ``all``: every toolset served and listed; names alone: only those served, all
    listed; ``[]``: none."""
    if requested is None:
        return ToolsetChoice(None, True)
    names = frozenset(requested)
    if EVERY_TOOLSET in names:
        return ToolsetChoice(None, False, opt_in=True)
    if CORE in names:
        return ToolsetChoice(None, True, names - {CORE})
    return ToolsetChoice(names, False)


def default_catalog(toolsets: Iterable[str] | None = None) -> Catalog:
    """The catalog of every built-in tool, optionally limited to some toolsets.

    When this build saved its listing before (:mod:`codeward.kernel.schema_cache`), the catalog comes from
    it and no tool module is imported until one of its tools runs; otherwise the modules are
    imported and the listing saved for the next start.
    """
    wanted = set(toolsets) if toolsets is not None else None
    return Catalog(spec for spec in _all_specs() if wanted is None or spec.toolset in wanted)


def served_catalog(choice: ToolsetChoice) -> Catalog:
    """The tools a server with this choice serves (listed or reachable)."""
    return Catalog(spec for spec in _all_specs() if choice.wants(spec))


def _all_specs() -> list[ToolSpec]:
    cache = SchemaCache.default()
    specs = cache.specs(TOOL_MODULES) if cache is not None else None
    if specs is None:
        specs = [spec for name in TOOL_MODULES for spec in specs_in(importlib.import_module(name))]
        if cache is not None:
            cache.save(TOOL_MODULES, specs)
    return specs
