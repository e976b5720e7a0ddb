"""A finished call as every surface needs it: text, error flag, structure, timing.

Apart from the catalog so that the steps around a call (:mod:`codeward.kernel.steps`) and the
chain (:mod:`codeward.kernel.chain`) can name it without importing the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codeward.kernel.content import RichContent
from codeward.kernel.result import ErrorInfo

if TYPE_CHECKING:
    from codeward.kernel.providers import PromptMessageData, ResourceData


@dataclass
class ToolOutcome:
    """A finished call as every surface needs it: text, error flag, structure, timing."""

    name: str
    text: str
    is_error: bool
    errors: list[ErrorInfo] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    rich: RichContent | None = None
    truncated: bool = False
    seconds: float = 0.0
    """How long the call ran (what latency figures count)."""
    waited: float = 0.0
    """How long it waited for a person to approve it before running (not part of ``seconds``)."""
    checkpoint: int | None = None
    """The checkpoint recording what the call changed (``undo`` reverts it); None if nothing changed."""
    wire: dict[str, Any] | None = None
    """The result exactly as another MCP server sent it (a gateway's upstream), served to MCP clients as
    it is; ``text`` and the rest describe it for every other surface. None for codeward's own results."""
    wire_error: dict[str, Any] | None = None
    """A JSON-RPC error another MCP server answered with that an MCP client must get as that error (URL
    elicitation required: the client acts on it), as ``{"code", "message", "data"}``."""
    served: ResourceData | tuple[PromptMessageData, ...] | None = None
    """What a resource read or a prompt get returned (:class:`~codeward.kernel.surface.ContentSurface`),
    for the server to put on the wire."""
