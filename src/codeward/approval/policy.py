"""Which upstream tools are offered at all (allow/deny), and which calls run without asking.

The policy is built once from the configuration and is immutable: nothing a model sends and
nothing an upstream server announces can change it. The only upstream input it ever reads is
a tool's ``readOnlyHint`` — and only when the user opted in with ``read_only_auto_approve``.
:class:`Approval` enforces it as one middleware of the chain, for native and upstream tools
alike, on every surface that has someone to ask (the gateway, the agent, ``codeward call``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio.to_thread

from codeward.approval.previews import preview_call
from codeward.gateway.config import GatewayConfig
from codeward.gateway.names import matches, plain_name
from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import Middleware, ToolCall, tool_info
from codeward.kernel.context import ToolContext
from codeward.kernel.host_run import EVERY_WRITE
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorInfo, ErrorKind
from codeward.kernel.surface import ToolInfo, ToolOrigin, ToolSurface

logger = logging.getLogger("codeward.approval")

REGISTRY_ORIGIN = "registry:"
"""The origin server of registry tools run through ``registry_execute``: rules name them
``registry:NAME`` (or ``registry:*``), a form no upstream alias can take."""


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
    """The caller's :class:`~codeward.kernel.context.ToolContext`, for prompts that go through its peer."""
    changed: bool = False
    """The tool's definition differs from the one its auto-approval was given for."""
    preview: Any = field(default=None, compare=False)
    """What a person should judge (:class:`codeward.approval.previews.Preview`): the diff an edit would make, or
    the command a call would run; None when the arguments say it all."""
    decided_by: list[str] = field(default_factory=list, compare=False, repr=False)
    """Who answered, noted by the asker whose answer decided (``console``, ``terminal``, a user who
    answered on another replica), for the audit; empty when no asker says."""
    withdrawn: list[str] = field(default_factory=list, compare=False, repr=False)
    """Why nobody could answer (the server holding the call is stopping), noted by the asker that gave
    the call back; the refusal's hint says it instead of the policy's reason."""

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


@dataclass(frozen=True)
class Underlying:
    """What a call really runs, judged instead of the call itself (``registry_execute`` runs another
    tool: approving it must not approve everything it can run)."""

    info: ToolInfo | None
    """The tool that would run; ``None``: nothing to judge at this call — it only reads, or the
    tool it reaches is a listed one, judged when that call passes this middleware."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    always_ask: bool = False
    """Only a person may decide this (signing, a first install): no rule approves it."""


UnderlyingCall = Callable[[ToolCall, ToolInfo], Awaitable["Underlying | None"]]
"""For a call of a tool that runs others: what it would run (``None``: judge the call itself)."""

ConfirmCallback = Callable[[ApprovalRequest], Awaitable[bool]]
"""Asks someone (a person at a terminal, an MCP client, the control plane) to approve one call."""


async def deny_unlisted(request: ApprovalRequest) -> bool:
    """The confirm callback when nobody can be asked: every call needing approval is denied."""
    return False


async def approve_everything(request: ApprovalRequest) -> bool:
    """For tests and explicit ``--yes`` use only: approves every call."""
    return True


@dataclass(frozen=True)
class ApprovalPolicy:
    """Whether a call may run without confirmation. Immutable; built from the config alone.

    Rules bind to what a tool *is* (:class:`~codeward.kernel.surface.ToolOrigin`), not to the name it
    happens to be listed under: ``fs__read_file`` means the tool ``read_file`` of server ``fs``,
    so a tool that later takes over an exposed name never inherits another's approval.
    """

    auto_approve: tuple[str, ...] = ()
    read_only_auto_approve: bool = False
    """Trust upstream servers' ``readOnlyHint`` (codeward's own read-only tools always run)."""
    per_server: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """alias → that server's own ``auto_approve`` (upstream tool names or globs)."""

    @classmethod
    def from_config(cls, config: GatewayConfig, extra: tuple[str, ...] = ()) -> ApprovalPolicy:
        return cls(
            auto_approve=(*config.auto_approve, *extra),
            read_only_auto_approve=config.read_only_auto_approve,
            per_server={s.alias: tuple(s.auto_approve) for s in config.servers if s.auto_approve},
        )

    def auto_approves(self, info: ToolInfo) -> bool:
        """True when the listed tool ``info`` may run without asking anyone."""
        origin = info.origin
        if origin is None:  # provenance unknown: nothing but an exact rule for its name
            return info.name in self.auto_approve
        if origin.server == REGISTRY_ORIGIN:  # a registry tool: `registry:NAME` rules only, never read-only
            return matches(f"{REGISTRY_ORIGIN}{origin.tool}", self.auto_approve)
        if origin.native:
            return matches(info.name, self.auto_approve) or matches(origin.tool, self.auto_approve) or info.read_only
        if matches(plain_name(origin.server, origin.tool), self.auto_approve):
            return True
        if matches(origin.tool, self.per_server.get(origin.server, ())):
            return True
        return self.read_only_auto_approve and info.read_only

    def reason(self, name: str) -> str:
        """The hint a denied call carries: how the user can allow it for good."""
        split = name.split("__", 1)
        every = f" (or '{split[0]}__*' for every tool of that server)" if len(split) == 2 else ""
        return (f"Ask the user to approve the call when prompted, or have them add {name!r}{every} to "
                "[mcp] auto_approve in codeward.toml.")


