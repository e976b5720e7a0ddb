"""Tool surfaces: what a server (or the agent) offers as tools, independent of where they live.

The catalog's own tools, the gateway's upstream tools and the registry's meta-tools are each
a :class:`ToolSurface`; a :class:`CompositeSurface` serves several as one; resource reads and prompt
gets are a surface too (:class:`ContentSurface`), so they pass the same chain as tool calls. The MCP server,
the agent and the CLI only ever talk to a surface.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio.to_thread

from codeward.kernel.catalog import Catalog, ToolSpec
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorInfo, ErrorKind

if TYPE_CHECKING:
    from codeward.kernel.providers import PromptProvider, ResourceProvider


@dataclass(frozen=True)
class ToolOrigin:
    """Which tool a listed name really is: where it comes from, its own name there, its definition.

    Approval rules bind to this, never to the exposed name alone: a tool that takes over an
    exposed name (after the one that held it was dropped or withheld) is another identity and
    does not inherit the first one's auto-approval; a redefined tool has another ``digest``.
    """

    server: str
    """``codeward`` for native tools, else the gateway alias of the upstream server."""
    tool: str
    """The tool's name on that server (before any alias or fix-up)."""
    digest: str
    """SHA-256 of the definition as served (name, description, schemas, annotations)."""
    native: bool = False


