"""The MCP client behind one request, for a surface that passes another server's questions on.

A relaying surface (the gateway) answers for another MCP server, which believes the gateway is
its client: what that server asks of "its client" — a sampled message, a form or a URL to
visit, the roots — and what it reports — progress, log messages — belongs to the client that
made the call. The MCP server hands every call a :class:`ClientLink` (``ToolContext.link``);
the relaying surface sends through it. Everything crosses as plain JSON in the protocol's wire
shapes, so nothing here imports MCP.

The two protocol eras ask differently:

* **handshake era** — :meth:`ClientLink.request` sends a server-to-client request on the
  call's own stream and waits for the answer;
* **2026-07-28** — there is no back-channel: the relaying surface raises :class:`InputRequired`
  with its questions, the server answers the call with an ``input_required`` result, and the
  client calls again with the answers (:attr:`ClientLink.answers`) and the state the result
  carried (:attr:`ClientLink.resume`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ClientLink(Protocol):
    """One request's way back to its client (see the module docstring)."""

    @property
    def modern(self) -> bool:
        """The client speaks 2026-07-28: questions are asked with :class:`InputRequired`, not :meth:`request`."""
        ...

    @property
    def client(self) -> str | None:
        """Who is calling (``codeward.serving.server.client_of``): ``""`` over stdio, the MCP session over
        handshake-era HTTP, ``None`` where the transport names no client."""
        ...

    @property
    def capabilities(self) -> Mapping[str, Any]:
        """The capabilities the client declared, as JSON (``{"sampling": {...}, "roots": {}}``)."""
        ...

    @property
    def wants_progress(self) -> bool:
        """The client asked for progress on this call (a progress token is passed on only then)."""
        ...

    @property
    def answers(self) -> Mapping[str, Any]:
        """2026-07-28: the client's answers to the questions of earlier rounds of this call, by key."""
        ...

    @property
    def resume(self) -> str | None:
        """2026-07-28: what the relaying surface put in :attr:`InputRequired.resume` last round."""
        ...

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Handshake era: ask the client (``sampling/createMessage``, ``elicitation/create``, ``roots/list``)
        on this call's stream and return its result; the client's refusal raises its JSON-RPC error."""
        ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Report progress on this call (nothing when the client asked for none)."""
        ...

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        """Send a log message about this call (the client's log level decides whether it goes)."""
        ...


class InputRequired(BaseException):
    """A call needs answers from a 2026-07-28 client: the server answers it with an input round.

    ``requests`` maps a key to a question in its wire shape (``{"method": "elicitation/create",
    "params": {...}}``, or the protocol's own request models); the client calls again with an
    answer for each key. ``resume`` is handed back on that call as :attr:`ClientLink.resume`.
    A BaseException on purpose: the "a broken prompt means no" handlers of the approval paths
    must let it through rather than turn it into a denial.
    """

    def __init__(self, requests: Mapping[str, Any], resume: str | None = None) -> None:
        super().__init__(", ".join(requests))
        self.requests = dict(requests)
        self.resume = resume
