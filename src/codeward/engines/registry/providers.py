"""The registry's prompts (directives) and resources (knowledge items) as a server makes them at start.

These fronts hold only the settings: the registry's documents, items, signatures and the provider
records (:mod:`codeward.engines.registry.served_content`) are imported with the first prompt or
resource a client lists or reads — a server's start lists nothing, and most sessions never ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeward.config.registry import RegistrySettings
from codeward.engines.registry.uris import KNOWLEDGE_SCHEME
from codeward.kernel.result import Result
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    from codeward.engines.registry.served_content import DirectivePrompts, KnowledgeResources
    from codeward.kernel.providers import (
        PromptInfo,
        PromptMessageData,
        ResourceData,
        ResourceInfo,
        ResourceTemplateInfo,
    )

class RegistryPrompts:
    """Each valid directive is a prompt (:class:`~codeward.engines.registry.served_content.DirectivePrompts`)."""

    def __init__(self, settings: RegistrySettings | None = None) -> None:
        self.settings = settings
        self._made: DirectivePrompts | None = None

    def _content(self) -> DirectivePrompts:
        if self._made is None:
            # Deferred: the registry's modules come with the first prompt a client lists or asks for.
            from codeward.engines.registry.served_content import DirectivePrompts

            self._made = DirectivePrompts(self.settings)
        return self._made

    def list_prompts(self, workspace: Workspace) -> Sequence[PromptInfo]:
        return self._content().list_prompts(workspace)

    def get_prompt(self, name: str, arguments: dict[str, str], workspace: Workspace
                   ) -> Result[list[PromptMessageData]]:
        return self._content().get_prompt(name, arguments, workspace)

    def complete(self, prompt: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        return self._content().complete(prompt, argument, prefix, workspace)


class RegistryKnowledge:
    """Each knowledge item is a resource (:class:`~codeward.engines.registry.served_content.KnowledgeResources`)."""

    def __init__(self, settings: RegistrySettings | None = None) -> None:
        self.settings = settings
        self._made: KnowledgeResources | None = None

    def _content(self) -> KnowledgeResources:
        if self._made is None:
            # Deferred: the registry's modules come with the first resource a client lists or reads.
            from codeward.engines.registry.served_content import KnowledgeResources

            self._made = KnowledgeResources(self.settings)
        return self._made

    def list_resources(self, workspace: Workspace) -> Sequence[ResourceInfo]:
        return self._content().list_resources(workspace)

    def list_templates(self, workspace: Workspace) -> Sequence[ResourceTemplateInfo]:
        return self._content().list_templates(workspace)

    def owns(self, uri: str) -> bool:
        return uri.startswith(KNOWLEDGE_SCHEME)

    def read(self, uri: str, workspace: Workspace) -> Result[ResourceData]:
        return self._content().read(uri, workspace)

    def complete(self, uri_template: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        return self._content().complete(uri_template, argument, prefix, workspace)


def registry_providers(settings: RegistrySettings | None = None) -> tuple[RegistryPrompts, RegistryKnowledge]:
    """The prompt and resource providers to hand to :class:`codeward.serving.server.CodewardServer`."""
    return RegistryPrompts(settings), RegistryKnowledge(settings)
