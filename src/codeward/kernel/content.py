"""Content blocks a tool may return besides plain text (images, audio, embedded resources).

These are codeward's own types so that tools never import MCP; the server maps them to the
protocol's content blocks, other surfaces (CLI, agent) render them as text descriptions.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str


@dataclass(frozen=True, slots=True)
class BinaryBlock:
    """An image or audio clip: ``kind`` is ``"image"`` or ``"audio"``."""

    kind: str
    data: bytes
    mime_type: str

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True, slots=True)
class ResourceBlock:
    """An embedded resource: text or bytes under a URI."""

    uri: str
    mime_type: str = "text/plain"
    text: str | None = None
    blob: bytes | None = None


Block = TextBlock | BinaryBlock | ResourceBlock


@dataclass(frozen=True, slots=True)
class RichContent:
    """A tool result made of several blocks, in order."""

    blocks: list[Block] = field(default_factory=list)

    def render(self) -> str:
        parts: list[str] = []
        for block in self.blocks:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, BinaryBlock):
                parts.append(f"[{block.kind}: {block.mime_type}, {len(block.data)} bytes]")
            elif block.text is not None:
                parts.append(f"[resource {block.uri}]\n{block.text}")
            else:
                parts.append(f"[resource {block.uri}: {block.mime_type}, {len(block.blob or b'')} bytes]")
        return "\n".join(parts)


LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A code point UTF-8 cannot carry: how bytes that were not UTF-8 read (surrogate escapes)."""


def displayable(text: str) -> str:
    """``text`` safe to send as UTF-8 (JSON, a terminal): lone surrogates become U+FFFD.

    Bytes that are not UTF-8 are decoded as lone surrogates so that writes give them back
    unchanged; a JSON message carrying one is invalid and the client drops it whole.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return LONE_SURROGATE.sub("\ufffd", text)
    return text
