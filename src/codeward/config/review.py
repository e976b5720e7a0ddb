"""``[review]``: how the static review finds and bounds its analyzers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo, field_validator

from codeward.config.base import Bool, Field, Int, Seconds, Str, Table, base_dir_of, expand_env

DEFAULT_TIMEOUT_SECONDS = 120.0
MAX_TIMEOUT_SECONDS = 86_400.0


def _executable(value: Any, info: ValidationInfo) -> Any:
    """A program name stays a name (looked up on PATH); a path is taken from the file's directory."""
    if not isinstance(value, str):
        return value
    text = str(Path(expand_env(value)).expanduser()) if value.startswith("~") else expand_env(value)
    base = base_dir_of(info)
    if "/" in text and not Path(text).is_absolute() and base is not None:
        return str((base / text).resolve())
    return text


Executable = Annotated[Str, BeforeValidator(_executable)]


class ReviewSettings(Table):
    """Analyzer executables and limits of ``coding_analyze_*``, ``coding_quality_gates`` and ``codeward review``."""

    executables: dict[str, Executable] = Field(default_factory=dict)
    """An explicit executable per analyzer (``ruff``, ``mypy``, ``bandit``, ``radon``, ``vulture``,
    ``lizard``) — a path (relative to the file) or a program name on PATH, e.g. a project's own
    mypy; overrides the search beside codeward's interpreter and on PATH."""
    timeout_seconds: Seconds = DEFAULT_TIMEOUT_SECONDS
    """Wall-clock limit for one analyzer run (``codeward review --timeout`` overrides it)."""
    memory_mb: Int = 4096
    """Memory of one analyzer run, all its processes together (mypy on a large project needs a few GB)."""
    heartbeat_seconds: Seconds = 10.0
    """How often a long review reports which analyzers are still running."""
    isolated: Bool = False
    """Ignore the reviewed project's analyzer configuration (ruff, mypy, bandit, vulture, biome...) and
    use codeward's fixed rules: for code nobody has vouched for (``codeward review --isolated``)."""

    @field_validator("memory_mb")
    @classmethod
    def _memory(cls, value: int) -> int:
        if value < 128:
            raise ValueError("must be at least 128")
        return value

    @field_validator("timeout_seconds")
    @classmethod
    def _at_most_a_day(cls, value: float) -> float:
        if value > MAX_TIMEOUT_SECONDS:
            raise ValueError(f"must be at most {MAX_TIMEOUT_SECONDS:g} seconds")
        return value
