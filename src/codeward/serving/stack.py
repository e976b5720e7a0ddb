"""One assembly: every command builds what it serves or calls through :func:`build_stack`.

A :class:`Stack` is, for one configuration and one set of roots: the workspace policy (roots
and the configured blacklist), the catalog (with the toolset filter), the services every call
shares (web, shell, beads, coding, registry settings, metrics), the output bound, the
registry's prompts and resources, the gateway's upstream servers where configured, and the
cross-cutting chain (observation, metrics, meta mode, approval) around all the tools. ``serve``,
``gateway``, ``call``, ``chat``/``ask``, ``index``, ``review``, ``run``, ``registry`` and
``servers`` all build one, so a setting means the same thing everywhere; they differ only in
what they ask the builder for (upstreams, meta mode, who approves calls).

The chain, outermost first::

    CallThrough (lean) → observers (audit, control plane) → RecordCalls (metrics) → Meta (--meta) → Approval → tools
                                                                                         └→ resources/read, prompts/get

(Meta's own tools — running or signing a registry item — pass the same Approval; ``call_tool`` is
made a call of the tool it names before any layer sees it; resource reads and prompt gets pass every
layer but the approval and meta mode, which wrap the tools only.) Each native tool's run has its own
steps inside the catalog (:func:`call_steps`).

By default the stack's listing is lean (:mod:`codeward.kernel.lean_listing`): :attr:`Stack.lean` says what
each session lists; every tool stays callable.

where *tools* are the native catalog (renamed by ``[mcp] native = "alias"`` on the gateway)
and the gateway's upstream tools, first name wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from codeward.approval.host_run import HostRunApproval
from codeward.audit.metrics import CallMetrics, RecordCalls
from codeward.config import Config, ConfigError, GatewayConfig, RegistrySettings
from codeward.engines.checkpoints.step import RecordChanges
from codeward.engines.registry.providers import registry_providers
from codeward.engines.registry.served import ServedTools
from codeward.gateway.native import Alias
from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import Middleware, chain
from codeward.kernel.context import CallInfo, Reporter, Services, ToolContext
from codeward.kernel.host_run import HostRunRules, ReaderOnFirstUse
from codeward.kernel.lean_listing import CallThrough, LeanListing, Toolset, listing_line, listing_tokens
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.session_toolsets import SessionToolsets
from codeward.kernel.steps import BoundOutput, CallStep, HoldWriteLocks, TrapErrors
from codeward.kernel.surface import CatalogSurface, CompositeSurface, ContentSurface, ToolInfo, ToolSurface
from codeward.kernel.workspace import Workspace
from codeward.serving.file_resources import FileResources
from codeward.tools import (
    CORE,
    CORE_TOOLS,
    DISCOVERY_TOOLSET,
    EVERY_TOOLSET,
    TOOLSET_SUMMARIES,
    default_catalog,
    served_catalog,
    toolset_choice,
)

if TYPE_CHECKING:
    from codeward.approval.policy import Approval, ConfirmCallback
    from codeward.gateway.gateway import Gateway
    from codeward.gateway.pins import PinStore
    from codeward.kernel.providers import PromptProvider, ResourceProvider
    from codeward.serving.server import CodewardServer


@dataclass(frozen=True)
class Approver:
    """Who is asked about calls the policy does not allow outright, and the command line's extra rules."""

    confirm: ConfirmCallback
    auto_approve: tuple[str, ...] = ()
    """Names or globs approved on top of ``[mcp] auto_approve`` (``--auto-approve``)."""
    native: bool = True
    """codeward's own writing and executing tools are asked about too (``False`` for ``codeward
    call``, where the person typed the call)."""


