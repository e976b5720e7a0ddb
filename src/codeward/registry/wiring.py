"""What a server needs from the registry: its providers, the served-tools handle, meta mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codeward.providers import PromptProvider, ResourceProvider
from codeward.registry.meta import MetaSurface
from codeward.registry.providers import registry_providers
from codeward.registry.served import EXTRAS_KEY, ServedTools
from codeward.registry.settings import RegistrySettings
from codeward.surface import ToolSurface


@dataclass(frozen=True)
class RegistryWiring:
    """Arguments for :class:`codeward.server.CodewardServer`: the surface to serve and the rest."""

    surface: ToolSurface
    resource_providers: tuple[ResourceProvider, ...]
    prompt_providers: tuple[PromptProvider, ...]
    extras: dict[str, Any] = field(default_factory=dict)


def wire_registry(surface: ToolSurface, *, meta: bool = False,
                  settings: RegistrySettings | None = None) -> RegistryWiring:
    """Directives as prompts, knowledge as resources, and the served tools for the meta-tools.

    With ``meta`` the surface is wrapped in a :class:`MetaSurface` (only the four registry tools
    are listed); without, the registry tools still search and run the served tools.
    """
    prompts, knowledge = registry_providers(settings)
    if meta:
        return RegistryWiring(MetaSurface(surface), (knowledge,), (prompts,))
    return RegistryWiring(surface, (knowledge,), (prompts,), {EXTRAS_KEY: ServedTools(surface)})
