"""An agent session: a model client over the stack every command builds (:mod:`codeward.serving.stack`).

Both ``codeward chat`` and ``codeward ask`` open an :class:`AgentSession`; they differ only
in how they ask for approval and how they show things. The tools, their policy, approval and
observation come from :func:`codeward.serving.stack.build_stack`, the same as on ``serve`` and the
gateway; what one request offers of them (full, trimmed, meta) is planned here against the
model's context window.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.approval.policy import ConfirmCallback
from codeward.apps.agent.budget import CatalogChoice, CatalogPlan, group_tools, plan_catalog, schema_tokens
from codeward.apps.agent.loop import LoopSettings
from codeward.apps.agent.offered import Offered
from codeward.config import Config
from codeward.config.model_profile import ModelProfile
from codeward.engines.llm.client import ModelClient
from codeward.engines.llm.window import DEFAULT_CONTEXT_TOKENS, ContextWindow, discover_window
from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import Middleware, chain
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.lean_listing import LeanListing
from codeward.kernel.session_toolsets import SessionToolsets
from codeward.kernel.surface import ToolSurface
from codeward.kernel.workspace import Workspace
from codeward.serving.stack import Approver, Stack, build_stack

if TYPE_CHECKING:
    from codeward.gateway.gateway import Gateway


SYSTEM_PROMPT = """You are codeward's coding assistant, working in the project folder `{name}`.
You have tools in this request's `tools` field: call a tool by emitting a tool call; its result
arrives in the next turn. Paths are relative to the project folder. Read files before you change
them; prefer small exact edits. Use tools for file reads, code navigation and edits; write a line
`CMD: <command>` to propose a local shell command, which the user may run.
When you have what you need, answer in plain text."""


@dataclass
class AgentSession:
    profile: ModelProfile
    client: ModelClient
    stack: Stack
    workspace: Workspace
    """The policy of the next call (the chat narrows it to the tracked files before each request)."""
    settings: LoopSettings
    client_factory: Callable[[ModelProfile], ModelClient] = ModelClient
    """How :meth:`switch_model` makes the new client (the control plane swaps in an observed one)."""
    retired: list[ModelClient] = field(default_factory=list)
    """Clients replaced by :meth:`switch_model`; closed with the session (a reply may still stream)."""
    window: ContextWindow = field(default_factory=lambda: ContextWindow(DEFAULT_CONTEXT_TOKENS, "default"))
    """The model's context, learned by :meth:`learn_window`."""
    choice: CatalogChoice = field(default_factory=CatalogChoice)
    plan: CatalogPlan | None = None
    """What the last request offered."""
    toolsets: SessionToolsets = field(default_factory=SessionToolsets)
    """The toolsets the model enabled in this conversation (a lean stack's ``toolsets`` tool)."""

    @property
    def config(self) -> Config:
        return self.stack.config

    @property
    def catalog(self) -> Catalog:
        return self.stack.catalog

    @property
    def surface(self) -> ToolSurface:
        return self.stack.surface

    @property
    def meta(self) -> ToolSurface:
        """The surface of meta mode: the four meta-tools in front of the same chain."""
        return self.stack.meta_surface()

    @property
    def gateway(self) -> Gateway:
        """The upstream servers (none at first, unless configured; ``:mcp connect`` adds more)."""
        assert self.stack.gateway is not None, "an agent's stack always has a gateway"
        return self.stack.gateway

    @property
    def services(self) -> Services:
        return self.stack.services

    async def learn_window(self) -> ContextWindow:
        """Ask the profile, else the server, how many tokens the model takes."""
        self.window = await discover_window(self.profile)
        return self.window

    def toolset_of(self, name: str) -> str | None:
        spec = self.catalog.get(name)
        return spec.toolset if spec is not None else None

    def groups(self) -> list[str]:
        """The toolsets (and gateway servers) the session can offer."""
        return [g.name for g in group_tools(self.surface.tool_infos(), self.toolset_of)]

    def offer(self, text: str, used_tokens: int) -> tuple[ToolSurface, CatalogPlan]:
        """The surface for a request about ``text`` whose conversation already takes ``used_tokens``.

        Chosen by the model's context: every tool when they fit, else trimmed, else meta. On a lean stack
        the trimmed offer's core is the lean listing's (the discovery tools among it, so every tool stays one
        call away), and a toolset the model enables is offered from then on."""
        lean = self.stack.lean if self.choice.toolsets is None else None
        toolset_of = self.toolset_of
        if lean is not None:
            def toolset_of(name: str) -> str | None:
                return "core" if name in lean.core else self.toolset_of(name)
        groups = group_tools(self.surface.tool_infos(), toolset_of)
        meta = self.meta
        plan = plan_catalog(groups, schema_tokens(meta.tool_infos()), self.window, used_tokens,
                            self.profile.max_tokens, text, meta=self.choice.meta, toolsets=self.choice.toolsets)
        self.plan = plan
        if plan.form == "full":
            return self.surface, plan
        if plan.form == "meta":
            return meta, plan
        names = [info.name for g in groups if g.name in plan.toolsets for info in g.infos]
        if lean is None:
            return chain(self.surface, [Offered(names)]), plan
        return chain(self.surface, [Offered(names, later=_enabled(lean, self.toolsets))]), plan

    def context(self) -> ToolContext:
        return self.stack.context(workspace=self.workspace, toolsets=self.toolsets)

    def system_prompt(self) -> str:
        """Names the project folder, not its path: the prompt is the same wherever the project lives
        (so a greedy local model answers alike), and tools take relative paths anyway."""
        return SYSTEM_PROMPT.format(name=self.workspace.primary.name)

    def switch_model(self, profile: ModelProfile) -> None:
        self.retired.append(self.client)
        self.profile = profile
        self.client = self.client_factory(profile)
        self.settings.text_tool_calls = profile.text_tool_calls