@dataclass
class Stack:
    """Everything one command run serves or calls, built from one configuration."""

    config: Config
    workspace: Workspace
    roots_given: bool
    """Roots came from the command line or the config (not the working-directory default)."""
    catalog: Catalog
    services: Services
    gateway_config: GatewayConfig
    surface: ToolSurface
    """Every tool behind the whole chain: what servers serve and commands call."""
    native_names: tuple[str, ...]
    """The native tools as this stack exposes them (``cw__read_file`` under ``[mcp] native = "cw"``)."""
    native_tools: bool = True
    """codeward's own tools are served; without them (a gateway with ``native = false``) its server offers
    none of codeward's own resources or prompts either: the workspace's files are not its to show."""
    gateway: Gateway | None = None
    resource_providers: tuple[ResourceProvider, ...] = ()
    prompt_providers: tuple[PromptProvider, ...] = ()
    middleware: tuple[Middleware, ...] = field(default=())
    approved: ToolSurface | None = None
    """The tools behind the approval only (what :meth:`meta_surface` puts the meta-tools in front of)."""
    content: ContentSurface | None = None
    """Resource reads and prompt gets, beside the approved tools inside the chain (never asked about)."""
    approval: Approval | None = None
    meta: bool = False
    """The stack lists only the four meta-tools (``--meta``)."""
    lean: LeanListing | None = None
    """What each session lists when the listing is lean (``[server] toolsets`` unset or naming ``core``);
    None when every tool is listed."""
    _meta_surface: ToolSurface | None = field(default=None, repr=False)

    @property
    def settings(self) -> Any:
        return self.config.settings

    def context(self, *, reporter: Reporter | None = None, workspace: Workspace | None = None,
                toolsets: SessionToolsets | None = None) -> ToolContext:
        """A context for one direct call (outside an MCP server), with this stack's policy and services;
        ``toolsets``: the calling session's (an agent conversation's) enabled toolsets."""
        ctx = ToolContext(workspace or self.workspace, settings=self.config.settings, services=self.services,
                          call=CallInfo(toolsets=toolsets))
        return ctx if reporter is None else ctx.child(reporter=reporter)

    async def acall(self, name: str, arguments: dict[str, Any] | None, ctx: ToolContext | None = None) -> ToolOutcome:
        """One call through the whole chain."""
        return await self.surface.call(name, arguments, ctx or self.context())

    def meta_surface(self) -> ToolSurface:
        """The same tools in meta mode: the four meta-tools in front, the same chain around them
        (the agent offers it when not even a trimmed catalog fits the model's context)."""
        if self.meta or self.approved is None:
            return self.surface
        if self._meta_surface is None:
            from codeward.tools.meta import Meta

            # the approval layers are already inside ``approved``
            outer = [m for m in self.middleware if m is not self.approval and not isinstance(m, HostRunApproval)]
            inside = self.approved if self.content is None else CompositeSurface([self.approved, self.content])
            self._meta_surface = chain(inside, [*outer, Meta(guard=self.approval, steps=call_steps())])
        return self._meta_surface

    def listing_line(self) -> str:
        """What a fresh client session lists and its cost in tokens a request (the banners' line)."""
        infos = self.surface.tool_infos()
        if self.meta:
            return f"listing the {len(infos)} meta-tools, ~{listing_tokens(infos):,} tokens a request"
        return listing_line(infos, self.lean)

    def server(self, *, name: str = "codeward", roots_from_client: bool = False) -> CodewardServer:
        """An MCP server over this stack (tools, the files and the registry's resources, prompts)."""
        from codeward.serving.server import CodewardServer

        native = self.native_tools  # a gateway without native tools serves none of codeward's own content
        server = CodewardServer(self.surface, self.workspace, settings=self.config.settings, services=self.services,
                                roots_from_client=roots_from_client,
                                resource_providers=self.resource_providers if native else (),
                                prompt_providers=self.prompt_providers if native else (), name=name,
                                tools_can_change=self.gateway is not None,
                                relayed=self.gateway.content if self.gateway is not None else None, files=native,
                                unavailable=self.gateway.unavailable if self.gateway is not None else None,
                                lean=self.lean)
        if self.gateway is not None:
            self.gateway.subscribe(server.tools_changed)  # an upstream's list_changed reaches our clients
            if server.notifier is not None:  # and its resource and prompt changes, and its log lines
                self.gateway.notify_to(server.notifier)
        return server

    async def __aenter__(self) -> Stack:
        """Connect the upstream servers (if any) and wait until each is ready or has failed."""
        if self.gateway is not None:
            await self.gateway.__aenter__()
            try:
                settled = await self.gateway.wait_settled(self.gateway_config.startup_wait)
                if not settled:  # a failed server was reported as it failed; one still starting is told here
                    import logging

                    for note in self.gateway.unavailable():
                        if "still starting" in note:
                            logging.getLogger("codeward.gateway").warning("gateway: %s", note)
            except BaseException:
                await self.gateway.__aexit__(None, None, None)
                raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            if self.gateway is not None:
                await self.gateway.__aexit__(exc_type, exc, tb)
        finally:
            self.close()

    def close(self) -> None:
        """Stop what the services started (warm sandboxes, sessions)."""
        self.services.runtimes.close()