def definition_digest(name: str, description: str, input_schema: Mapping[str, Any],
                      output_schema: Mapping[str, Any] | None, annotations: Mapping[str, Any] | None) -> str:
    """The digest of a tool definition, over what a model reads of it (MCP wire field names)."""
    blob = json.dumps({"name": name, "description": description, "inputSchema": input_schema,
                       "outputSchema": output_schema, "annotations": annotations},
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ToolInfo:
    """A tool as clients see it: name, description, schemas and hints, and what it really is."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, bool] | None = None
    title: str | None = None
    source: str = "codeward"
    ask_always: bool = False
    """Every call asks a person, whatever the policy auto-approves (codeward's own tools only)."""
    origin: ToolOrigin | None = None
    wire: Mapping[str, Any] | None = field(default=None, repr=False)
    """The definition exactly as another MCP server published it (a gateway's upstream, in its wire
    shape): listed as it is, under :attr:`name`. None for codeward's own tools."""

    @property
    def read_only(self) -> bool:
        return bool(self.annotations and self.annotations.get("readOnlyHint"))

    @classmethod
    def from_spec(cls, spec: ToolSpec) -> ToolInfo:
        annotations = spec.annotations.to_mcp()
        input_schema, output_schema = spec.input_schema, spec.output_schema
        digest = definition_digest(spec.name, spec.description, input_schema, output_schema, annotations)
        return cls(
            name=spec.name,
            description=spec.description,
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=annotations,
            title=spec.title,
            ask_always=spec.ask_always,
            origin=ToolOrigin("codeward", spec.name, digest, native=True),
        )


@runtime_checkable
class ToolSurface(Protocol):
    """Something that lists tools and calls them by name."""

    def tool_infos(self) -> Sequence[ToolInfo]: ...

    def has(self, name: str) -> bool: ...

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome: ...


class CatalogSurface:
    """The native tools of a :class:`Catalog`."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._infos = [ToolInfo.from_spec(spec) for spec in catalog]

    def tool_infos(self) -> Sequence[ToolInfo]:
        return self._infos

    def has(self, name: str) -> bool:
        return name in self.catalog

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        return await self.catalog.acall(name, arguments, ctx)


class CompositeSurface:
    """Several surfaces served as one; the first that has a name answers for it."""

    def __init__(self, surfaces: Sequence[ToolSurface]) -> None:
        self.surfaces = list(surfaces)

    def tool_infos(self) -> Sequence[ToolInfo]:
        seen: set[str] = set()
        infos: list[ToolInfo] = []
        for surface in self.surfaces:
            for info in surface.tool_infos():
                if info.name not in seen:
                    seen.add(info.name)
                    infos.append(info)
        return infos

    def has(self, name: str) -> bool:
        return any(surface.has(name) for surface in self.surfaces)

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        for surface in self.surfaces:
            if surface.has(name):
                return await surface.call(name, arguments, ctx)
        return unknown_tool(name, [info.name for info in self.tool_infos()])


def unknown_tool(name: str, known: Sequence[str]) -> ToolOutcome:
    """The outcome for a name no surface serves, with the closest names as a hint."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
    hint = f"Did you mean {', '.join(close)}?" if close else "List the available tools with tools/list."
    error = ErrorInfo(ErrorKind.NOT_FOUND, f"unknown tool {name!r}", hint)
    return ToolOutcome(name=name, text=error.render(), is_error=True, errors=[error])


READ_RESOURCE = "resources/read"
"""The chain's name for reading one resource (arguments: ``uri``): never a tool's name (tool names have no
``/``), so the chain's middleware — the audit, the call figures, the control plane — see resource
reads as calls of their own."""
GET_PROMPT = "prompts/get"
"""The chain's name for rendering one prompt (arguments: ``name``, ``arguments``)."""
CONTENT_CALLS = (READ_RESOURCE, GET_PROMPT)
UNKNOWN_CONTENT = "unknown-content"
"""The error source of a read or prompt get naming nothing a provider serves."""


class ContentSurface:
    """Resources and prompts as a surface of the chain: two calls (:data:`READ_RESOURCE`,
    :data:`GET_PROMPT`) answered by the providers, never listed as tools.

    A server reads a resource or renders a prompt through the same chain as a tool call, so what
    every call passes (observed, recorded, audited) a read passes too; the approval and meta mode
    wrap only the tools and let these by. The data goes back in :attr:`ToolOutcome.served`.
    """

    def __init__(self, resources: Sequence[ResourceProvider] = (), prompts: Sequence[PromptProvider] = ()) -> None:
        self.resources = tuple(resources)
        self.prompts = tuple(prompts)

    def tool_infos(self) -> Sequence[ToolInfo]:
        return ()

    def has(self, name: str) -> bool:
        return name in CONTENT_CALLS

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        started = time.perf_counter()
        given = dict(arguments or {})
        if name == READ_RESOURCE:
            outcome = await anyio.to_thread.run_sync(self._read, str(given.get("uri", "")), ctx)
        else:
            prompt_arguments = given.get("arguments") or {}
            outcome = await anyio.to_thread.run_sync(self._prompt, str(given.get("name", "")),
                                                     {str(k): str(v) for k, v in dict(prompt_arguments).items()}, ctx)
        outcome.seconds = time.perf_counter() - started
        return outcome

    def _read(self, uri: str, ctx: ToolContext) -> ToolOutcome:
        for provider in self.resources:
            if provider.owns(uri):
                read = provider.read(uri, ctx.workspace)
                if not read.ok:
                    return _failed(READ_RESOURCE, read.errors)
                return ToolOutcome(READ_RESOURCE, text=read.data.text or "", is_error=False, served=read.data)
        return _failed(READ_RESOURCE, [ErrorInfo(ErrorKind.NOT_FOUND, f"unknown resource {uri!r}; list resources "
                                                 "to see them", source=UNKNOWN_CONTENT)])

    def _prompt(self, name: str, arguments: dict[str, str], ctx: ToolContext) -> ToolOutcome:
        for provider in self.prompts:
            if any(prompt.name == name for prompt in provider.list_prompts(ctx.workspace)):
                rendered = provider.get_prompt(name, arguments, ctx.workspace)
                if not rendered.ok:
                    return _failed(GET_PROMPT, rendered.errors)
                messages = tuple(rendered.data)
                return ToolOutcome(GET_PROMPT, text=f"{len(messages)} message(s)", is_error=False, served=messages)
        return _failed(GET_PROMPT, [ErrorInfo(ErrorKind.NOT_FOUND, f"unknown prompt {name!r}; list prompts to see them",
                                              source=UNKNOWN_CONTENT)])


def content_error(outcome: ToolOutcome) -> str:
    """What a client is told of a failed read or prompt get: an unknown name plainly (``unknown resource
    '...'; list resources to see them``), a provider's refusal as its errors render."""
    if outcome.errors and outcome.errors[0].source == UNKNOWN_CONTENT:
        return outcome.errors[0].message
    return outcome.text


def _failed(name: str, errors: Sequence[ErrorInfo]) -> ToolOutcome:
    return ToolOutcome(name, text="\n".join(error.render() for error in errors), is_error=True, errors=list(errors))
