"""The MCP conformance suite's fixture, assembled from codeward's own server surface.

The suite expects tools, resources and prompts with exact names (``test_*``, ``test://``);
they are registered here the way any codeward tool or provider is — ``@tool`` functions in a
Catalog, a ResourceProvider, a PromptProvider — and served by ``CodewardServer`` over
streamable HTTP. Run: ``python fixture_server.py PORT ROOT``.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.from_thread
from pydantic import BaseModel

from codeward.kernel.catalog import Catalog, tool
from codeward.kernel.content import BinaryBlock, ResourceBlock, RichContent, TextBlock
from codeward.kernel.context import ToolContext
from codeward.kernel.providers import (
    PromptArgumentInfo,
    PromptInfo,
    PromptMessageData,
    ResourceData,
    ResourceInfo,
    ResourceTemplateInfo,
)
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.surface import CatalogSurface
from codeward.kernel.workspace import Workspace
from codeward.serving.server import CodewardServer
from codeward.tools import default_catalog

# A 1x1 red PNG and a tiny silent WAV.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = (b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little") + (1).to_bytes(2, "little")
       + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little") + (8000).to_bytes(4, "little")
       + (1).to_bytes(2, "little") + (8).to_bytes(2, "little") + b"data" + (0).to_bytes(4, "little"))


@tool(toolset="conformance", read_only=True)
def test_simple_text(ctx: ToolContext) -> Result[str]:
    """A simple text response."""
    return Result.success("This is a simple text response for testing.")


@tool(toolset="conformance", read_only=True)
def test_image_content(ctx: ToolContext) -> Result[RichContent]:
    """An image."""
    return Result.success(RichContent([BinaryBlock("image", PNG, "image/png")]))


@tool(toolset="conformance", read_only=True)
def test_audio_content(ctx: ToolContext) -> Result[RichContent]:
    """An audio clip."""
    return Result.success(RichContent([BinaryBlock("audio", WAV, "audio/wav")]))


@tool(toolset="conformance", read_only=True)
def test_embedded_resource(ctx: ToolContext) -> Result[RichContent]:
    """An embedded resource."""
    block = ResourceBlock("test://embedded-resource", "text/plain", text="This is an embedded resource content.")
    return Result.success(RichContent([block]))


@tool(toolset="conformance", read_only=True)
def test_multiple_content_types(ctx: ToolContext) -> Result[RichContent]:
    """Text, image and resource together."""
    return Result.success(RichContent([
        TextBlock("Multiple content types test:"),
        BinaryBlock("image", PNG, "image/png"),
        ResourceBlock("test://mixed-content-resource", "application/json", text='{"test":"data","value":123}'),
    ]))


@tool(toolset="conformance", read_only=True)
def test_tool_with_logging(ctx: ToolContext) -> Result[str]:
    """Three log notifications while running."""
    ctx.log("info", "Tool execution started")
    time.sleep(0.05)
    ctx.log("info", "Tool processing data")
    time.sleep(0.05)
    ctx.log("info", "Tool execution completed")
    return Result.success("Tool with logging executed successfully")


@tool(toolset="conformance", read_only=True)
def test_tool_with_progress(ctx: ToolContext) -> Result[str]:
    """Progress 0, 50, 100 of 100."""
    for step in (0, 50, 100):
        ctx.progress(step, 100)
        if step < 100:
            time.sleep(0.05)
    return Result.success("Tool with progress executed successfully")


@tool(toolset="conformance", read_only=True)
def test_error_handling(ctx: ToolContext) -> Result[str]:
    """Always fails."""
    return Result.fail(ErrorKind.INTERNAL, "This tool intentionally returns an error for testing", data="")


@tool(toolset="conformance", read_only=True)
def test_sampling(ctx: ToolContext, prompt: str) -> Result[str]:
    """Ask the client's model."""
    assert ctx.peer is not None
    return Result.success(f"LLM response: {ctx.peer.sample(prompt, max_tokens=100)}")


def _elicit(ctx: ToolContext, message: str, schema: dict[str, Any], prefix: str) -> Result[str]:
    assert ctx.peer is not None
    answer = ctx.peer.elicit(message, schema)
    return Result.success(f"{prefix}action={answer['action']}, content={json.dumps(answer['content'])}")


@tool(toolset="conformance", read_only=True)
def test_elicitation(ctx: ToolContext, message: str) -> Result[str]:
    """Ask the user."""
    schema = {"type": "object", "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}}, "required": ["username", "email"]}
    return _elicit(ctx, message, schema, "User response: ")


@tool(toolset="conformance", read_only=True)
def test_elicitation_sep1034_defaults(ctx: ToolContext) -> Result[str]:
    """Elicitation with defaults for every primitive type."""
    schema = {"type": "object", "required": [], "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True}}}
    return _elicit(ctx, "Please review and update the form fields with defaults", schema, "Elicitation completed: ")


@tool(toolset="conformance", read_only=True)
def test_elicitation_sep1330_enums(ctx: ToolContext) -> Result[str]:
    """Elicitation with the five enum shapes."""
    schema = {"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                     {"const": "value2", "title": "Second Option"},
                                                     {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                             {"const": "value2", "title": "Second Choice"},
                                                             {"const": "value3", "title": "Third Choice"}]}}}}
    return _elicit(ctx, "Please select options", schema, "Elicitation completed: ")


@tool(toolset="conformance", read_only=True)
def test_reconnection(ctx: ToolContext) -> Result[str]:
    """Close the SSE stream mid-call; the client resumes and gets the result."""
    close = ctx.call.close_sse_stream
    time.sleep(0.05)
    if close is not None:
        anyio.from_thread.run(close)
    time.sleep(0.3)
    return Result.success("Reconnection test completed successfully")