def workspace_for(config: Config, roots: Sequence[str | Path] = (), *,
                  protected: Sequence[Path] = ()) -> Workspace:
    """The policy over the given roots, else the config's, else the working directory.

    The configuration files codeward read (``config.path`` and ``protected``: a gateway's
    mcpServers file and pins) are never writable by a tool (see ``Workspace.write_verdict``); the
    files the human's tools run later (``[server] host_run_paths`` and the built-in list, and each
    repository's hooks folder) only with a person's yes.
    """
    chosen: Sequence[str | Path] = list(roots) or list(config.roots) or [Path.cwd()]
    for root in chosen:
        if not Path(root).expanduser().is_dir():
            raise ConfigError(f"root {str(root)!r} is not a directory; pass an existing directory")
    files = [path for path in (config.path, *protected) if path is not None]
    host_run = HostRunRules(configured=config.server.host_run_paths,
                            hooks_path=ReaderOnFirstUse("codeward.engines.git.hooks_path:HooksPaths"))
    return Workspace.create(chosen, extra_blacklist=config.blacklist, protected=files, host_run=host_run)


def call_steps() -> tuple[CallStep, ...]:
    """The steps around each run of a native tool, outermost first (:mod:`codeward.kernel.steps`): its
    output bounded, its file locks held, what it changes recorded (``undo``), its bugs trapped."""
    return BoundOutput(), HoldWriteLocks(), RecordChanges(), TrapErrors()


def services_for(config: Config) -> Services:
    """What every call of one stack shares: every configuration table as a typed slot, a fresh call
    recorder and fresh runtimes (the one code-execution runtime, made on first use)."""
    return Services(*config.tables(), CallMetrics())


def catalog_for(config: Config) -> Catalog:
    """The tools the config's ``[server] toolsets`` serves, listed or reachable (an unknown toolset is an
    error); unset, every toolset but the opt-in ones (:data:`codeward.tools.OPT_IN_TOOLSETS`). Each call runs
    through :func:`call_steps`."""
    if config.toolsets is not None:
        known = [name for name in default_catalog().toolsets() if name != DISCOVERY_TOOLSET]
        unknown = set(config.toolsets) - set(known) - {CORE, EVERY_TOOLSET}
        if unknown:
            raise ConfigError(f"unknown toolsets in config: {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(known)}, or \"{CORE}\" (the lean listing) and \"{EVERY_TOOLSET}\"")
    return served_catalog(toolset_choice(config.toolsets)).with_steps(call_steps())


def lean_listing(config: Config, catalog: Catalog, surface: ToolSurface, prefix: str = "") -> LeanListing | None:
    """What each session of a lean stack lists (None when the config lists every served tool)."""
    choice = toolset_choice(config.toolsets)
    if not choice.lean:
        return None
    toolsets = [Toolset(name, TOOLSET_SUMMARIES.get(name, ""),
                        tuple(prefix + spec.name for spec in catalog if spec.toolset == name))
                for name in catalog.toolsets()]
    return LeanListing(tuple(toolsets), frozenset(prefix + name for name in CORE_TOOLS if name in catalog),
                       listed=choice.listed, prefix=prefix, infos=surface.tool_infos)


def _native_unlisted(catalog: Catalog, native: bool | str) -> Callable[[str], ToolInfo | None]:
    """The native tool an unlisted name runs (a seed name kept as an alias), as the policy should see it."""
    prefix = f"{native}__" if isinstance(native, str) else ""

    def describe(name: str) -> ToolInfo | None:
        if native is False or not name.startswith(prefix):
            return None
        spec = catalog.get(name[len(prefix):])
        return replace(ToolInfo.from_spec(spec), name=name) if spec is not None else None

    return describe


