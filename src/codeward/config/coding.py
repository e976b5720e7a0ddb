"""``[coding]``: code execution (``coding_*`` tools, ``codeward run``) and the debug loop's model."""

from __future__ import annotations

from typing import Literal

from codeward.config.base import Bool, Int, Seconds, Str, Table, code_only
from codeward.llm.profile import ModelProfile

Backend = Literal["bwrap", "docker", "process"]
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"


class CodingSettings(Table):
    """Choices for code execution."""

    backend: Backend | None = None
    """The sandbox: ``bwrap``, ``docker`` or ``process``; unset picks the strongest that runs here.
    One that cannot run falls back to another, and results say so."""
    pool_size: Int = 2
    """Warm Python interpreters kept ready (0 starts each run cold)."""
    session_idle_s: Seconds = 900.0
    """Seconds an interactive execution session lives without being used."""
    max_sessions: Int = 8
    """Interactive execution sessions alive at once."""
    session_memory_budget_mb: Int = 2048
    """The most memory the live sessions of one server may be allowed together (their limits summed)."""
    profile: Str = ""
    """The ``[model.profiles]`` profile ``coding_debug_code`` asks for fixes; empty: ``[model] default``."""
    model: Str | None = None
    """A model id to ask instead of a profile (with ``model_base_url``; the key comes from
    ``CODEWARD_MODEL_API_KEY``)."""
    model_base_url: Str | None = None
    """The OpenAI-compatible endpoint of ``model`` (unset: the OpenAI API)."""
    model_api_key: Str | None = code_only(None, "is a secret: set the CODEWARD_MODEL_API_KEY environment "
                                               "variable, or use a [model.profiles] profile with key_env")
    """The key for ``model`` (from ``CODEWARD_MODEL_API_KEY`` or the profile's ``key_env``)."""
    model_timeout_s: Seconds = 60.0
    """Seconds one request to the model may take."""
    allow_network: Bool = False
    """Whether a call may ask for network (``network=true``): the operator's decision, never the
    model's. Even allowed, the host and private ranges stay out of reach where the backend can keep
    them so (bwrap), and results say so where it cannot."""

    def model_profile(self) -> ModelProfile | None:
        """The model ``coding_debug_code`` asks, as a profile of the one model client; ``None`` if unset."""
        if not self.model:
            return None
        return ModelProfile(name=self.model, base_url=self.model_base_url or DEFAULT_OPENAI_URL, model=self.model,
                            temperature=0.2, timeout_s=self.model_timeout_s)
