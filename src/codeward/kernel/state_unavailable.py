"""The one error a state backend raises: shared state is out of reach."""

from __future__ import annotations


class StateUnavailable(RuntimeError):
    """Shared state (Redis) could not be reached; the message names it and says what to check."""

    def __init__(self, where: str, cause: BaseException | str, check: str | None = None) -> None:
        self.where = where
        reason = (cause if isinstance(cause, str) else (str(cause) or type(cause).__name__)).rstrip(".")
        check = check or f"`redis-cli -u {where} ping` and `[state] url` in codeward.toml"
        super().__init__(
            f"codeward's shared state (Redis at {where}) is unreachable: {reason}. Calls that need shared "
            f"state fail until Redis answers again; check it with {check}")
