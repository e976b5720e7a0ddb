"""Directives as MCP prompts and knowledge items as MCP resources (``registry://knowledge/<name>``): the
providers' work, imported with the first prompt or resource a client asks for
(:mod:`codeward.engines.registry.providers` is what a server makes at start).

Both providers are MCP-free (see :mod:`codeward.kernel.providers`); the server maps them to the
protocol. They read through the same index as the meta-tools, so they see both spaces,
project first, and an edited file shows up at the next list.
"""

from __future__ import annotations

from collections.abc import Sequence

from codeward.config.registry import RegistrySettings
from codeward.engines.registry.documents import fill_placeholders, read_document
from codeward.engines.registry.items import Item, Kind
from codeward.engines.registry.service import Registry
from codeward.engines.registry.signing import split_signature
from codeward.engines.registry.uris import KNOWLEDGE_SCHEME, KNOWLEDGE_TEMPLATE
from codeward.kernel.content import TextBlock
from codeward.kernel.context import Services
from codeward.kernel.providers import (
    PromptArgumentInfo,
    PromptInfo,
    PromptMessageData,
    ResourceData,
    ResourceInfo,
    ResourceTemplateInfo,
)
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import Workspace


def _open_registry(workspace: Workspace, settings: RegistrySettings | None) -> Registry:
    return Registry(workspace, settings or Services().get(RegistrySettings))


def _visible(registry: Registry, kind: Kind) -> list[Item]:
    """Items of a kind as names resolve: a project item hides a user item of the same name."""
    seen: set[str] = set()
    items: list[Item] = []
    with registry.index() as index:
        for item in index.items(kind):
            if item.name not in seen:
                seen.add(item.name)
                items.append(item)
    return items


class DirectivePrompts:
    """Each valid directive is a prompt; its front matter ``arguments`` are the prompt's arguments."""

    def __init__(self, settings: RegistrySettings | None = None) -> None:
        self.settings = settings

    def _registry(self, workspace: Workspace) -> Registry:
        return _open_registry(workspace, self.settings)

    def list_prompts(self, workspace: Workspace) -> Sequence[PromptInfo]:

        prompts = []
        for item in _visible(self._registry(workspace), Kind.DIRECTIVE):
            if item.problems:
                continue
            arguments = [PromptArgumentInfo(str(a.get("name")), str(a.get("description", "")),
                                            bool(a.get("required", False)))
                         for a in item.meta.get("arguments") or []]
            prompts.append(PromptInfo(item.name, item.description, arguments))
        return prompts

    def get_prompt(self, name: str, arguments: dict[str, str], workspace: Workspace
                   ) -> Result[list[PromptMessageData]]:

        registry = self._registry(workspace)
        found = registry.find(name, Kind.DIRECTIVE)
        if not found.ok or found.data is None:
            return found.cast([])
        read = registry.fresh(found.data)
        if not read.ok or read.data is None:
            return read.cast([])
        item, data = read.data
        declared = item.meta.get("arguments") or []
        missing = [str(a.get("name")) for a in declared if a.get("required") and not arguments.get(str(a.get("name")))]
        if missing:
            return Result.fail(ErrorKind.INVALID_INPUT, f"prompt {name!r} needs the argument(s) {', '.join(missing)}",
                               "Pass them as prompt arguments.", data=[])
        body = read_document(data.decode("utf-8", "replace")).body
        known = {str(a.get("name")) for a in declared}
        filled = fill_placeholders(body, {k: v for k, v in arguments.items() if k in known})
        return Result.success([PromptMessageData("user", TextBlock(filled))])

    def complete(self, prompt: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        return []


class KnowledgeResources:
    """Each knowledge item is a Markdown resource; a template lets clients complete names."""

    def __init__(self, settings: RegistrySettings | None = None) -> None:
        self.settings = settings

    def _registry(self, workspace: Workspace) -> Registry:
        return _open_registry(workspace, self.settings)

    def list_resources(self, workspace: Workspace) -> Sequence[ResourceInfo]:

        return [ResourceInfo(KNOWLEDGE_SCHEME + item.name, item.name, item.description, "text/markdown")
                for item in _visible(self._registry(workspace), Kind.KNOWLEDGE)]

    def list_templates(self, workspace: Workspace) -> Sequence[ResourceTemplateInfo]:

        return [ResourceTemplateInfo(KNOWLEDGE_TEMPLATE, "knowledge", "A knowledge item of the registry by name",
                                     "text/markdown")]

    def owns(self, uri: str) -> bool:
        return uri.startswith(KNOWLEDGE_SCHEME)

    def read(self, uri: str, workspace: Workspace) -> Result[ResourceData]:

        name = uri.removeprefix(KNOWLEDGE_SCHEME)
        empty = ResourceData(uri, "text/markdown", text="")
        registry = self._registry(workspace)
        found = registry.find(name, Kind.KNOWLEDGE)
        if not found.ok or found.data is None:
            return found.cast(empty)
        read = registry.fresh(found.data)
        if not read.ok or read.data is None:
            return read.cast(empty)
        text = split_signature(read.data[1], markdown=True)[1].decode("utf-8", "replace")
        return Result.success(ResourceData(uri, "text/markdown", text=text))

    def complete(self, uri_template: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        if uri_template != KNOWLEDGE_TEMPLATE or argument != "name":
            return []

        return [i.name for i in _visible(self._registry(workspace), Kind.KNOWLEDGE) if i.name.startswith(prefix)]


