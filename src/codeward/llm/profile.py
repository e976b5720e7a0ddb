"""Named model endpoints: ``[model.profiles.<name>]`` in ``codeward.toml``, or ``OPENAI_*``.

:class:`ModelProfile`'s fields are the single definition of what a profile may say; the
config loader validates the table against them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class ModelConfigError(ValueError):
    """No usable model settings; the message says what to set."""


@dataclass(frozen=True)
class ModelProfile:
    """One OpenAI-compatible endpoint and how to talk to it."""

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
