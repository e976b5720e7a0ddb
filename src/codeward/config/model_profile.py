"""Named model endpoints: ``[model.profiles.<name>]`` in ``codeward.toml``, or ``OPENAI_*``.

:class:`ModelProfile`'s fields are the single definition of what a profile may say: the
configuration's ``[model]`` table (:class:`codeward.config.ModelSettings`) validates each
profile table as one, and picks the one to use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator


class ModelConfigError(ValueError):
    """No usable model settings; the message says what to set."""


class ModelProfile(BaseModel):
    """One OpenAI-compatible endpoint and how to talk to it (``[model.profiles.NAME]``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    """``defer_build``: its validator is built when a profile is first validated (a server that
    talks to no model never builds it), as the configuration tables do."""

    name: StrictStr = ""
    """The profile's name, taken from its table name."""
    base_url: StrictStr
    """The endpoint's OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8080/v1``."""
    model: StrictStr
    """The model id the endpoint serves."""
    key_env: StrictStr | None = None
    """The environment variable holding the API key (default ``OPENAI_API_KEY``); keys never go in files."""
    max_tokens: StrictInt = 1024
    """Tokens one reply may have."""
    temperature: float | None = Field(default=None, strict=True)
    """Sampling temperature; unset leaves the server's default."""
    text_tool_calls: StrictBool = False
    """The model writes tool calls as text (``<tool_call>`` JSON) instead of the API's tool calls."""
    use_tool_role: StrictBool = True
    """Tool results go back as ``tool`` messages; ``false`` sends them as user messages."""
    timeout_s: float = Field(default=120.0, strict=True)
    """Seconds one request may take."""
    context_tokens: StrictInt | None = None
    """The model's context window in tokens; unset, the server is asked (llama.cpp ``/props``,
    ``/v1/models`` metadata), else 32,768."""
    extra_body: Mapping[str, Any] = Field(default_factory=dict)
    """Extra JSON fields sent with every request (server-specific options)."""

    @field_validator("timeout_s", "max_tokens", "context_tokens")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("must be above 0")
        return value

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        env = os.environ if environ is None else environ
        if self.key_env:
            return env.get(self.key_env, "") or "none"
        return env.get("OPENAI_API_KEY", "") or "none"
