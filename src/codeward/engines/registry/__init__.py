"""The registry: user-written tools, directives and knowledge in ``.ai/`` and ``~/.ai/``.

Tools are Python files whose metadata is read without importing them, signed with a content
hash, and run through executor chains down to a primitive (``subprocess`` or ``http_client``)
— each in its own interpreter, with a virtual environment of its own when it imports
third-party packages. Directives are served as MCP prompts, knowledge as MCP resources.
Meta mode (:mod:`codeward.tools.meta`) serves any tool surface behind the four registry meta-tools.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeward.engines.registry.items import Item, Kind, Problem, Space, ToolType
    from codeward.engines.registry.providers import registry_providers
    from codeward.engines.registry.served import ServedTools
    from codeward.engines.registry.served_content import DirectivePrompts, KnowledgeResources
    from codeward.engines.registry.service import Registry
    from codeward.engines.registry.settings import RegistrySettings

_HOMES = {
    "Item": "items", "Kind": "items", "Problem": "items", "Space": "items", "ToolType": "items",
    "DirectivePrompts": "served_content", "KnowledgeResources": "served_content", "registry_providers": "providers",
    "ServedTools": "served", "Registry": "service", "RegistrySettings": "settings",
}
"""Where each name lives: importing one part (a server's start imports a few) does not import them all."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "DirectivePrompts",
    "Item",
    "Kind",
    "KnowledgeResources",
    "Problem",
    "Registry",
    "RegistrySettings",
    "ServedTools",
    "Space",
    "ToolType",
    "registry_providers",
]
