"""Which upstream tools are offered at all (allow/deny), and which calls run without asking.

The policy is built once from the configuration and is immutable: nothing a model sends and
nothing an upstream server announces can change it. The only upstream input it ever reads is
a tool's ``readOnlyHint`` — and only when the user opted in with ``read_only_auto_approve``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from codeward.gateway.config import GatewayConfig, ServerConfig
from codeward.gateway.names import plain_name


@dataclass(frozen=True)
class ApprovalRequest:
    """A call waiting for a yes or no: what would run, where, with which arguments."""

    name: str
    """The exposed name, ``alias__tool``."""
    alias: str
    tool: str
    arguments: Mapping[str, Any]
    description: str = ""
    annotations: Mapping[str, Any] = field(default_factory=dict)
    context: Any = field(default=None, compare=False, repr=False)
    """The caller's :class:`~codeward.context.ToolContext`, for prompts that go through its peer."""
    preview: Any = field(default=None, compare=False)
    """What a person should judge (:class:`codeward.previews.Preview`): the diff an edit would make, or
    the command a call would run; None when the arguments say it all."""

    def details(self) -> str:
        """The preview as a prompt shows it, after the call's summary ("" without one)."""
        if self.preview is None:
            return ""
        what = "the change it would make" if self.preview.kind == "diff" else "what it would run"
        return f"\n{what}:\n{self.preview.text.rstrip()}\n"

    def summary(self, width: int = 200) -> str:
        import json

        args = json.dumps(dict(self.arguments), ensure_ascii=False, default=str)
        if len(args) > width:
            args = args[: width - 3] + "..."
        return f"{self.name}({args})"


ConfirmCallback = Callable[[ApprovalRequest], Awaitable[bool]]
"""Asks someone (a person at a terminal, an MCP client, the control plane) to approve one call."""


async def deny_unlisted(request: ApprovalRequest) -> bool:
    """The confirm callback when nobody can be asked: every call needing approval is denied."""
    return False


async def approve_everything(request: ApprovalRequest) -> bool:
    """For tests and explicit ``--yes`` use only: approves every call."""
    return True


def matches(name: str, patterns: tuple[str, ...]) -> bool:
    """Exact names, or shell-style globs like ``alias__*`` (case-sensitive)."""
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


@dataclass(frozen=True)
class ToolFilter:
    """A server's ``allow``/``deny`` lists over its own tool names; deny wins; empty allow = all."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def of(cls, server: ServerConfig) -> ToolFilter:
        return cls(server.allow, server.deny)

    def offers(self, tool: str) -> bool:
        if self.deny and matches(tool, self.deny):
            return False
        return not self.allow or matches(tool, self.allow)


@dataclass(frozen=True)
class ApprovalPolicy:
    """Whether a call may run without confirmation. Immutable; built from the config alone."""

    auto_approve: tuple[str, ...] = ()
    read_only_auto_approve: bool = False
    per_server: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """alias → that server's own ``auto_approve`` (upstream tool names or globs)."""

    @classmethod
    def from_config(cls, config: GatewayConfig) -> ApprovalPolicy:
        return cls(
            auto_approve=tuple(config.auto_approve),
            read_only_auto_approve=config.read_only_auto_approve,
            per_server={s.alias: tuple(s.auto_approve) for s in config.servers if s.auto_approve},
        )

    def auto_approves(self, name: str, alias: str, tool: str, read_only: bool) -> bool:
        """True when ``name`` (exposed) may run without asking anyone."""
        if matches(name, self.auto_approve) or matches(plain_name(alias, tool), self.auto_approve):
            return True
        if matches(tool, self.per_server.get(alias, ())):
            return True
        return self.read_only_auto_approve and read_only

    def reason(self, name: str) -> str:
        """The hint a denied call carries: how the user can allow it for good."""
        alias = name.split("__", 1)[0]
        return (f"Ask the user to approve the call when prompted, or have them add {name!r} (or "
                f"'{alias}__*' for every tool of that server) to [mcp] auto_approve in codeward.toml.")
