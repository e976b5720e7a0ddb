"""``[agent]``: the agent shell (``codeward chat`` / ``ask``)."""

from __future__ import annotations

from codeward.config.base import Int, Str, Table

DEFAULT_BUDGET_TOKENS = 32_000


class AgentSettings(Table):
    """How the agent shell tracks files and watches its context."""

    base_dirs: tuple[Str, ...] | None = None
    """Directories (relative to the primary root) whose files the shell's allowlist may add;
    unset: the whole workspace."""
    context_budget_tokens: Int = DEFAULT_BUDGET_TOKENS
    """Tokens of tracked files plus history above which the shell warns (``:drop`` files)."""
