"""The gateway: many upstream servers served as one namespaced tool surface.

:class:`Gateway` is a :class:`~codeward.kernel.surface.ToolSurface` (``tool_infos``, ``has``,
``call``), so the MCP server, the agent and the CLI use it like the native catalog. It
offers only what each server's allow/deny lists and the pins let through; whether a call
may run is decided outside it, by the approval middleware of the stack's chain (each listed
tool carries its :class:`~codeward.kernel.surface.ToolOrigin` for that). Use it
as an async context manager: entering starts every upstream connection in parallel (each
with its own deadline) and returns at once; :meth:`Gateway.wait_settled` waits until every
server is either ready or reported failed.

Pins live in a :class:`~codeward.gateway.pins.PinStore`. With a shared one (Redis, for replicas)
the gateway keeps a mirror for its tool list, follows the store's changes, and checks every
upstream call against the store itself: a tool redefined since another replica pinned it is
refused here too, and a call whose pin cannot be checked (Redis down) is refused with that error.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import mcp_types as types

from codeward.gateway.config import GatewayConfig, ServerConfig
from codeward.gateway.content import UpstreamContent
from codeward.gateway.errors import UpstreamError
from codeward.gateway.names import ToolFilter, ToolRef, assign_names, plain_name, split_name
from codeward.gateway.pending import PendingRequests, RoundExpired
from codeward.gateway.pins import PinFile, PinStore, PinVerdict, tool_fingerprint
from codeward.gateway.relay import Relay, link_of
from codeward.gateway.results import outcome_from_error, outcome_from_result, outcome_from_upstream_error
from codeward.gateway.upstream import ServerState, ServerStatus, Upstream
from codeward.gateway.uris import expose_uri
from codeward.kernel.client_link import ClientLink
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorInfo, ErrorKind
from codeward.kernel.state_unavailable import StateUnavailable
from codeward.kernel.surface import ToolInfo, ToolOrigin, unknown_tool

logger = logging.getLogger("codeward.gateway")

T = TypeVar("T")

PIN_POLL_S = 2.0
"""How often a gateway on shared pins looks for pins taken or re-approved on other replicas (its calls
are checked against the store every time; this only refreshes its tool list)."""


class Notices(Protocol):
    """Who hears of the upstreams' changes besides the tool list (the MCP server, for its clients)."""

    def changed(self, kind: str) -> None:
        """The ``resources`` or ``prompts`` list changed (called on the event loop)."""

    def updated(self, uri: str) -> None:
        """The resource the gateway serves as ``uri`` changed."""

    def forward(self, method: str, params: dict[str, Any]) -> None:
        """An upstream's notification for the gateway's clients at large (``notifications/elicitation/complete``)."""

    async def log(self, level: str, data: Any, logger_name: str | None) -> None:
        """An upstream logged outside any call (``logger_name`` is namespaced ``alias__name``)."""


@dataclass(frozen=True)
class _Entry:
    info: ToolInfo
    ref: ToolRef
    read_only: bool
    idempotent: bool


