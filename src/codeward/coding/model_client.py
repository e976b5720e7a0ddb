"""Ask the configured OpenAI-compatible model one question (streamed), through the `openai` SDK."""

from __future__ import annotations

from codeward.coding.debug import ModelError
from codeward.coding.runtime import CodingSettings


def model_configured(settings: CodingSettings) -> str | None:
    """``None`` when a model can be asked, else what is missing and how to set it."""
    if not settings.model:
        return ("no model is configured: set CODEWARD_MODEL (and CODEWARD_MODEL_BASE_URL for a local or "
                "OpenAI-compatible server, CODEWARD_MODEL_API_KEY if it needs a key)")
    return None


def ask_model(settings: CodingSettings, messages: list[dict[str, str]]) -> str:
    """The model's whole reply text; raises :class:`ModelError` saying what failed."""
    try:
        import openai
    except ImportError as exc:
        raise ModelError("the `openai` package is not installed (pip install openai)") from exc
    client = openai.OpenAI(base_url=settings.model_base_url, api_key=settings.model_api_key or "not-needed",
                           timeout=settings.model_timeout_s, max_retries=0)
    where = settings.model_base_url or "the OpenAI API"
    try:
        stream = client.chat.completions.create(
            model=settings.model or "", messages=messages, temperature=0.2, stream=True,  # type: ignore[arg-type]
        )
        parts: list[str] = []
        for chunk in stream:
            for choice in getattr(chunk, "choices", None) or []:
                if choice.delta is not None and choice.delta.content:
                    parts.append(choice.delta.content)
    except openai.APIConnectionError as exc:
        raise ModelError(f"the model at {where} could not be reached ({exc}); check that it is running") from exc
    except openai.APIStatusError as exc:
        raise ModelError(f"the model at {where} refused the request: HTTP {exc.status_code} "
                         f"{_short(str(exc.message))}") from exc
    except openai.OpenAIError as exc:
        raise ModelError(f"asking the model at {where} failed: {_short(str(exc))}") from exc
    reply = "".join(parts)
    if not reply.strip():
        raise ModelError(f"the model at {where} sent an empty reply")
    return reply


def _short(text: str) -> str:
    return text if len(text) <= 300 else text[:297] + "..."
