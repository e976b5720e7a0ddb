"""``[agent]``: the agent shell (``codeward chat`` / ``ask``)."""

from __future__ import annotations

from codeward.config.base import Int, Str, Table


class AgentSettings(Table):
    """How the agent shell tracks files and watches its context."""

    base_dirs: tuple[Str, ...] | None = None
    """Directories (relative to the primary root) whose files the shell's allowlist may add;
    unset: the whole workspace."""
    context_budget_tokens: Int | None = None
    """Tokens the next request (tool schemas, history, tracked files, room for the reply) may take
    before the shell warns (``:drop`` files); unset: the model's context window."""
