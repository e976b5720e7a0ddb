"""``[model]``: named model endpoints (profiles) and the default one.

A profile is one OpenAI-compatible endpoint — OpenRouter, OpenAI, llama.cpp's server, vLLM,
Ollama, LM Studio. ``codeward chat``/``ask`` use the default (or ``--model NAME``), the shell's
QA step and ``coding_debug_code`` name one too. Without profiles, ``OPENAI_BASE_URL`` /
``OPENAI_MODEL`` / ``OPENAI_API_KEY`` describe the endpoint, as the ``openai`` SDK reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import field_validator

from codeward.config.base import Field, Str, Table
from codeward.config.model_profile import ModelConfigError, ModelProfile

__all__ = ["ModelConfigError", "ModelProfile", "ModelSettings"]


class ModelSettings(Table):
    """The model profiles and which one is used when none is named."""

    default: Str = ""
    """The profile (or, with ``OPENAI_BASE_URL`` set, the model id) used when none is named."""
    profiles: dict[str, ModelProfile] = Field(default_factory=dict, json_schema_extra={"type_text": "tables"})
    """``[model.profiles.NAME]`` tables, one per profile (below)."""

    @field_validator("profiles", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: {**table, "name": key} if isinstance(table, Mapping) else table
                    for key, table in value.items()}
        return value

    def resolve(self, requested: str | None, environ: Mapping[str, str] | None = None) -> ModelProfile:
        """The profile to use: ``requested`` (a profile, or a model id on ``OPENAI_BASE_URL``),
        else ``default``, else the ``OPENAI_*`` environment variables."""
        env = os.environ if environ is None else environ
        name = requested or self.default
        if name and name in self.profiles:
            return self.profiles[name]
        base_url = env.get("OPENAI_BASE_URL", "")
        model = name or env.get("OPENAI_MODEL", "")
        if not base_url:
            if self.profiles:
                raise ModelConfigError(f"no model profile named {name!r}; configured: {', '.join(self.profiles)}")
            raise ModelConfigError(
                "no model configured: add a [model.profiles.NAME] table to codeward.toml (base_url, model, "
                "key_env), or set OPENAI_BASE_URL and OPENAI_MODEL (and OPENAI_API_KEY)"
            )
        if not model:
            raise ModelConfigError("OPENAI_BASE_URL is set but no model: pass --model or set OPENAI_MODEL")
        return ModelProfile(name=model, base_url=base_url, model=model)
