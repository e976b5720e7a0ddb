"""Resources and prompts as codeward types, so their sources (files, the registry) stay MCP-free.

The server asks each registered provider for its items and maps them to the protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from codeward.kernel.content import Block
from codeward.kernel.result import Result
from codeward.kernel.workspace import Workspace

if TYPE_CHECKING:
    from codeward.kernel.client_link import ClientLink


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    name: str
    description: str = ""
    mime_type: str = "text/plain"
    size: int | None = None


@dataclass(frozen=True)
class ResourceTemplateInfo:
    uri_template: str
    name: str
    description: str = ""
    mime_type: str | None = None


@dataclass(frozen=True)
class ResourceData:
    uri: str
    mime_type: str
    text: str | None = None
    blob: bytes | None = None


class ResourceProvider(Protocol):
    """A source of resources: lists them, reads one, and completes template arguments."""

    def list_resources(self, workspace: Workspace) -> Sequence[ResourceInfo]: ...

    def list_templates(self, workspace: Workspace) -> Sequence[ResourceTemplateInfo]: ...

    def owns(self, uri: str) -> bool: ...

    def read(self, uri: str, workspace: Workspace) -> Result[ResourceData]: ...

    def complete(self, uri_template: str, argument: str, prefix: str, workspace: Workspace) -> list[str]: ...


@dataclass(frozen=True)
class PromptArgumentInfo:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class PromptInfo:
    name: str
    description: str = ""
    arguments: list[PromptArgumentInfo] = field(default_factory=list)


@dataclass(frozen=True)
class PromptMessageData:
    role: str
    content: Block


class PromptProvider(Protocol):
    """A source of prompts (reusable instructions) a client can list and render."""

    def list_prompts(self, workspace: Workspace) -> Sequence[PromptInfo]: ...

    def get_prompt(self, name: str, arguments: dict[str, str], workspace: Workspace) -> Result[list[PromptMessageData]]:
        ...

    def complete(self, prompt: str, argument: str, prefix: str, workspace: Workspace) -> list[str]: ...


class RelayedProvider(Protocol):
    """Resources, templates, prompts and completions another MCP server serves, passed on as its JSON
    (a gateway's upstreams, :class:`codeward.gateway.content.UpstreamContent`). Reads, prompts and
    completions run for the client behind ``link``: what the other server asks meanwhile goes there."""

    def offers(self, feature: str) -> bool: ...

    async def list_resources(self) -> list[dict[str, Any]]: ...

    async def list_templates(self) -> list[dict[str, Any]]: ...

    def owns_uri(self, uri: str) -> bool: ...

    async def read_resource(self, uri: str, link: ClientLink | None) -> dict[str, Any]: ...

    async def watch(self, uri: str) -> bool: ...

    async def unwatch(self, uri: str) -> bool: ...

    async def list_prompts(self, reserved: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]: ...

    def owns_prompt(self, name: str) -> bool: ...

    async def get_prompt(self, name: str, arguments: Mapping[str, Any] | None,
                         link: ClientLink | None) -> dict[str, Any]: ...

    async def complete(self, ref: Mapping[str, Any], params: Mapping[str, Any],
                       link: ClientLink | None) -> dict[str, Any] | None: ...

    async def set_level(self, level: str) -> None: ...
