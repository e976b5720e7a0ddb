"""The ``ClientSession`` callbacks of one upstream: each request relayed, each failure contained.

What an upstream asks during a call (sampling, elicitation, roots) goes to the client of the call
it belongs to (:mod:`codeward.gateway.relay`); its log lines to that call, or, when no call runs,
to the gateway's clients at large. Whatever goes wrong in a callback — no call running, a client
that did not declare the capability or cannot answer, a refusal, an answer that breaks the
protocol, a bug — becomes that request's JSON-RPC error, which the upstream sees and the call
ends with; the gateway and its other calls never notice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from codeward.gateway.relay import QUESTIONS, RelayBoard, RelayRefused, Unattributable
from codeward.kernel.client_link import ClientLink

logger = logging.getLogger("codeward.gateway")

OutOfCallLog = Callable[[types.LoggingMessageNotificationParams], Awaitable[None]]
"""Where an upstream's log messages go when no call is running (the gateway's clients at large)."""


class UpstreamCallbacks:
    """The ``ClientSession`` callbacks of one upstream: each request relayed, each failure contained."""

    def __init__(self, alias: str, board: RelayBoard, *, sampling: bool, out_of_call_log: OutOfCallLog) -> None:
        self.alias = alias
        self.board = board
        self.sampling_allowed = sampling
        self._out_of_call_log = out_of_call_log

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        if not self.sampling_allowed:
            return _refusal(f"sampling is turned off for server {self.alias!r} (sampling = false in its "
                            "[mcp.servers] table), so the gateway did not pass the request on")
        result: type[BaseModel] = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self._relay("sampling/createMessage", params, result)

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        answer = await self._relay("elicitation/create", params, types.ElicitResult)
        if isinstance(answer, types.ElicitResult) and answer.action == "accept" and \
                isinstance(params, types.ElicitRequestFormParams):
            return answer.model_copy(update={"content": with_defaults(answer.content, params.requested_schema)})
        return answer

    async def roots(self, context: Any) -> Any:
        return await self._relay("roots/list", None, types.ListRootsResult)

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log message: to the call it belongs to, else (no call running) to the gateway's clients at large."""
        try:
            named = params.model_copy(update={"logger": _logger_name(self.alias, params.logger)})
            try:
                relay = self.board.owner()
            except Unattributable:  # one of several clients' calls: told to none rather than to the wrong one
                logger.debug("gateway: a log line of server %r could be any of several clients' calls; dropped",
                             self.alias)
                return
            if relay is not None:
                await relay.log(str(named.level), named.data, named.logger)
            else:
                await self._out_of_call_log(named)
        except Exception as exc:  # a log message never ends anything
            logger.debug("gateway: dropped a log message of server %r: %s", self.alias, exc)

    async def _relay(self, method: str, params: BaseModel | None, result: type[BaseModel]) -> Any:
        """Ask the client of the call this request belongs to; any failure is this request's error."""
        what = QUESTIONS[method]
        try:
            relay = self.board.owner()
            if relay is None:
                raise RelayRefused(f"{what} requests are passed to the client of a call, and no call to server "
                                   f"{self.alias!r} is running now")
            missing = lacking(relay.link, method, params)
            if missing:
                raise RelayRefused(f"the client that called {relay.label} does not support {missing}, so the "
                                   "request cannot be passed on")
            wire = params.model_dump(by_alias=True, mode="json", exclude_none=True) if params is not None else {}
            answer = await relay.ask(method, wire)
            return result.model_validate(answer, by_name=False)
        except Unattributable:
            return _refusal(f"calls of several clients are running on server {self.alias!r} and its transport "
                            f"does not say which one this {what} request belongs to, so it was not passed on")
        except RelayRefused as refused:
            return _refusal(str(refused))
        except MCPError as exc:  # the client's own refusal, passed on as it is
            return exc.error
        except ValidationError as exc:
            logger.warning("gateway: the client answered %s of server %r with an invalid result: %s",
                           method, self.alias, exc)
            return types.ErrorData(code=types.INTERNAL_ERROR,
                                   message=f"codeward gateway: the client's answer to {method} is not a valid "
                                   f"{result.__name__}")
        except anyio.get_cancelled_exc_class():
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # an upstream's request must never end the gateway
            logger.warning("gateway: passing %s of server %r to the client failed: %s: %s", method, self.alias,
                           type(exc).__name__, exc)
            return types.ErrorData(code=types.INTERNAL_ERROR,
                                   message=f"codeward gateway: passing {method} to the client failed "
                                   f"({type(exc).__name__}: {exc})")


def lacking(link: ClientLink | None, method: str, params: BaseModel | None) -> str | None:
    """The capability the client lacks for this question ("" or None when it has it)."""
    if link is None:
        return QUESTIONS[method]
    declared = link.capabilities.get(QUESTIONS[method])
    if not isinstance(declared, Mapping):
        return QUESTIONS[method]
    if method == "elicitation/create":
        mode = getattr(params, "mode", None) or "form"
        if mode == "url" and "url" not in declared:
            return "URL elicitation"
        if mode == "form" and declared and "form" not in declared:  # {} means form (protocol 2025-06-18)
            return "form elicitation"
    if method == "sampling/createMessage" and getattr(params, "tools", None) and "tools" not in declared:
        return "sampling with tools"
    return None


def with_defaults(content: Mapping[str, Any] | None, schema: Mapping[str, Any]) -> dict[str, Any]:
    """Elicited form content with the schema's ``default`` filled in for omitted fields (SEP-1034)."""
    filled = dict(content or {})
    properties = schema.get("properties", {})
    if isinstance(properties, Mapping):
        for name, spec in properties.items():
            if name not in filled and isinstance(spec, Mapping) and "default" in spec:
                filled[name] = spec["default"]
    return filled


def _refusal(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=f"codeward gateway: {message}")


def _logger_name(alias: str, name: str | None) -> str:
    """An upstream's logger, namespaced like its tools: ``alias__logger`` (``alias`` when it names none)."""
    return f"{alias}__{name}" if name else alias
