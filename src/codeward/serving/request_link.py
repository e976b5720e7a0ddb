"""The server's side of :mod:`codeward.kernel.client_link`: one MCP request as a :class:`ClientLink`, and
the state a 2026-07-28 call carries from one input round to the next.

A 2026-07-28 client answers an ``input_required`` result by calling again with the answers to
*that* round only. A call may need several rounds — a person approves it, then the upstream it
runs asks a question of its own — so the ``requestState`` of each round carries every answer
given so far (and what the relaying surface asked to be handed back): on the next call the
approval still finds its answer instead of asking again. The state holds nothing the client
could not send itself (its own answers, an unguessable handle), so it is encoded, not sealed.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import is_version_at_least
from pydantic import BaseModel

logger = logging.getLogger("codeward.serving.server")

MODERN_ERA = "2026-07-28"
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_STATE_PREFIX = "cw1."

_QUESTIONS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}
"""The questions a server may ask its client mid-call: request model and result model."""


def as_json(value: Any) -> Any:
    """A protocol model (or anything else) as the JSON it is on the wire."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


@dataclass(frozen=True)
class RoundState:
    """What a 2026-07-28 call carries between its input rounds (see the module docstring)."""

    answers: dict[str, Any] = field(default_factory=dict)
    resume: str | None = None

    def encode(self) -> str:
        blob = json.dumps({"a": self.answers, "r": self.resume}, separators=(",", ":"), ensure_ascii=False)
        return _STATE_PREFIX + base64.urlsafe_b64encode(blob.encode("utf-8")).decode("ascii")

    @classmethod
    def decode(cls, state: str | None) -> RoundState:
        """The state a client sent back; one that is not codeward's (or is damaged) counts as none."""
        if not state or not state.startswith(_STATE_PREFIX):
            return cls()
        try:
            data = json.loads(base64.urlsafe_b64decode(state[len(_STATE_PREFIX):].encode("ascii")))
        except (ValueError, binascii.Error, UnicodeError):
            return cls()
        answers, resume = (data.get("a"), data.get("r")) if isinstance(data, dict) else (None, None)
        return cls(dict(answers) if isinstance(answers, dict) else {}, resume if isinstance(resume, str) else None)

    def joined(self, responses: Mapping[str, Any] | None) -> RoundState:
        """This state with the answers of the round just answered added."""
        return RoundState({**self.answers, **{key: as_json(value) for key, value in (responses or {}).items()}},
                          self.resume)


def input_round(requests: Mapping[str, Any], state: RoundState) -> dict[str, Any]:
    """The ``input_required`` result asking ``requests``, carrying ``state`` to the next call."""
    return {"resultType": "input_required", "inputRequests": {key: as_json(value) for key, value in requests.items()},
            "requestState": state.encode()}


class RequestLink:
    """One request's client, as the gateway needs it (:class:`codeward.kernel.client_link.ClientLink`)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], *, client: str | None, state: RoundState) -> None:
        self._ctx = ctx
        self.modern = is_version_at_least(ctx.protocol_version, MODERN_ERA)
        self.client = client
        self.answers: Mapping[str, Any] = state.answers
        self.wants_progress = ctx.meta is not None and ctx.meta.get("progress_token") is not None
        self.resume = state.resume

    @cached_property
    def capabilities(self) -> Mapping[str, Any]:
        """What the client declared (read only when a question is to be passed on)."""
        declared = self._ctx.session.client_capabilities
        return as_json(declared) if declared is not None else {}

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        kinds = _QUESTIONS.get(method)
        if kinds is None:
            raise ValueError(f"a server may not ask its client {method!r}")
        request_model, result_model = kinds
        if method == "sampling/createMessage" and params.get("tools"):  # an answer may then call tools
            result_model = types.CreateMessageResultWithTools
        request = request_model.model_validate({"method": method, "params": dict(params)}, by_name=False)
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        with warnings.catch_warnings():  # sampling and roots are deprecated in 2026-07-28, not here
            warnings.simplefilter("ignore")
            answer = await self._ctx.session.send_request(request, result_model, metadata=metadata)  # type: ignore[arg-type]
        return as_json(answer)  # type: ignore[no-any-return]

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        """A relayed log line, as its server sent it: the level the client set was passed to that server,
        which already applied it (a 2026-07-28 request's own opt-in is applied by the SDK)."""
        if level not in LOG_LEVELS:
            level = "info"
        # On the call's own stream when it has one; a call answered with one JSON body logs on the
        # session's stream (:mod:`codeward.serving.transport.http_answers`).
        related = self._ctx.request_id if self._ctx.session.can_send_request else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await self._ctx.session.send_log_message(level, data, logger=logger,  # type: ignore[arg-type]
                                                     related_request_id=related)