PERSON_ONLY = ("Only a person can approve this (no rule does): ask the user to approve it when prompted, or to do "
               "it themselves on the command line (e.g. `codeward sign NAME`).")

TrustedDigest = Callable[[ToolOrigin], "str | None"]
"""The definition an approval rule was given for (a pinned digest), or None to trust the first seen."""


class Approval(Middleware):
    """Calls the policy does not allow outright go to ``confirm``; a denied call does not run.

    An auto-approval holds for the definition it was first given to (the pinned one when pins
    are kept, else the first seen in this run): a tool redefined since is asked about again.
    ``native=False`` lets codeward's own tools through unasked (``codeward call``: the person
    typed the call).
    """

    def __init__(self, policy: ApprovalPolicy, confirm: ConfirmCallback, *, native: bool = True,
                 trusted_digest: TrustedDigest | None = None,
                 unlisted: Callable[[str], ToolInfo | None] | None = None,
                 catalog: Catalog | None = None,
                 underlying: UnderlyingCall | None = None) -> None:
        self.policy = policy
        self.confirm = confirm
        self.native = native
        self.trusted_digest = trusted_digest
        self.unlisted = unlisted
        """What a name that runs without being listed is (a native tool's alias), for the policy."""
        self.catalog = catalog
        """The native tools, for the diff a prompt shows (the call run on copies of its files)."""
        self.underlying = underlying
        """What a call of a tool that runs others (``registry_execute``) would run, judged instead."""
        self._first_seen: dict[tuple[bool, str, str], str] = {}
        self._lock = threading.Lock()

    def _definition_holds(self, origin: ToolOrigin) -> bool:
        trusted = self.trusted_digest(origin) if self.trusted_digest is not None and not origin.native else None
        if trusted is None:
            with self._lock:
                trusted = self._first_seen.setdefault((origin.native, origin.server, origin.tool), origin.digest)
        return trusted == origin.digest

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        info = tool_info(inner, call.name) or (self.unlisted(call.name) if self.unlisted is not None else None)
        if info is None:  # nothing runs under this name: the inner layers say why
            return await inner.call(call.name, call.arguments, call.ctx)
        origin = info.origin
        ctx = call.ctx
        if origin is not None and origin.native and not self.native:  # the person typed this call
            return await inner.call(call.name, call.arguments, by_person(ctx, writes=True))
        arguments: Mapping[str, Any] = dict(call.arguments or {})
        always_ask = replaced = False
        if self.underlying is not None and origin is not None and origin.native:
            under = await self.underlying(call, info)
            if under is not None:
                if under.info is None:
                    return await inner.call(call.name, call.arguments, ctx)
                info, arguments, always_ask, replaced = under.info, under.arguments, under.always_ask, True
                origin = info.origin
        name = info.name if replaced else call.name
        changed = origin is not None and not self._definition_holds(origin)
        waited = 0.0
        if info.ask_always or always_ask or changed or not self.policy.auto_approves(info):
            preview = None
            if not replaced:  # a registry tool's prompt describes it; the call's own preview would not
                native = origin is not None and origin.native
                preview = await anyio.to_thread.run_sync(
                    preview_call, self.catalog if native else None, origin.tool if origin else call.name,
                    dict(arguments), ctx)
            request = ApprovalRequest(
                name, origin.server if origin else info.source, origin.tool if origin else name,
                dict(arguments), info.description, dict(info.annotations or {}), context=ctx, changed=changed,
                preview=preview)
            asked = time.perf_counter()
            approved = await self._ask(request)
            waited = time.perf_counter() - asked  # a person's think time, not the tool's latency
            if not approved:
                hint = (request.withdrawn[-1] if request.withdrawn else PERSON_ONLY if always_ask else
                        "Ask the user to approve the call when prompted (it always asks)." if info.ask_always
                        else self.policy.reason(name))
                denied = _denied(name, hint, changed)
                denied.name = call.name
                denied.waited = waited
                return denied
            # a tool asking a person itself does not ask again; having seen the whole diff, the person
            # approved its host-run writes too (a command's text does not show what it will write)
            ctx = by_person(ctx, writes=preview is not None and preview.kind == "diff")
        outcome = await inner.call(call.name, call.arguments, ctx)
        outcome.waited += waited
        return outcome

    async def _ask(self, request: ApprovalRequest) -> bool:
        try:
            return bool(await self.confirm(request))
        except Exception as exc:  # a broken prompt denies, never approves
            logger.warning("approval prompt for %s failed (%s); denying", request.name, exc)
            return False


def by_person(ctx: ToolContext, *, writes: bool) -> ToolContext:
    """The call's context marked as approved by a person (who typed it or said yes to it); with
    ``writes``, its writes of files the host runs later too (they typed it, or saw its whole diff)."""
    workspace = ctx.workspace.with_host_run_consent(EVERY_WRITE) if writes else ctx.workspace
    return ctx.child(call=replace(ctx.call, approved=True), workspace=workspace)


def _denied(name: str, hint: str, changed: bool) -> ToolOutcome:
    why = (" (its definition changed since it was approved: review it, then run `codeward servers --repin`)"
           if changed else "")
    error = ErrorInfo(ErrorKind.PERMISSION, f"the call to {name} was not approved, so it did not run{why}", hint,
                      source="approval-policy")
    return ToolOutcome(name, error.render(), True, [error], seconds=0.0)