class address(BaseModel):  # the suite expects the $defs key "address"
    street: str | None = None
    city: str | None = None


@tool(toolset="conformance", read_only=True, schema_dialect=True)
def json_schema_2020_12_tool(ctx: ToolContext, name: str | None = None, address: address | None = None) -> Result[str]:
    """Tool with JSON Schema 2020-12 features."""
    return Result.success(f"name={name}, address={address}")


class TestResources:
    """test:// resources: static text, static binary, a template and a watched one."""

    STATIC: ClassVar[dict[str, ResourceInfo]] = {
        "test://static-text": ResourceInfo("test://static-text", "Static Text Resource",
                                           "A static text resource for testing", "text/plain"),
        "test://static-binary": ResourceInfo("test://static-binary", "Static Binary Resource",
                                             "A static binary resource (image) for testing", "image/png"),
        "test://watched-resource": ResourceInfo("test://watched-resource", "Watched Resource",
                                                "A resource that can be subscribed to", "text/plain"),
    }

    def list_resources(self, workspace: Workspace) -> Sequence[ResourceInfo]:
        return list(self.STATIC.values())

    def list_templates(self, workspace: Workspace) -> Sequence[ResourceTemplateInfo]:
        return [ResourceTemplateInfo("test://template/{id}/data", "Resource Template",
                                     "A resource template with parameter substitution", "application/json")]

    def owns(self, uri: str) -> bool:
        return uri.startswith("test://")

    def read(self, uri: str, workspace: Workspace) -> Result[ResourceData]:
        if uri == "test://static-text":
            text = "This is the content of the static text resource."
            return Result.success(ResourceData(uri, "text/plain", text=text))
        if uri == "test://static-binary":
            return Result.success(ResourceData(uri, "image/png", blob=PNG))
        if uri == "test://watched-resource":
            return Result.success(ResourceData(uri, "text/plain", text="Watched resource content"))
        match = re.fullmatch(r"test://template/([^/]+)/data", uri)
        if match:
            body = json.dumps({"id": match[1], "templateTest": True, "data": f"Data for ID: {match[1]}"},
                              separators=(",", ":"))
            return Result.success(ResourceData(uri, "application/json", text=body))
        return Result.fail(ErrorKind.NOT_FOUND, f"no resource {uri}", data=ResourceData(uri, "text/plain"))

    def complete(self, uri_template: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        return [v for v in ("123", "456") if v.startswith(prefix)] if uri_template.startswith("test://") else []


class TestPrompts:
    PROMPTS: ClassVar[list[PromptInfo]] = [
        PromptInfo("test_simple_prompt", "A simple prompt without arguments"),
        PromptInfo("test_prompt_with_arguments", "A prompt with required arguments",
                   [PromptArgumentInfo("arg1", "First test argument", True),
                    PromptArgumentInfo("arg2", "Second test argument", True)]),
        PromptInfo("test_prompt_with_embedded_resource", "A prompt with an embedded resource",
                   [PromptArgumentInfo("resourceUri", "URI of the resource to embed", True)]),
        PromptInfo("test_prompt_with_image", "A prompt with an image"),
    ]

    def list_prompts(self, workspace: Workspace) -> Sequence[PromptInfo]:
        return self.PROMPTS

    def get_prompt(self, name: str, arguments: dict[str, str], workspace: Workspace) -> Result[list[PromptMessageData]]:
        if name == "test_simple_prompt":
            return Result.success([PromptMessageData("user", TextBlock("This is a simple prompt for testing."))])
        if name == "test_prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{arguments.get('arg1')}', arg2='{arguments.get('arg2')}'"
            return Result.success([PromptMessageData("user", TextBlock(text))])
        if name == "test_prompt_with_embedded_resource":
            uri = arguments.get("resourceUri", "test://example-resource")
            return Result.success([
                PromptMessageData("user", ResourceBlock(uri, "text/plain",
                                                        text="Embedded resource content for testing.")),
                PromptMessageData("user", TextBlock("Please process the embedded resource above.")),
            ])
        return Result.success([
            PromptMessageData("user", BinaryBlock("image", PNG, "image/png")),
            PromptMessageData("user", TextBlock("Please analyze the image above.")),
        ])

    def complete(self, prompt: str, argument: str, prefix: str, workspace: Workspace) -> list[str]:
        return [v for v in ("paris", "park", "party") if v.startswith(prefix)]


def build(root: Path) -> CodewardServer:
    fixture = Catalog.from_functions([
        test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
        test_multiple_content_types, test_tool_with_logging, test_tool_with_progress, test_error_handling,
        test_sampling, test_elicitation, test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums,
        test_reconnection, json_schema_2020_12_tool,
    ])
    catalog = default_catalog().merged(fixture)
    return CodewardServer(CatalogSurface(catalog), Workspace.create([root]), name="codeward-conformance",
                          resource_providers=[TestResources()], prompt_providers=[TestPrompts()])


def main() -> None:
    port, root = int(sys.argv[1]), Path(sys.argv[2])
    server = build(root)
    # Every answer a stream, as the SDK gives it: test_reconnection closes its call's SSE stream mid-call
    # (SEP-1699 polling). codeward's default, one JSON body for a call that asks for no stream, is
    # covered by tests/test_http_answers.py and the contract tests.
    anyio.run(lambda: server.run_http(host="127.0.0.1", port=port, json_response=False))


if __name__ == "__main__":
    main()

