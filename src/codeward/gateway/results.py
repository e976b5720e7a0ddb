"""Upstream answers as codeward :class:`ToolOutcome` values, the shape every surface serves.

A tool result keeps its content blocks (text, images, audio, embedded resources) and its
structured content; a tool-level failure (``isError``) keeps the upstream's own words and
carries no :class:`ErrorInfo` (the tool ran; its message is for the model). Gateway-side
failures (HTTP, JSON-RPC, timeouts, denied approval) carry one ``ErrorInfo`` whose ``source``
names the layer.
"""

from __future__ import annotations

import base64
import binascii
import time
from typing import Any

import mcp_types as types

from codeward.kernel.content import BinaryBlock, Block, ResourceBlock, RichContent, TextBlock
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorInfo
from codeward.kernel.steps import bound_output


def outcome_from_result(name: str, result: types.CallToolResult, ctx: ToolContext, started: float) -> ToolOutcome:
    """A finished upstream call (successful or ``isError``) as an outcome."""
    blocks = [to_block(item) for item in result.content]
    rich: RichContent | None = None
    if all(isinstance(b, TextBlock) for b in blocks):
        text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
    else:
        rich = RichContent(blocks)
        text = rich.render()
    if not blocks and result.structured_content is not None:
        import json

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
    )


def outcome_from_error(name: str, error: ErrorInfo, started: float) -> ToolOutcome:
    return ToolOutcome(name=name, text=error.render(), is_error=True, errors=[error],
                       seconds=time.perf_counter() - started)


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
