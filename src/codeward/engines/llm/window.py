"""How many tokens the model can take: asked of the server, or configured, or a default.

Servers say it in different places: llama.cpp's ``/props`` (``default_generation_settings.n_ctx``,
the context of one slot — what a request may really use) and its ``/v1/models`` entries
(``meta.n_ctx``); vLLM's ``max_model_len``; OpenRouter's and LM Studio's ``context_length``.
A profile's ``context_tokens`` overrides them all; a server that says nothing gets
:data:`DEFAULT_CONTEXT_TOKENS`, and the answer says which source it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codeward.config.model_profile import ModelProfile

DEFAULT_CONTEXT_TOKENS = 32_768
PROBE_TIMEOUT_S = 5.0
MODEL_KEYS = ("context_length", "max_model_len", "context_window", "max_context_length")


@dataclass(frozen=True)
class ContextWindow:
    tokens: int
    source: str
    """Where the number came from, for the status line and errors ("server /props", "profile", ...)."""


async def discover_window(profile: ModelProfile, api_key: str | None = None,
                          timeout_s: float = PROBE_TIMEOUT_S) -> ContextWindow:
    """The profile's ``context_tokens``, else what the server reports, else the default."""
    if profile.context_tokens:
        return ContextWindow(profile.context_tokens, f"profile {profile.name!r} context_tokens")
    import httpx2

    headers = {"Authorization": f"Bearer {api_key or profile.api_key()}"}
    base = profile.base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    async with httpx2.AsyncClient(timeout=timeout_s, headers=headers) as http:
        props = await _get_json(http, f"{root}/props")
        found = slot_context(props)
        if found:
            return ContextWindow(found, "server /props")
        models = await _get_json(http, f"{base}/models")
        found = listed_context(models, profile.model)
        if found:
            return ContextWindow(found, "server /v1/models")
    return ContextWindow(DEFAULT_CONTEXT_TOKENS, "default (the server did not say; set context_tokens in the "
                                                 "model profile)")


async def _get_json(http: Any, url: str) -> Any:
    """The JSON body of a GET, or ``None`` on any failure (the probe is a hint, never an error)."""
    try:
        response = await http.get(url)
        if response.status_code != 200:
            return None
        return response.json()
    except Exception:  # unreachable, not JSON, timeout: the chat request will say what is wrong
        return None


def slot_context(props: Any) -> int | None:
    """llama.cpp ``/props``: the context of one slot."""
    if not isinstance(props, Mapping):
        return None
    settings = props.get("default_generation_settings")
    value = settings.get("n_ctx") if isinstance(settings, Mapping) else None
    return _positive(value)


def listed_context(listing: Any, model: str) -> int | None:
    """``/v1/models``: the context of the entry for ``model`` (or of the only entry)."""
    entries = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, Mapping)]
    chosen = [e for e in entries if e.get("id") == model or model in (e.get("aliases") or ())]
    if not chosen and len(entries) == 1:
        chosen = entries
    for entry in chosen:
        meta = entry.get("meta")
        if isinstance(meta, Mapping) and _positive(meta.get("n_ctx")):
            return _positive(meta.get("n_ctx"))
        for key in MODEL_KEYS:
            if _positive(entry.get(key)):
                return _positive(entry.get(key))
    return None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