def build_stack(
    config: Config,
    roots: Sequence[str | Path] = (),
    *,
    gateway: GatewayConfig | None = None,
    upstreams: bool = False,
    only: str | None = None,
    native: bool | str = True,
    meta: bool = False,
    approver: Approver | None = None,
    observers: Sequence[Middleware] = (),
    pins: PinStore | None = None,
) -> Stack:
    """The stack of one command run.

    ``gateway`` replaces the config's ``[mcp]`` table (with ``--url`` servers added, say);
    ``upstreams`` connects its servers (``only``: just that alias); ``native`` exposes the native
    tools under their names (``True``), an alias (``"cw"``) or not at all (``False``); ``meta``
    lists only the registry's four meta-tools; ``approver`` puts the approval policy in the
    chain; ``observers`` go outermost (the control plane's); ``pins`` keeps the gateway's tool pins
    there (shared by replicas) instead of ``[mcp] pin_file``.
    """
    gateway_config = gateway if gateway is not None else config.mcp
    workspace = workspace_for(config, roots, protected=[path for path in (gateway_config.source,
                                                                          gateway_config.pin_file) if path])
    catalog = catalog_for(config)
    services = services_for(config)
    if only is not None:
        server = gateway_config.server(only)
        if server is None:
            raise ConfigError(f"no MCP server named {only!r} is configured; configured: "
                              f"{', '.join(s.alias for s in gateway_config.servers) or 'none'}")
        gateway_config = gateway_config.only(only)

    parts: list[ToolSurface] = []
    native_names: tuple[str, ...] = ()
    lean: LeanListing | None = None
    if native is not False:
        native_surface = chain(CatalogSurface(catalog), [Alias(native)] if isinstance(native, str) else [])
        native_names = tuple(info.name for info in native_surface.tool_infos())
        parts.append(native_surface)
        if not meta:
            lean = lean_listing(config, catalog, native_surface, f"{native}__" if isinstance(native, str) else "")
    upstream: Gateway | None = None
    if upstreams:  # even without servers: the agent's `:mcp connect` adds them at run time
        from codeward.gateway.gateway import Gateway

        upstream = Gateway(gateway_config, reserved_names=native_names, pins=pins)
        parts.append(upstream)
    tools: ToolSurface = parts[0] if len(parts) == 1 else CompositeSurface(parts)

    approval: Approval | None = None
    if approver is not None:  # the policy and its previews come with the first stack that asks
        from codeward.approval.policy import Approval, ApprovalPolicy
        from codeward.approval.registry_items import registry_underlying

        policy = ApprovalPolicy.from_config(gateway_config, approver.auto_approve)
        approval = Approval(policy, approver.confirm, native=approver.native,
                            trusted_digest=upstream.trusted_digest if upstream is not None else None,
                            unlisted=_native_unlisted(catalog, native), catalog=catalog,
                            underlying=registry_underlying)
    # without an approver (plain serve) the client's user is asked, by elicitation
    host_run = HostRunApproval(approver.confirm if approver is not None else None, catalog)
    inner: list[Middleware] = [*([approval] if approval is not None else []), host_run]
    approved = chain(tools, inner)
    outer: list[Middleware] = [*([CallThrough(lean)] if lean is not None else []), *observers]
    metrics = services.find(CallMetrics)
    if metrics is not None:
        outer.append(RecordCalls(metrics))
    if meta:
        from codeward.tools.meta import Meta

        outer.append(Meta(guard=approval, steps=call_steps()))
    else:
        services = services.with_values(ServedTools(approved), *([lean] if lean is not None else []))

    prompts, knowledge = registry_providers(services.get(RegistrySettings))
    # a gateway without native tools serves none of codeward's own content: the files are not its to show
    content = ContentSurface((FileResources(), knowledge), (prompts,)) if native is not False else ContentSurface()
    return Stack(config=config, workspace=workspace, roots_given=bool(roots) or bool(config.roots), catalog=catalog,
                 services=services, gateway_config=gateway_config,
                 surface=chain(CompositeSurface([approved, content]), outer), content=content,
                 native_names=native_names, native_tools=native is not False, gateway=upstream,
                 resource_providers=(knowledge,),
                 prompt_providers=(prompts,), middleware=(*outer, *inner), approved=approved,
                 approval=approval, meta=meta, lean=lean)
