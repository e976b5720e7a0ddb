"""The tool loop: ask the model, run the calls it makes, feed the results back, until it answers.

After each response with tool calls, every call gets exactly one tool turn — its result, or a
synthesized error when the arguments are not JSON (the call is not run), when dispatch fails
with a JSON-RPC error, or when the transport fails — so the conversation never holds an
unanswered call. Consecutive read-only calls run in parallel; anything else runs in order.
``max_tool_depth`` bounds the rounds, and reaching it says so.

A call identical to one already made in this run (same tool, same arguments, nothing written
or run since) is not sent again. If it failed, the model is told once, plainly, that it would
fail the same way, and after ``max_repeats`` such repeats the loop stops and says why. If it
succeeded, the model gets the same result and the next request offers no tools, so it answers
(small models otherwise call the same tool until the depth limit). A successful call that is not
read-only may have changed the world, so it clears this memory: test, fix, test again works.
A reply the model server could not parse ends the turn with the raw text the model wrote.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from codeward.apps.agent.budget import openai_tool
from codeward.apps.agent.conversation import Conversation, Turn
from codeward.engines.llm.calls import ToolCall, text_tool_call
from codeward.engines.llm.client import Finished, Notice, StreamEvent, StreamFailed, TextDelta
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.surface import ToolInfo, ToolSurface

DISPATCH_FAILED = "[codeward] tool dispatch failed: "
BAD_ARGUMENTS = "[codeward] tool arguments not parseable as JSON: "
NOT_RUN_AGAIN = "[codeward] not run again: "
REPEATED_RESULT_CHARS = 2000
DEFAULT_RESULT_CAP = 16_000


class Streamer(Protocol):
    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any: ...


class LoopView(Protocol):
    """What the loop shows while it works (the terminal, a log, a test recorder)."""

    def text(self, delta: str) -> None: ...

    def notice(self, message: str) -> None: ...

    def error(self, message: str) -> None: ...

    def tool_begin(self, call: ToolCall) -> None: ...

    def tool_end(self, call: ToolCall, content: str, is_error: bool) -> None: ...

    def response_end(self) -> None: ...


@dataclass
class LoopResult:
    text: str
    rounds: int
    tool_calls: int
    hit_depth_limit: bool = False
    failure: str | None = None
    unparsed: bool = False
    """The model server could not parse the model's output: ``text`` is raw, not an answer."""

    @property
    def ok(self) -> bool:
        return self.failure is None and not self.hit_depth_limit


@dataclass
class LoopSettings:
    max_tool_depth: int = 8
    text_tool_calls: bool = False
    parallel_read_only: bool = True
    result_cap_chars: int = DEFAULT_RESULT_CAP
    max_repeats: int = 2
    """Repeats of an identical failed call answered without running it before the loop stops."""


