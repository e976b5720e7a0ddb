"""``[coding]``: code execution (``coding_*`` tools, ``codeward run``) and the debug loop's model."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import field_validator

from codeward.config.base import Bool, Field, Int, Seconds, Str, Table, code_only
from codeward.config.model_profile import ModelProfile

Backend = Literal["bwrap", "docker", "process"]
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
LANGUAGE_NAMES = ("python", "javascript", "bash", "c", "cpp", "go", "rust", "java")
"""The languages codeward runs (:mod:`codeward.engines.execution.languages` has each one's recipe): the
names ``docker_images`` and a call's ``language`` may use."""
IMAGE_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
"""A Docker image reference as codeward accepts one (``python:3.11-slim``, ``registry/x@sha256:...``)."""


class CodingSettings(Table):
    """Choices for code execution."""

    table_name: ClassVar[str] = "coding"

    backend: Backend | None = None
    """The older key for code execution's sandbox alone: ``bwrap``, ``docker`` or ``process``; unset
    follows ``[sandbox] backend``. A named backend that cannot run is a refusal, never a fallback."""
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
    docker_images: dict[str, Str] = Field(default_factory=dict, json_schema_extra={"type_text": "table"})
    """The Docker image each language runs in with the ``docker`` backend and ``coding_run_in_docker``,
    e.g. ``{ python = "codeward-sandbox:bookworm" }``; a language not named uses its official image
    (``python:3.11-slim``, ...). Images are never pulled: pull them, or build one without a registry
    with ``deploy/build-sandbox-image``."""
    allow_network: Bool = False
    """Whether a call may ask for network (``network=true``): the operator's decision, never the
    model's. Even allowed, the host and private ranges stay out of reach where the backend can keep
    them so (bwrap), and results say so where it cannot."""

    @field_validator("docker_images")
    @classmethod
    def _docker_images(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(LANGUAGE_NAMES))
        if unknown:
            raise ValueError(f"names unknown languages {', '.join(map(repr, unknown))}; "
                             f"the languages are {', '.join(LANGUAGE_NAMES)}")
        bad = [f"{name} = {image!r}" for name, image in value.items() if not IMAGE_REFERENCE.match(image)]
        if bad:
            raise ValueError(f"has an image that is not a Docker image reference (like python:3.11-slim): "
                             f"{', '.join(bad)}")
        return value

    def model_profile(self) -> ModelProfile | None:
        """The model ``coding_debug_code`` asks, as a profile of the one model client; ``None`` if unset."""
        if not self.model:
            return None
        return ModelProfile(name=self.model, base_url=self.model_base_url or DEFAULT_OPENAI_URL, model=self.model,
                            temperature=0.2, timeout_s=self.model_timeout_s)