def _enabled(lean: LeanListing, toolsets: SessionToolsets) -> Callable[[str], bool]:
    """Whether a tool belongs to a toolset the model enabled (offered from then on, whatever the plan trimmed:
    the model asked for it)."""

    def enabled(name: str) -> bool:
        toolset = lean.toolset_of(name)
        return toolset is not None and toolset in toolsets.enabled

    return enabled


def choice_problem(session: AgentSession) -> str | None:
    """What is wrong with ``--toolsets`` (names the session does not have), or None."""
    wanted = session.choice.toolsets
    if wanted is None:
        return None
    known = session.groups()
    unknown = [name for name in wanted if name not in known]
    if unknown:
        return (f"--toolsets: no toolset named {', '.join(map(repr, unknown))}; this session has "
                f"{', '.join(known)} (the [server] toolsets of codeward.toml and the gateway's servers)")
    if not wanted:
        return f"--toolsets needs at least one name; this session has {', '.join(known)}"
    return None


@asynccontextmanager
async def open_session(
    config: Config,
    *,
    model: str | None,
    confirm: ConfirmCallback,
    roots: Sequence[str | Path] = (),
    auto_approve: Sequence[str] = (),
    observers: Sequence[Middleware] = (),
    choice: CatalogChoice | None = None,
) -> AsyncIterator[AgentSession]:
    """Everything a conversation needs, with the gateway's upstream servers connected and the
    model's context window learned.

    Calls the policy does not allow outright go to ``confirm``; ``auto_approve`` adds names or
    globs to ``[mcp] auto_approve``; ``observers`` go outermost in the chain (the control plane).
    """
    profile = config.model.resolve(model)
    stack = build_stack(config, roots, upstreams=True, approver=Approver(confirm, tuple(auto_approve)),
                        observers=observers)
    client = ModelClient(profile)
    settings = LoopSettings(max_tool_depth=stack.gateway_config.max_tool_depth,
                            text_tool_calls=profile.text_tool_calls)
    clients = [client]
    problem: str | None = None
    try:
        async with stack:
            session = AgentSession(profile, client, stack, stack.workspace, settings, choice=choice or CatalogChoice())
            problem = choice_problem(session)
            if problem is None:
                await session.learn_window()
                try:
                    yield session
                finally:
                    clients = [*session.retired, session.client]
    finally:
        for each in dict.fromkeys(clients):  # every client the session made, once
            await each.close()
    if problem is not None:  # raised out here: inside the gateway's task group it would arrive wrapped
        raise ValueError(problem)