class ToolLoop:
    """One conversation's model↔tools loop over a surface."""

    def __init__(
        self,
        model: Streamer,
        surface: ToolSurface,
        conversation: Conversation,
        view: LoopView,
        context_factory: Callable[[], ToolContext],
        settings: LoopSettings | None = None,
        before_request: Callable[[], Awaitable[None] | None] | None = None,
        after_tools: Callable[[], str] | None = None,
    ) -> None:
        self.model = model
        self.surface = surface
        self.conversation = conversation
        self.view = view
        self.context_factory = context_factory
        self.settings = settings or LoopSettings()
        self.before_request = before_request
        self.after_tools = after_tools
        """Called after the last tool call of each round; its text rides on the last tool result."""
        self._seen: dict[tuple[str, str], tuple[str, bool]] = {}
        """Calls made in this run since the last change, by (tool, canonical arguments): (result, is_error)."""
        self._repeats: list[ToolCall] = []
        """Repeats of failed calls, answered without running them."""
        self._remembered: set[str] = set()
        """Ids of this round's calls answered from :attr:`_seen`."""
        self._withhold_tools = False

    def tools(self) -> tuple[list[dict[str, Any]], dict[str, ToolInfo]]:
        infos = {info.name: info for info in self.surface.tool_infos()}
        return [openai_tool(info) for info in infos.values()], infos

    async def run(self, user_text: str | None) -> LoopResult:
        """Add the user's turn (if any) and loop until the model answers without calling tools."""
        if user_text is not None:
            self.conversation.append(Turn("user", user_text))
        self._seen, self._repeats, self._withhold_tools = {}, [], False
        rounds = calls_made = 0
        while True:
            if self.before_request is not None:
                maybe = self.before_request()
                if maybe is not None:
                    await maybe
            schema, infos = self.tools()
            if self._withhold_tools:  # the model repeated a call that worked: ask for the answer
                schema, self._withhold_tools = [], False
            finished = await self._stream(schema)
            rounds += 1
            if isinstance(finished, StreamFailed):
                unparsed = finished.kind == "unparsed"
                if finished.partial_text and not unparsed:  # raw fragments would only confuse the next request
                    self.conversation.append(Turn("assistant", finished.partial_text))
                self.view.error(finished.message)
                self.view.response_end()
                return LoopResult(finished.partial_text, rounds, calls_made, failure=finished.message,
                                  unparsed=unparsed)
            calls = list(finished.tool_calls)
            text = finished.text
            if not calls and self.settings.text_tool_calls:
                recognised = text_tool_call(text, set(infos) if schema else set())
                if recognised is not None:
                    self.view.notice(f"treating the reply as a call to {recognised.name}")
                    calls, text = [recognised], ""
            if not calls:
                if text:
                    self.conversation.append(Turn("assistant", text))
                self.view.response_end()
                return LoopResult(text, rounds, calls_made)
            if rounds > self.settings.max_tool_depth:
                if text:
                    self.conversation.append(Turn("assistant", text))
                message = f"tool-call depth limit reached ({self.settings.max_tool_depth} rounds); stopping here"
                self.view.notice(message)
                self.view.response_end()
                return LoopResult(text, rounds, calls_made, hit_depth_limit=True)
            self.conversation.append(Turn("assistant", text, tuple(calls)))
            self._remembered = set()
            results = await self._dispatch_all(calls, infos)
            self._remember(calls, results, infos)
            if self.after_tools is not None:
                extra = self.after_tools()
                if extra:
                    content, is_error = results[-1]
                    results[-1] = (f"{content}\n\n{extra}", is_error)
            for call, (content, _is_error) in zip(calls, results, strict=True):
                self.conversation.append(Turn("tool", content, tool_call_id=call.id, name=call.name))
            calls_made += len(calls)
            if len(self._repeats) > self.settings.max_repeats:
                message = self._repeat_stop()
                self.view.error(message)
                self.view.response_end()
                return LoopResult(text, rounds, calls_made, failure=message)

    async def _stream(self, schema: list[dict[str, Any]]) -> Finished | StreamFailed:
        event: StreamEvent
        async for event in self.model.stream(self.conversation.to_messages(), schema):
            if isinstance(event, TextDelta):
                self.view.text(event.text)
            elif isinstance(event, Notice):
                self.view.notice(event.text)
            elif isinstance(event, (Finished, StreamFailed)):
                return event
        return StreamFailed("the model stream ended without a final chunk")

    async def _dispatch_all(self, calls: Sequence[ToolCall], infos: dict[str, ToolInfo]) -> list[tuple[str, bool]]:
        results: list[tuple[str, bool] | None] = [None] * len(calls)
        index = 0
        while index < len(calls):
            batch = [index]
            if self.settings.parallel_read_only and _read_only(calls[index], infos):
                while index + len(batch) < len(calls) and _read_only(calls[index + len(batch)], infos):
                    batch.append(index + len(batch))
            if len(batch) == 1:
                results[index] = await self._dispatch(calls[index])
            else:
                async with anyio.create_task_group() as group:
                    for i in batch:
                        group.start_soon(self._store, results, i, calls[i])
            index += len(batch)
        return [r if r is not None else ("[codeward] the call produced no result", True) for r in results]

    async def _store(self, results: list[tuple[str, bool] | None], i: int, call: ToolCall) -> None:
        results[i] = await self._dispatch(call)

    async def _dispatch(self, call: ToolCall) -> tuple[str, bool]:
        previous = self._seen.get((call.name, _canonical(call.arguments)))
        if previous is None:
            return await self._run_call(call)
        self._remembered.add(call.id)
        content, is_error = previous
        if is_error:
            return self._repeat(call, content)
        self._withhold_tools = True
        self.view.notice(f"not running {call.name}({_short(call.arguments)}) again: the same call already ran; "
                         "asking the model to answer with its result")
        shown = content if len(content) <= REPEATED_RESULT_CHARS else "(see the result above)"
        return (f"{NOT_RUN_AGAIN}{call.name} already ran with exactly these arguments; its result is the same:\n"
                f"{shown}\nAnswer the question now, in plain text, from the results you have."), False

    def _remember(self, calls: Sequence[ToolCall], results: Sequence[tuple[str, bool]],
                  infos: dict[str, ToolInfo]) -> None:
        """Record this round's calls; a successful call that may have changed something clears the record."""
        ran = [(call, result) for call, result in zip(calls, results, strict=True) if call.id not in self._remembered]
        if any(not is_error and not _read_only(call, infos) for call, (_content, is_error) in ran):
            self._seen = {}
            return
        for call, result in ran:
            self._seen[(call.name, _canonical(call.arguments))] = result

    def _repeat(self, call: ToolCall, previous: str) -> tuple[str, bool]:
        """An identical failed call, answered without running it (plainly the first time)."""
        first = not self._repeats
        self._repeats.append(call)
        self.view.notice(f"not running {call.name}({_short(call.arguments)}) again: the same call already failed")
        if first:
            return (f"{NOT_RUN_AGAIN}{call.name} was already called with exactly these arguments and failed:\n"
                    f"{previous}\nIt would fail the same way. Do not call it like this again: change the arguments, "
                    "use another tool, or answer with what you have."), True
        return f"{NOT_RUN_AGAIN}the same failing call again; see its earlier result.", True

    def _repeat_stop(self) -> str:
        call = self._repeats[-1]
        error = self._seen.get((call.name, _canonical(call.arguments)), ("", True))[0]
        reason = next((line for line in error.splitlines() if line.strip()), "")[:200]
        return (f"stopped: the model repeated a call that had failed {len(self._repeats)} times "
                f"({call.name}({_short(call.arguments)}): {reason}). Rephrase the request or give the model what the "
                "error asks for.")

    async def _run_call(self, call: ToolCall) -> tuple[str, bool]:
        self.view.tool_begin(call)
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError(f"expected a JSON object, got {type(arguments).__name__}")
        except (json.JSONDecodeError, ValueError) as exc:
            content = f"{BAD_ARGUMENTS}{exc}. The call was not run; send the arguments again as a JSON object."
            self.view.tool_end(call, content, True)
            return content, True
        try:
            outcome = await self.surface.call(call.name, arguments, self.context_factory())
        except Exception as exc:  # a transport failure must still answer the call
            content = f"{DISPATCH_FAILED}{type(exc).__name__}: {exc}"
            self.view.tool_end(call, content, True)
            return content, True
        content = self._content(outcome)
        self.view.tool_end(call, content, outcome.is_error)
        return content, outcome.is_error

    def _content(self, outcome: ToolOutcome) -> str:
        text = outcome.text
        if outcome.is_error and outcome.errors and outcome.errors[0].source.startswith("upstream"):
            text = DISPATCH_FAILED + text
        cap = self.settings.result_cap_chars
        if len(text) > cap:
            text = (text[:cap] + f"\n[... tool result cut at {cap:,} of {len(text):,} characters to protect the "
                    "context; ask for a narrower result (offset/limit, a smaller path) ...]")
        return text


def _canonical(arguments: str) -> str:
    """Arguments as compact sorted JSON, so key order and spacing do not hide a repeat."""
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except json.JSONDecodeError:
        return arguments.strip()


def _short(arguments: str, width: int = 80) -> str:
    text = _canonical(arguments)
    return text if len(text) <= width else text[: width - 1] + "…"


def _read_only(call: ToolCall, infos: dict[str, ToolInfo]) -> bool:
    info = infos.get(call.name)
    return bool(info and info.read_only)
