"""Model endpoints: named profiles and a streaming client over the official ``openai`` SDK.

Any OpenAI-compatible server works — OpenRouter, OpenAI, llama.cpp's server, vLLM, Ollama,
LM Studio. Profiles come from ``[model.profiles.<name>]`` in ``codeward.toml`` (``base_url``,
``key_env``, ``model``, ...), falling back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` /
``OPENAI_MODEL``. The client turns the SDK's stream into codeward events and every failure —
HTTP status with a body snippet, an unreachable server, an error object inside a 200 stream —
into a :class:`StreamFailed` that says what happened.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from codeward.agent.conversation import ToolCall
from codeward.agent.streaming import ToolCallAccumulator


class ModelConfigError(ValueError):
    """No usable model settings; the message says what to set."""


@dataclass(frozen=True)
class ModelProfile:
    name: str
    base_url: str
    model: str
    key_env: str | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    text_tool_calls: bool = False
    use_tool_role: bool = True
    timeout_s: float = 120.0
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        env = os.environ if environ is None else environ
        if self.key_env:
            return env.get(self.key_env, "") or "none"
        return env.get("OPENAI_API_KEY", "") or "none"


PROFILE_KEYS = frozenset(ModelProfile.__dataclass_fields__) - {"name"}


def load_profiles(raw_config: Mapping[str, Any]) -> dict[str, ModelProfile]:
    """``[model.profiles.<name>]`` tables as profiles; unknown keys are an error naming them."""
    section = raw_config.get("model", {})
    profiles: dict[str, ModelProfile] = {}
    for name, table in (section.get("profiles") or {}).items():
        if not isinstance(table, dict):
            raise ModelConfigError(f"[model.profiles.{name}] must be a table")
        unknown = set(table) - PROFILE_KEYS
        if unknown:
            raise ModelConfigError(f"[model.profiles.{name}]: unknown keys {sorted(unknown)}; "
                                   f"known: {sorted(PROFILE_KEYS)}")
        missing = {"base_url", "model"} - set(table)
        if missing:
            raise ModelConfigError(f"[model.profiles.{name}] needs {', '.join(sorted(missing))}")
        profiles[name] = ModelProfile(name=name, **table)
    return profiles


def resolve_profile(raw_config: Mapping[str, Any], requested: str | None,
                    environ: Mapping[str, str] | None = None) -> ModelProfile:
    """The profile to use: ``--model NAME`` (a profile, or a model id on the default endpoint),
    else ``[model] default``, else the ``OPENAI_*`` environment variables."""
    env = os.environ if environ is None else environ
    profiles = load_profiles(raw_config)
    section = raw_config.get("model", {})
    name = requested or section.get("default")
    if name and name in profiles:
        return profiles[name]
    base_url = env.get("OPENAI_BASE_URL", "")
    model = name or env.get("OPENAI_MODEL", "")
    if not base_url:
        if profiles:
            raise ModelConfigError(f"no model profile named {name!r}; configured: {', '.join(profiles)}")
        raise ModelConfigError(
            "no model configured: add a [model.profiles.NAME] table to codeward.toml (base_url, model, key_env), "
            "or set OPENAI_BASE_URL and OPENAI_MODEL (and OPENAI_API_KEY)"
        )
    if not model:
        raise ModelConfigError("OPENAI_BASE_URL is set but no model: pass --model or set OPENAI_MODEL")
    return ModelProfile(name=model, base_url=base_url, model=model)


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


StreamEvent = TextDelta | Notice | Finished | StreamFailed


class ModelClient:
    """Streams chat completions from one profile's endpoint."""

    def __init__(self, profile: ModelProfile, environ: Mapping[str, str] | None = None) -> None:
        from openai import AsyncOpenAI

        self.profile = profile
        self._client = AsyncOpenAI(base_url=profile.base_url, api_key=profile.api_key(environ),
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
        failure: StreamFailed | None = None
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
            failure = StreamFailed(f"HTTP {exc.status_code} from {self.profile.base_url}: {snippet or exc.message}",
                                   "".join(text))
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            failure = StreamFailed(f"cannot reach the model server at {self.profile.base_url}: {cause}",
                                   "".join(text))
        except openai.APIError as exc:  # an {"error": ...} object inside a 200 event stream
            failure = StreamFailed(f"the model server reported an error mid-stream: {exc.message}", "".join(text))
        finally:
            if stream is not None:
                await stream.close()
        if failure is not None:
            yield failure
            return
        yield Finished("".join(text), calls.complete() if calls else [], finish)
