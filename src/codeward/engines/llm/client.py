"""A streaming chat-completions client over the official ``openai`` SDK.

Any OpenAI-compatible server works — OpenRouter, OpenAI, llama.cpp's server, vLLM, Ollama,
LM Studio. :class:`ModelClient` turns the SDK's stream into codeward events and every failure —
HTTP status with a body snippet, an unreachable server, an error object inside a 200 stream —
into a :class:`StreamFailed` that says what happened. :func:`ask_text` and
:func:`ask_text_sync` are the one-shot form (a whole reply as text, or :class:`ModelError`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from codeward.config.model_profile import ModelProfile
from codeward.engines.llm.calls import ToolCall, ToolCallAccumulator


class ModelError(RuntimeError):
    """The model could not be asked (unreachable, refused, no answer); the message says which."""


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class Notice:
    text: str


@dataclass(frozen=True)
class Finished:
    text: str
    tool_calls: list[ToolCall]
    finish_reason: str | None


@dataclass(frozen=True)
class StreamFailed:
    message: str
    partial_text: str = ""
    kind: str = "error"
    """"error"; "unparsed" (the server could not parse the model's output as text or a tool call);
    "context" (the request does not fit the model's context)."""


UNPARSED_MARKERS = ("does not match the expected", "failed to parse", "unparsed")
CONTEXT_MARKERS = ("exceeds the available context size", "context_length_exceeded", "maximum context length",
                   "context window", "too many tokens")


def failure(message: str, partial_text: str) -> StreamFailed:
    """A failure, classified and explained: a parse error carries the model's raw text."""
    lowered = message.lower()
    if any(marker in lowered for marker in UNPARSED_MARKERS):
        raw = (f"the raw output that arrived before the error: {partial_text!r}" if partial_text
               else "no text arrived before the error (the server's log has the raw output)")
        return StreamFailed(f"the model wrote output its server could not parse as text or a tool call ({message}); "
                            f"{raw}. Ask again, perhaps more plainly; a small model does this now and then",
                            partial_text, "unparsed")
    if any(marker in lowered for marker in CONTEXT_MARKERS):
        return StreamFailed(f"{message} — the request does not fit the model's context: offer fewer tools "
                            "(--meta or --toolsets), :drop tracked files, start a new conversation, or give the "
                            "server a larger context (codeward model serve-local --ctx)", partial_text, "context")
    return StreamFailed(message, partial_text)


StreamEvent = TextDelta | Notice | Finished | StreamFailed


class ModelClient:
    """Streams chat completions from one profile's endpoint.

    ``api_key`` overrides the key the profile names (for settings that carry a key value).
    """

    def __init__(self, profile: ModelProfile, environ: Mapping[str, str] | None = None,
                 api_key: str | None = None) -> None:
        from openai import AsyncOpenAI

        self.profile = profile
        self._client = AsyncOpenAI(base_url=profile.base_url, api_key=api_key or profile.api_key(environ),
                                   timeout=profile.timeout_s, max_retries=0)

    async def close(self) -> None:
        await self._client.close()

    @property
    def closed(self) -> bool:
        return self._client.is_closed()

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.profile.model, "messages": messages, "stream": True,
                                "max_tokens": self.profile.max_tokens}
        if tools:  # some servers reject "tools": [] — omit the field entirely
            body["tools"] = tools
        if self.profile.temperature is not None:
            body["temperature"] = self.profile.temperature
        return body

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[StreamEvent]:
        import openai

        body = self.request_body(messages, tools)
        text: list[str] = []
        calls = ToolCallAccumulator()
        finish: str | None = None
        failed: StreamFailed | None = None
        stream: Any = None
        try:
            stream = await self._client.chat.completions.create(**body, extra_body=dict(self.profile.extra_body))
            async for chunk in stream:
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        text.append(delta.content)
                        yield TextDelta(delta.content)
                    if delta is not None and delta.tool_calls:
                        notice = calls.add(list(delta.tool_calls))
                        if notice:
                            yield Notice(notice)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except openai.APIStatusError as exc:
            snippet = (exc.response.text or "").strip()[:400]
            failed = failure(f"HTTP {exc.status_code} from {self.profile.base_url}: {snippet or exc.message}",
                             "".join(text))
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            failed = StreamFailed(f"cannot reach the model server at {self.profile.base_url}: {cause}", "".join(text))
        except openai.APIError as exc:  # an {"error": ...} object inside a 200 event stream
            failed = failure(f"the model server reported an error mid-stream: {exc.message}", "".join(text))
        finally:
            if stream is not None:
                await stream.close()
        if failed is not None:
            yield failed
            return
        yield Finished("".join(text), calls.complete() if calls else [], finish)


async def ask_text(client: ModelClient, messages: list[dict[str, Any]]) -> str:
    """The whole reply to ``messages`` (no tools) as text; :class:`ModelError` says what failed."""
    async for event in client.stream(messages, []):
        if isinstance(event, StreamFailed):
            raise ModelError(event.message)
        if isinstance(event, Finished):
            if not event.text.strip():
                raise ModelError(f"the model at {client.profile.base_url} sent an empty reply")
            return event.text
    raise ModelError(f"the model stream from {client.profile.base_url} ended without a final chunk")


def ask_text_sync(profile: ModelProfile, messages: list[dict[str, Any]], api_key: str | None = None) -> str:
    """:func:`ask_text` for synchronous callers (tools, the shell runner), inside an event loop or not."""

    async def once() -> str:
        client = ModelClient(profile, api_key=api_key)
        try:
            return await ask_text(client, messages)
        finally:
            await client.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(once())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from a thread that runs a loop
        return pool.submit(asyncio.run, once()).result()