class Gateway:
    """Connects the configured upstream servers and serves their tools as ``alias__tool``."""

    def __init__(
        self,
        config: GatewayConfig,
        *,
        reserved_names: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
        retries: int = 6,
        backoff: float = 0.25,
        pins: PinStore | None = None,
    ) -> None:
        self.config = config
        self._reserved = frozenset(reserved_names)
        self._environ = environ
        self._retries = retries
        self._backoff = backoff
        self._upstreams: dict[str, Upstream] = {}
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._filters: dict[str, ToolFilter] = {s.alias: ToolFilter.of(s) for s in config.servers}
        self._table: dict[str, _Entry] = {}
        self._infos: list[ToolInfo] = []
        self._withheld: dict[str, str] = {}
        self._pin_alerts: dict[str, str] = {}
        self._pins: PinFile | None = None
        """The pins the tool list is checked against: the file, or the mirror of a shared store."""
        self._store: PinStore | None = pins if pins is not None and pins.shared else None
        self._unclaimed: dict[str, str] = {}
        self._withheld_refs: dict[str, tuple[str, str, str]] = {}
        self._store_down = False
        self._subscribers: list[Callable[[], None]] = []
        self._tg: anyio.abc.TaskGroup | None = None
        self._pending = PendingRequests()
        self._notices: list[Notices] = []
        self._ready: set[str] = set()
        self.content = UpstreamContent(lambda: self._upstreams, self.relayed, name_limit=config.max_name_length)
        """The upstreams' resources, templates, prompts and completions (:mod:`codeward.gateway.content`)."""

    # -- lifecycle -----------------------------------------------------------------------------

    async def __aenter__(self) -> Gateway:
        if self.config.pin == "off":
            self._store = None
        elif self._store is not None:
            self._pins = PinFile.memory()
            await self._sync_pins()
        elif self.config.pin_file is not None:
            self._pins = PinFile.open(self.config.pin_file)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        if self._store is not None:
            self._tg.start_soon(self._follow_pins)
        for server in self.config.servers:
            self._start(server)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(exc_type, exc, tb)
        self._tg = None

    def _start(self, server: ServerConfig) -> Upstream:
        assert self._tg is not None, "use the gateway inside 'async with'"
        upstream = Upstream(server, on_change=self._upstream_changed, on_event=self._upstream_event,
                            out_of_call_log=self._out_of_call_log, retries=self._retries, backoff=self._backoff,
                            environ=self._environ)
        self._upstreams[server.alias] = upstream
        self._filters[server.alias] = ToolFilter.of(server)
        scope = anyio.CancelScope()
        self._scopes[server.alias] = scope

        async def supervise() -> None:
            with scope:
                await upstream.run()

        self._tg.start_soon(supervise)
        return upstream

    async def wait_settled(self, timeout: float | None = None) -> bool:
        """Wait until every server is ready or failed; False if ``timeout`` ran out first."""
        with anyio.move_on_after(timeout if timeout is not None else self.config.startup_wait) as scope:
            for upstream in list(self._upstreams.values()):
                await upstream.settled.wait()
            if self._store is not None:  # the list checked against the pins every replica shares
                await self._sync_pins()
        return not scope.cancelled_caught

    async def add_server(self, server: ServerConfig) -> Upstream:
        """Connect one more server at run time (``:mcp connect``); returns once it is settled."""
        if server.alias in self._upstreams:
            raise ValueError(f"a server named {server.alias!r} is already connected; choose another alias")
        upstream = self._start(server)
        await upstream.settled.wait()
        return upstream

    def remove_server(self, alias: str) -> bool:
        """Disconnect a server and withdraw its tools (``:mcp disconnect``)."""
        scope = self._scopes.pop(alias, None)
        self._upstreams.pop(alias, None)
        if scope is None:
            return False
        scope.cancel()
        self._rebuild()
        return True

    def reconnect(self, alias: str) -> bool:
        upstream = self._upstreams.get(alias)
        if upstream is None:
            return False
        upstream.reconnect()
        return True

    def subscribe(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever the exposed tool list changes (to send ``list_changed``)."""
        self._subscribers.append(callback)

    def notify_to(self, notices: Notices) -> None:
        """Tell ``notices`` of the upstreams' other changes: their resource and prompt lists, a resource
        updated (by the URI the gateway serves it under), a log message sent outside any call."""
        self._notices.append(notices)

    # -- introspection -------------------------------------------------------------------------

    def upstream(self, alias: str) -> Upstream | None:
        return self._upstreams.get(alias)

    def statuses(self) -> list[ServerStatus]:
        return [u.status() for u in self._upstreams.values()]

    def pin_alerts(self) -> dict[str, str]:
        """Exposed name → what changed, for tools redefined since they were pinned."""
        return dict(self._pin_alerts)

    def trusted_digest(self, origin: ToolOrigin) -> str | None:
        """The pinned definition of an upstream tool (what its approval was given for), if pins are kept."""
        if self._pins is None or origin.native:
            return None
        return self._pins.pinned(origin.server).get(origin.tool)

    def route(self, name: str) -> ToolRef | None:
        entry = self._table.get(name)
        return entry.ref if entry else None

    # -- ToolSurface ---------------------------------------------------------------------------

    def tool_infos(self) -> Sequence[ToolInfo]:
        return self._infos

    def has(self, name: str) -> bool:
        if name in self._table or name in self._withheld:
            return True
        split = split_name(name)
        return split is not None and split[0] in self._upstreams

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
        started = time.perf_counter()
        entry = self._table.get(name)
        if self._store is not None and (entry is not None or name in self._withheld_refs):
            alias, tool, fingerprint = (
                (entry.ref.alias, entry.ref.tool, entry.info.origin.digest) if entry is not None and
                entry.info.origin is not None else self._withheld_refs[name])
            refused = await self._check_shared_pin(name, alias, tool, fingerprint, started)
            if refused is not None:
                return refused
            entry = self._table.get(name)
        if entry is None:
            return self._not_served(name, started)
        if arguments is not None and not isinstance(arguments, Mapping):
            return outcome_from_error(name, ErrorInfo(
                ErrorKind.INVALID_INPUT, f"arguments of {name} must be a JSON object, got {type(arguments).__name__}",
                "Pass the arguments as an object matching the tool's input schema."), started)
        ref = entry.ref
        upstream = self._upstreams.get(ref.alias)
        if upstream is None:
            return self._not_served(name, started)

        async def call(relay: Relay | None) -> tuple[dict[str, Any], types.CallToolResult]:
            return await upstream.call(ref.tool, arguments, relay=relay, idempotent=entry.idempotent)

        try:
            target = ("tools/call", lambda: _target(ref.alias, ref.tool, arguments))
            raw, result = await self.relayed(link_of(ctx), name, target, call)
        except RoundExpired:
            return outcome_from_error(name, _expired(name), started)
        except UpstreamError as error:
            return outcome_from_upstream_error(name, error, started)
        return outcome_from_result(name, raw, result, ctx, started)

    async def relayed(self, link: ClientLink | None, label: str, target: tuple[str, Callable[[], str]],
                      run: Callable[[Relay | None], Awaitable[T]]) -> T:
        """Run one upstream request for the client behind ``link``: what the upstream asks or reports
        meanwhile goes to that client — at once in the handshake era, in input rounds for a 2026-07-28
        client (the request then runs in the gateway's own task group, :mod:`codeward.gateway.pending`).
        ``target`` names the request (method, and what a later round must repeat, made when needed)."""
        if link is not None and link.modern and self._tg is not None:
            return await self._pending.run(self._tg, (target[0], target[1]()), link, label, run)
        return await run(Relay(link, label=label))  # a call with no client to ask is still told apart

    def _not_served(self, name: str, started: float) -> ToolOutcome:
        if name in self._withheld:
            return outcome_from_error(name, ErrorInfo(ErrorKind.PERMISSION, self._withheld[name],
                                                      "Review the new definition, then re-pin it with "
                                                      "`codeward servers --repin`.", source="gateway-pin"), started)
        split = split_name(name)
        upstream = self._upstreams.get(split[0]) if split else None
        if upstream is not None and upstream.state != ServerState.READY:
            return outcome_from_error(name, upstream.unavailable().info(), started)
        if upstream is not None and split is not None:
            filtered = not self._filters[upstream.alias].offers(split[1])
            why = " (it is excluded by the server's allow/deny lists)" if filtered else ""
            return outcome_from_error(name, ErrorInfo(
                ErrorKind.NOT_FOUND, f"server {upstream.alias!r} has no tool {split[1]!r}{why}",
                "List the tools with tools/list (or `codeward servers`).", source="gateway"), started)
        return unknown_tool(name, [info.name for info in self._infos])

    # -- the merged table ----------------------------------------------------------------------

    def _upstream_changed(self, upstream: Upstream) -> None:
        self._rebuild()
        ready = upstream.state == ServerState.READY
        if ready != (upstream.alias in self._ready):  # its resources and prompts came or went with it
            (self._ready.add if ready else self._ready.discard)(upstream.alias)
            for kind in ("resources", "prompts"):
                if upstream.offers(kind) or not ready:
                    self._tell_changed(kind)

    def _upstream_event(self, upstream: Upstream, notification: types.ServerNotification) -> None:
        """An upstream's resource or prompt list changed, or one of its resources, or a URL elicitation ended."""
        if isinstance(notification, types.ResourceUpdatedNotification):
            exposed = expose_uri(upstream.alias, str(notification.params.uri))
            if exposed is not None:
                self._tell(lambda notices: notices.updated(exposed))
        elif isinstance(notification, types.ResourceListChangedNotification):
            self._tell_changed("resources")
        elif isinstance(notification, types.PromptListChangedNotification):
            self._tell_changed("prompts")
        elif isinstance(notification, types.ElicitCompleteNotification):  # the person finished at the URL
            params = {"elicitationId": notification.params.elicitation_id}
            self._tell(lambda notices: notices.forward("notifications/elicitation/complete", params))

    async def _out_of_call_log(self, params: types.LoggingMessageNotificationParams) -> None:
        for notices in list(self._notices):
            try:
                await notices.log(str(params.level), params.data, params.logger)
            except Exception:  # a listener must never break the gateway
                logger.exception("gateway: passing an upstream's log message on failed")

    def _tell_changed(self, kind: str) -> None:
        self._tell(lambda notices: notices.changed(kind))

    def _tell(self, tell: Callable[[Notices], None]) -> None:
        for notices in list(self._notices):
            try:
                tell(notices)
            except Exception:  # a listener must never break the gateway
                logger.exception("gateway: change listener failed")

    def _rebuild(self) -> None:
        offered: list[tuple[ToolRef, types.Tool]] = []
        withheld: dict[str, str] = {}
        withheld_refs: dict[str, tuple[str, str, str]] = {}
        pins_changed = False
        for alias, upstream in self._upstreams.items():
            keep = self._filters[alias]
            for tool in upstream.tools:
                if not keep.offers(tool.name):
                    continue
                if self._pins is not None:
                    verdict, pins_changed = self._check_pin(alias, tool, pins_changed)
                    if verdict == PinVerdict.CHANGED and self.config.pin == "refuse":
                        withheld[plain_name(alias, tool.name)] = (
                            f"server {alias!r} redefined tool {tool.name!r} since it was pinned; the gateway "
                            "withholds it")
                        withheld_refs[plain_name(alias, tool.name)] = (alias, tool.name, _fingerprint(tool))
                        continue
                offered.append((ToolRef(alias, tool.name), tool))
        if pins_changed and self._store is not None:  # first seen here: pinned for every replica
            if self._tg is not None:
                self._tg.start_soon(self._sync_pins)
        elif pins_changed and self._pins is not None:
            try:
                self._pins.save()
            except OSError as exc:
                logger.warning("gateway: cannot save tool pins to %s: %s", self._pins.path, exc)
        names = assign_names([ref for ref, _ in offered], limit=self.config.max_name_length,
                             reserved=self._reserved)
        by_ref = {ref: name for name, ref in names.items()}
        table: dict[str, _Entry] = {}
        for ref, tool in offered:
            name = by_ref[ref]
            table[name] = _entry(name, ref, tool, self._upstreams[ref.alias].tool_wire.get(tool.name))
        self._withheld = withheld
        self._withheld_refs = withheld_refs
        before = self._infos
        self._table = table
        self._infos = [entry.info for entry in table.values()]
        if before != self._infos:  # any field a client sees (schemas, annotations, _meta, icons...)
            for notify in list(self._subscribers):
                try:
                    notify()
                except Exception:  # a subscriber must never break the gateway
                    logger.exception("gateway: tool-list subscriber failed")

    def _check_pin(self, alias: str, tool: types.Tool, changed: bool) -> tuple[PinVerdict, bool]:
        assert self._pins is not None
        fingerprint = _fingerprint(tool)
        verdict = self._pins.check(alias, tool.name, fingerprint)
        name = plain_name(alias, tool.name)
        if verdict == PinVerdict.NEW:
            if self._store is not None:
                self._unclaimed[PinFile.key(alias, tool.name)] = fingerprint
            return verdict, True
        if verdict == PinVerdict.SAME:  # re-pinned (here or on another replica)
            self._pin_alerts.pop(name, None)
        if verdict == PinVerdict.CHANGED and name not in self._pin_alerts:
            self._pin_alerts[name] = "description, schema or annotations changed since pinned"
            action = "withholding it" if self.config.pin == "refuse" else "serving it anyway (pin = \"warn\")"
            logger.warning("gateway: server %r redefined tool %r since it was pinned; %s. Review it, then run "
                           "`codeward servers --repin`.", alias, tool.name, action)
        return verdict, changed

    async def repin(self, aliases: Iterable[str] | None = None) -> int:
        """Trust the current definitions of the given servers' tools (all servers by default); with shared
        pins every replica trusts them (a Redis that cannot be reached raises its error)."""
        if self._pins is None:
            self._pins = PinFile.open(self.config.pin_file) if self.config.pin_file else None
        if self._pins is None:
            return 0
        wanted = set(aliases) if aliases is not None else set(self._upstreams)
        current = {(alias, tool.name): _fingerprint(tool) for alias in wanted
                   for tool in (self._upstreams[alias].tools if alias in self._upstreams else ())}
        if self._store is not None:
            await self._store.repin({PinFile.key(alias, tool): sha for (alias, tool), sha in current.items()})
        for (alias, tool), fingerprint in current.items():
            self._pins.pin(alias, tool, fingerprint)
            self._pin_alerts.pop(plain_name(alias, tool), None)
        self._pins.save()
        self._rebuild()
        return len(current)

    # -- shared pins ---------------------------------------------------------------------------

    async def _sync_pins(self) -> None:
        """Pin what this replica saw first, then mirror every replica's pins and rebuild the list."""
        assert self._store is not None and self._pins is not None
        try:
            unclaimed, self._unclaimed = self._unclaimed, {}
            try:
                await self._store.claim(unclaimed)
            except BaseException:
                self._unclaimed.update(unclaimed)
                raise
            self._pins.replace_all(await self._store.load())
        except StateUnavailable as error:
            if not self._store_down:
                logger.warning("gateway: %s; upstream calls are refused until their pins can be checked", error)
            self._store_down = True
            return
        self._store_down = False
        self._rebuild()

    async def _follow_pins(self) -> None:
        """Refresh the list when another replica takes or replaces a pin."""
        assert self._store is not None
        seen: int | None = None
        while True:
            await anyio.sleep(PIN_POLL_S)
            try:
                now = await self._store.version()
            except StateUnavailable as error:
                if not self._store_down:
                    logger.warning("gateway: %s; upstream calls are refused until their pins can be checked", error)
                self._store_down = True
                continue
            if now != seen or self._unclaimed or self._store_down:
                seen = now
                await self._sync_pins()

    async def _check_shared_pin(self, name: str, alias: str, tool: str, fingerprint: str,
                                started: float) -> ToolOutcome | None:
        """The refusal of a call whose definition is not the pinned one (or whose pin cannot be read), else None."""
        assert self._store is not None and self._pins is not None
        key = PinFile.key(alias, tool)
        try:
            pinned = (await self._store.claim({key: fingerprint}))[key]
        except StateUnavailable as error:
            return outcome_from_error(name, ErrorInfo(
                ErrorKind.UNAVAILABLE, f"the pin of {name} cannot be checked, so the call did not run: {error}",
                "Retry once Redis answers again.", source="gateway-pin"), started)
        if self._pins.pinned(alias).get(tool) != pinned:  # taken or re-approved on another replica
            self._pins.pin(alias, tool, pinned)
            if pinned == fingerprint:
                self._pin_alerts.pop(name, None)
            self._rebuild()
        if pinned != fingerprint and self.config.pin == "refuse":
            message = self._withheld.get(name) or (f"server {alias!r} redefined tool {tool!r} since it was pinned; "
                                                   "the gateway withholds it")
            return outcome_from_error(name, ErrorInfo(ErrorKind.PERMISSION, message,
                                                      "Review the new definition, then re-pin it with "
                                                      "`codeward servers --repin`.", source="gateway-pin"), started)
        return None


def _fingerprint(tool: types.Tool) -> str:
    return tool_fingerprint(tool.model_dump(by_alias=True, mode="json", exclude_none=True))


def _entry(name: str, ref: ToolRef, tool: types.Tool, wire: Mapping[str, Any] | None) -> _Entry:
    hints = tool.annotations
    annotations = None
    if hints is not None:
        annotations = {
            key: value for key, value in (
                ("readOnlyHint", hints.read_only_hint),
                ("destructiveHint", hints.destructive_hint),
                ("idempotentHint", hints.idempotent_hint),
                ("openWorldHint", hints.open_world_hint),
            ) if value is not None
        }
    read_only = bool(hints and hints.read_only_hint)
    idempotent = bool(hints and (hints.idempotent_hint or hints.read_only_hint))
    digest = tool_fingerprint(tool.model_dump(by_alias=True, mode="json", exclude_none=True))
    info = ToolInfo(
        name=name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        annotations=annotations,
        title=tool.title or (hints.title if hints else None),
        source=ref.alias,
        origin=ToolOrigin(ref.alias, ref.tool, digest),
        wire=wire if wire is not None else tool.model_dump(by_alias=True, mode="json", exclude_none=True),
    )
    return _Entry(info, ref, read_only, idempotent)


def _target(alias: str, name: str, arguments: Mapping[str, Any] | None) -> str:
    """What a 2026-07-28 round must repeat to continue a pending request: server, name and arguments."""
    return json.dumps([alias, name, arguments or {}], sort_keys=True, ensure_ascii=False, default=str)


def _expired(label: str) -> ErrorInfo:
    return ErrorInfo(ErrorKind.CONFLICT, f"this answer continues a call of {label} that is no longer waiting here "
                     "(it ended, was abandoned, or ran on another replica of the gateway)",
                     "Call the tool again.", source="gateway")
