"""Seeing a session from outside: wrappers that report tool calls and model requests.

Nothing in the agent or the gateway knows about the control plane. :class:`Observe` is the
middleware the stack puts outermost in its chain, :class:`ObservedModelClient` is the model client with a witness, and
:class:`SessionObserver` fans each report out to the control state (events, the console) and
the session logs (files). Either side may be absent.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from codeward.apps.agent.conversation import Turn
from codeward.apps.control.session_logs import SessionLogs, preview
from codeward.apps.control.state import ControlState
from codeward.config.model_profile import ModelProfile
from codeward.engines.llm.client import Finished, ModelClient, StreamEvent, StreamFailed
from codeward.kernel.chain import Middleware, ToolCall, tool_info
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.surface import GET_PROMPT, READ_RESOURCE, ToolSurface

DENIAL_SOURCES = ("approval-policy",)


class SessionObserver:
    """Where reports go: the control state, the session logs, or both."""

    def __init__(self, state: ControlState | None = None, logs: SessionLogs | None = None) -> None:
        self.state = state
        self.logs = logs

    # -- tool calls ------------------------------------------------------------------------------

    def call_started(self, name: str, arguments: Mapping[str, Any] | None, source: str) -> str:
        if self.state is not None:
            return self.state.call_started(name, arguments, source)
        return uuid.uuid4().hex[:12]

    def call_finished(self, call_id: str, name: str, arguments: Mapping[str, Any] | None, source: str,
                      outcome: ToolOutcome, seconds: float) -> None:
        denied = outcome.is_error and any(e.kind == ErrorKind.PERMISSION and e.source in DENIAL_SOURCES
                                          for e in outcome.errors)
        if self.state is not None:
            self.state.call_finished(call_id, is_error=outcome.is_error, seconds=seconds, text=outcome.text,
                                     denied=denied, waited=outcome.waited)
        if self.logs is not None:
            status = "denied" if denied else ("error" if outcome.is_error else "ok")
            self.logs.tool_call({"id": call_id, "tool": name, "source": source, "arguments": dict(arguments or {}),
                                 "status": status, "duration_s": round(seconds, 6),
                                 "approval_wait_s": round(outcome.waited, 6), "truncated": outcome.truncated,
                                 "errors": [e.to_dict() for e in outcome.errors], "result": preview(outcome.text)})

    def call_crashed(self, call_id: str, name: str, arguments: Mapping[str, Any] | None, source: str,
                     error: BaseException, seconds: float) -> None:
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if self.state is not None:
            self.state.call_finished(call_id, is_error=True, seconds=seconds, text=text)
        if self.logs is not None:
            self.logs.tool_call({"id": call_id, "tool": name, "source": source, "arguments": dict(arguments or {}),
                                 "status": "crashed" if isinstance(error, Exception) else "cancelled",
                                 "duration_s": round(seconds, 6), "result": text})

    # -- model requests --------------------------------------------------------------------------

    def model_request(self, profile: ModelProfile, body: Mapping[str, Any]) -> str:
        messages = list(body.get("messages") or [])
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        request_id = (self.state.model_request(profile.model, len(messages), len(tools))
                      if self.state is not None else uuid.uuid4().hex[:12])
        if self.logs is not None:
            payload = {k: v for k, v in body.items() if k != "tools"}
            self.logs.comms("out", "request", {"id": request_id, "base_url": profile.base_url, "profile": profile.name,
                                               **payload, "tools": tools})
        return request_id

    def model_response(self, request_id: str, profile: ModelProfile, final: StreamEvent | None,
                       seconds: float) -> None:
        if isinstance(final, Finished):
            ok, text, error = True, final.text, None
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in final.tool_calls]
            finish = final.finish_reason
        else:
            ok, calls, finish = False, [], None
            text = final.partial_text if isinstance(final, StreamFailed) else ""
            error = final.message if isinstance(final, StreamFailed) else "the response was cancelled"
        if self.state is not None:
            self.state.model_response(request_id, profile.model, seconds=seconds, ok=ok, text=text,
                                      tool_calls=[c["name"] for c in calls], error=error)
        if self.logs is not None:
            self.logs.comms("in", "response", {"id": request_id, "ok": ok, "text": text, "tool_calls": calls,
                                               "finish_reason": finish, "error": error,
                                               "latency_s": round(seconds, 6)})

    # -- conversation and subprocesses -------------------------------------------------------

    def entry(self, turn: Turn) -> None:
        """A conversation listener: every turn as it is added."""
        if self.state is not None:
            self.state.add_entry(turn.to_dict())

    def cli_call(self, command: Sequence[str] | str, *, cwd: Path | str | None, stdout: str, latency_s: float,
                 exit_code: int | None = None, stdin: str = "", stderr: str = "") -> None:
        if self.logs is not None:
            self.logs.cli_call(command, cwd=str(cwd) if cwd is not None else None, stdin=stdin, stdout=stdout,
                               stderr=stderr, latency_s=latency_s, exit_code=exit_code)
        if self.state is not None:
            self.state.events.publish("cli_call", command=command if isinstance(command, str) else list(command),
                                      exit_code=exit_code, duration_ms=round(latency_s * 1000, 3),
                                      output=preview(stdout, 600))


SOURCES = {READ_RESOURCE: "resources", GET_PROMPT: "prompts"}
"""Where a resource read or a prompt get comes from, as the console's call list shows it."""


class Observe(Middleware):
    """The chain's observer: reports each call's start and end (and hands its id to approvals).

    It sits outermost, so denied calls are reported too."""

    def __init__(self, observer: SessionObserver) -> None:
        self.observer = observer

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        name, arguments = call.name, call.arguments
        info = tool_info(inner, name)
        source = info.source if info is not None else SOURCES.get(name, "?")
        call_id = self.observer.call_started(name, arguments, source)
        ctx = call.ctx.child(call=replace(call.ctx.call, call_id=call_id))
        started = time.perf_counter()
        try:
            outcome = await inner.call(name, arguments, ctx)
        except BaseException as exc:
            self.observer.call_crashed(call_id, name, arguments, source, exc, time.perf_counter() - started)
            raise
        # The outcome's own run time; else the time here, less any wait for a person's approval.
        seconds = outcome.seconds or max(0.0, time.perf_counter() - started - outcome.waited)
        self.observer.call_finished(call_id, name, arguments, source, outcome, seconds)
        return outcome


class ObservedModelClient(ModelClient):
    """The model client, reporting every request and its response (or failure) to an observer."""

    def __init__(self, profile: ModelProfile, observer: SessionObserver,
                 environ: Mapping[str, str] | None = None) -> None:
        super().__init__(profile, environ)
        self.observer = observer
        if observer.logs is not None:
            observer.logs.redactor.add(profile.api_key(environ))

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[StreamEvent]:
        profile = self.profile
        request_id = self.observer.model_request(profile, self.request_body(messages, tools))
        started = time.perf_counter()
        reported = False
        try:
            async for event in super().stream(messages, tools):
                if isinstance(event, (Finished, StreamFailed)):
                    reported = True  # report before yielding: the consumer may stop right here
                    self.observer.model_response(request_id, profile, event, time.perf_counter() - started)
                yield event
        finally:
            if not reported:
                self.observer.model_response(request_id, profile, None, time.perf_counter() - started)
