"""The seed's QA callback: when a script fails, ask the configured model what went wrong.

The model is any OpenAI-compatible endpoint from ``[model]`` in ``codeward.toml`` (or the
``OPENAI_*`` variables). The answer is advice appended to the result; when no model is
configured or it cannot be reached, one line says so and the run's result stands.
"""

from __future__ import annotations

from typing import Any

from codeward.config.model import ModelSettings
from codeward.config.model_profile import ModelConfigError

SYSTEM_PROMPT = ("You help a developer whose shell script failed. In a few short sentences, say what most "
                 "likely went wrong and how to fix it. Refer to the actual error lines. No preamble.")
MAX_SCRIPT_CHARS = 4000
MAX_STDERR_CHARS = 6000
MAX_STDOUT_CHARS = 2000
MAX_ANSWER_CHARS = 4000


def failure_messages(script: str, shell: str, exit_code: int | None, stdout: str, stderr: str) -> list[dict[str, Any]]:
    """The chat messages that ask for an explanation (tails of long outputs: errors come last)."""
    report = (f"Shell: {shell}\nScript:\n{_head(script, MAX_SCRIPT_CHARS)}\n\nExit code: {exit_code}\n\n"
              f"STDERR:\n{_tail(stderr, MAX_STDERR_CHARS) or '(empty)'}\n\n"
              f"STDOUT:\n{_tail(stdout, MAX_STDOUT_CHARS) or '(empty)'}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": report}]


def explain_failure(models: ModelSettings, profile_name: str, messages: list[dict[str, Any]]) -> str:
    """The model's explanation, or one line saying why there is none. Never raises."""
    from codeward.engines.llm.client import ModelError, ask_text_sync

    try:
        profile = models.resolve(profile_name or None)
    except ModelConfigError as exc:
        return f"(unavailable: {exc})"
    try:
        answer = ask_text_sync(profile, messages).strip()
    except ModelError as exc:
        return f"(unavailable: {exc})"
    return _head(answer, MAX_ANSWER_CHARS)


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[...]"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]
