"""Finishing a call whose replica died: run it again here, send the client only what it has not seen.

A call is run again only when its tool says running it twice is harmless (``readOnlyHint`` or
``idempotentHint``); otherwise the client gets an error result saying the call stopped and was not
repeated. Progress the client already received (values up to the highest it saw) and as many log
messages as it already got are not sent twice; the answer is sent once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from mcp import Client
from mcp.server.lowlevel import Server
from mcp_types import CallToolResult, JSONRPCNotification, JSONRPCResponse, TextContent

from codeward.kernel.surface import ToolInfo
from codeward.serving.shared_state.backend import CallRecord, EventLog, StoredEvent

log = logging.getLogger(__name__)


class CallFinisher:
    """Runs a taken-over ``tools/call`` through this replica's own MCP server (in process)."""

    def __init__(self, server: Server[Any], tools: Callable[[], Sequence[ToolInfo]]) -> None:
        self._server = server
        self._tools = tools

    async def finish(self, record: CallRecord, events: EventLog) -> None:
        """Run the call and store what the client has not seen, ending with the answer."""
        seen = _Seen.of(await events.stream_events(record.stream_id))
        if seen.answered:
            return
        request = record.request
        params = request.get("params") or {}
        name = str(params.get("name", ""))
        token = (params.get("_meta") or {}).get("progressToken")
        if request.get("method") != "tools/call" or not self._repeatable(name):
            what = f"tool {name!r}" if request.get("method") == "tools/call" else f"request {request.get('method')!r}"
            result = CallToolResult(is_error=True, content=[TextContent(type="text", text=(
                f"the replica running this call stopped before it answered, and codeward did not run the {what} "
                "again on another replica because it is not marked read-only or idempotent; check whether it took "
                "effect, then call it again if that is safe"))])
            await _store(events, record.stream_id, _answer(request, result))
            return

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if token is None or progress <= seen.progress:
                return
            seen.progress = progress
            notification = {"progressToken": token, "progress": progress}
            if total is not None:
                notification["total"] = total
            if message is not None:
                notification["message"] = message
            await _store(events, record.stream_id,
                         JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params=notification))

        async def logged(params: Any) -> None:
            if seen.logs > 0:
                seen.logs -= 1
                return
            await _store(events, record.stream_id, JSONRPCNotification(
                jsonrpc="2.0", method="notifications/message",
                params=params.model_dump(by_alias=True, exclude_none=True, mode="json")))

        log.info("finishing call %s of session %s (tool %s) left by replica %s",
                 record.stream_id, record.session_id, name, record.owner)
        async with Client(self._server, mode="legacy", logging_callback=logged) as client:
            result = await client.call_tool(name, params.get("arguments") or {}, progress_callback=progress)
        await _store(events, record.stream_id, _answer(request, result))

    def _repeatable(self, name: str) -> bool:
        for info in self._tools():
            if info.name == name:
                hints = info.annotations or {}
                return bool(hints.get("readOnlyHint") or hints.get("idempotentHint"))
        return False


class _Seen:
    """What the client already received on a stream: the highest progress, the log messages, the answer."""

    def __init__(self, progress: float, logs: int, answered: bool) -> None:
        self.progress = progress
        self.logs = logs
        self.answered = answered

    @classmethod
    def of(cls, stored: Sequence[StoredEvent]) -> _Seen:
        progress, logs, answered = float("-inf"), 0, False
        for event in stored:
            if event.message is None:
                continue
            data = json.loads(event.message)
            method = data.get("method")
            if method == "notifications/progress":
                progress = max(progress, float(data.get("params", {}).get("progress", 0)))
            elif method == "notifications/message":
                logs += 1
            elif "result" in data or "error" in data:
                answered = True
        return cls(progress, logs, answered)


def _answer(request: dict[str, Any], result: CallToolResult) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request["id"],
                           result=result.model_dump(by_alias=True, exclude_none=True, mode="json"))


async def _store(events: EventLog, stream_id: str, message: Any) -> None:
    await events.store_event(stream_id, message)
