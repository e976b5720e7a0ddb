"""The registry's own tools by both their names (codeward's and the seed's), in a module of their own: a
server's start-up reads them (the served tools leave them out) without loading the registry's items."""

from __future__ import annotations

META_TOOLS = {"registry_search": "search", "registry_load": "load", "registry_execute": "execute",
              "registry_help": "help"}
"""The registry's own tools and the names the seed (Kiwi) called them by, which they answer to: no registry
tool may be named either way (``registry_execute`` would run one of them, or the item would hide it)."""
META_TOOL_NAMES = frozenset({*META_TOOLS, *META_TOOLS.values()})
"""The registry's own tools, by both names: never run (nor listed) as a served tool, nor a registry tool's name."""
