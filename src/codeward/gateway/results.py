"""Upstream answers as codeward :class:`ToolOutcome` values, the shape every surface serves.

A result is kept exactly as the upstream sent it (:attr:`ToolOutcome.wire`), which is what MCP
clients get; for every other surface (the agent, the command line, the control plane) its
content blocks (text, images, audio, embedded resources, resource links) and structured content
are described as codeward's own. A tool-level failure (``isError``) keeps the upstream's own
words and carries no :class:`ErrorInfo` (the tool ran; its message is for the model). A result
longer than the output cap is served cut, as codeward's text, with the marker saying where the
whole is saved. Gateway-side failures (HTTP, JSON-RPC, timeouts, denied approval) carry one
``ErrorInfo`` whose ``source`` names the layer.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Any

import mcp_types as types

from codeward.gateway.errors import UpstreamError, UpstreamRpcError
from codeward.kernel.content import BinaryBlock, Block, ResourceBlock, RichContent, TextBlock
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorInfo
from codeward.kernel.steps import bound_output

PASSED_AS_ERRORS = frozenset({types.URL_ELICITATION_REQUIRED})
"""JSON-RPC error codes an MCP client acts on itself (URL elicitation required: it opens the URLs the
error names, then calls again): such an answer reaches MCP clients as that same error."""


def outcome_from_result(name: str, raw: dict[str, Any], result: types.CallToolResult, ctx: ToolContext,
                        started: float) -> ToolOutcome:
    """A finished upstream call (successful or ``isError``) as an outcome; ``raw`` is what the server sent."""
    blocks = [to_block(item) for item in result.content]
    rich: RichContent | None = None
    if all(isinstance(b, TextBlock) for b in blocks):
        text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
    else:
        rich = RichContent(blocks)
        text = rich.render()
    if not blocks and result.structured_content is not None:
        text = json.dumps(result.structured_content, indent=2, ensure_ascii=False)
    text, truncated = bound_output(text, ctx, name)
    if truncated:
        rich = None  # the cut text (with its marker saying where the whole is) is what gets served
    return ToolOutcome(
        name=name,
        text=text,
        is_error=bool(result.is_error),
        structured=result.structured_content if isinstance(result.structured_content, dict) else None,
        rich=rich,
        truncated=truncated,
        seconds=time.perf_counter() - started,
        wire=None if truncated else raw,
    )


def outcome_from_error(name: str, error: ErrorInfo, started: float) -> ToolOutcome:
    return ToolOutcome(name=name, text=error.render(), is_error=True, errors=[error],
                       seconds=time.perf_counter() - started)


def outcome_from_upstream_error(name: str, error: UpstreamError, started: float) -> ToolOutcome:
    """A failed upstream request as an outcome; an error the client must act on is kept for MCP clients."""
    outcome = outcome_from_error(name, error.info(), started)
    if isinstance(error, UpstreamRpcError) and error.code in PASSED_AS_ERRORS:
        outcome.wire_error = {"code": error.code, "message": error.rpc_message, "data": error.data}
    return outcome


def to_block(item: Any) -> Block:
    """One MCP content item as a codeward block (unknown kinds become a short text note)."""
    if isinstance(item, types.TextContent):
        return TextBlock(item.text)
    if isinstance(item, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(item, types.ImageContent) else "audio"
        return BinaryBlock(kind, _decode(item.data), item.mime_type)
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        uri = str(resource.uri)
        mime = resource.mime_type or "text/plain"
        if isinstance(resource, types.BlobResourceContents):
            return ResourceBlock(uri, mime, blob=_decode(resource.blob))
        return ResourceBlock(uri, mime, text=getattr(resource, "text", ""))
    if isinstance(item, types.ResourceLink):
        described = f": {item.description}" if item.description else ""
        return TextBlock(f"[resource link {item.uri} ({item.name}){described}]")
    return TextBlock(f"[{getattr(item, 'type', type(item).__name__)} content]")


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return data.encode("utf-8", "replace")
