"""The MCP surface: a low-level SDK ``Server`` whose handlers are adapters over a ToolSurface.

Nothing here knows what a tool does. Tool calls run through the surface (the catalog, the
gateway...), with a :class:`ToolContext` carrying the current workspace, a progress/log
channel bound to the request, and a peer for sampling and elicitation. Files under the roots
are resources; providers add more resources and prompts.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import json
import logging
import sys
import threading
import time
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp_types.version import is_version_at_least

from codeward import __version__
from codeward.kernel.afterwards import Afterwards
from codeward.kernel.client_link import InputRequired
from codeward.kernel.content import BinaryBlock, Block, ResourceBlock, TextBlock
from codeward.kernel.context import CallInfo, Services, Settings, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.session_toolsets import SessionToolsets
from codeward.kernel.surface import (
    CONTENT_CALLS,
    GET_PROMPT,
    READ_RESOURCE,
    ContentSurface,
    ToolSurface,
    content_error,
    unknown_tool,
)
from codeward.kernel.workspace import Workspace
from codeward.serving.change_notices import ChangeNotifier, connection_of
from codeward.serving.file_resources import FileResources
from codeward.serving.request_link import LOG_LEVELS, MODERN_ERA, RequestLink, RoundState, as_json, input_round
from codeward.serving.tool_listing import ToolListing

if TYPE_CHECKING:
    from codeward.audit.log import AuditLog
    from codeward.audit.users import Directory
    from codeward.kernel.lean_listing import LeanListing
    from codeward.kernel.providers import PromptProvider, RelayedProvider, ResourceProvider
    from codeward.serving.drain import Drain
    from codeward.serving.shared_state.backend import StateBackend
    from codeward.serving.transport.http_stack import HttpStack

logger = logging.getLogger("codeward.serving.server")

INSTRUCTIONS = (
    "codeward gives you file, code-navigation and analysis tools over the workspace roots. "
    "Paths are relative to the primary root. Read before you edit; edits are atomic and refused "
    "when they would break the file."
)
ROOTS_REQUEST_KEY = "codeward.roots"

T = TypeVar("T")


def _from_thread(func: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``anyio.from_thread.run``: a tool's worker thread waiting on the event loop (imported with the
    first call that reports or asks; a server's start-up needs none of it)."""
    import anyio.from_thread

    return anyio.from_thread.run(func)


@dataclass
class WorkspaceHolder:
    """The server's current workspace; replaced whole when the client's roots change."""

    workspace: Workspace
    roots_from_client: bool = False
    stale: bool = False
    refreshed_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> Workspace:
        with self.lock:
            return self.workspace

    def set(self, workspace: Workspace) -> None:
        with self.lock:
            self.workspace = workspace
            self.stale = False
            self.refreshed_at = time.monotonic()

    def needs_refresh(self, modern: bool, ttl: float) -> bool:
        """Whether to ask the client for its roots again.

        Handshake-era clients announce changes (``roots/list_changed`` marks the roots stale);
        2026-07-28 clients cannot, so their roots are re-read after ``ttl`` seconds.
        """
        if not self.roots_from_client:
            return False
        return self.stale or (modern and time.monotonic() - self.refreshed_at > ttl)


MAX_PENDING_MESSAGES = 64
"""Messages of one call handed to the loop and not yet written, beyond which the tool's thread waits."""


class _RequestReporter:
    """Progress and log messages from a tool thread, sent on the request's own channel.

    The thread does not wait for each message to be written (a round trip through the event loop,
    two thread wake-ups): messages are handed to the loop and written there in the order they
    were made, and the call's answer — and any question the call asks the client — waits until
    they are out (:meth:`sent`), so the client sees the same messages in the same order as before.
    """

    def __init__(self, ctx: ServerRequestContext[Any, Any], min_level: Callable[[], str]) -> None:
        self._ctx = ctx
        self._min_level = min_level
        self._loop = _running_asyncio_loop()
        self._lock = threading.Lock()
        self._last: concurrent.futures.Future[None] | None = None
        """The send of the latest message (each waits for the one before it)."""
        self._pending = 0

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self._run(self._ctx.session.report_progress(done, total, message))

    def log(self, level: str, message: str) -> None:
        level = level if level in LOG_LEVELS else "info"
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self._min_level()):
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # On the call's own stream when it has one; a call answered with one JSON body (it asked
            # for no stream, :mod:`codeward.serving.transport.http_answers`) logs on the session's stream.
            related = self._ctx.request_id if self._ctx.session.can_send_request else None
            coro = self._ctx.session.send_log_message(level, message, logger="codeward",  # type: ignore[arg-type]
                                                      related_request_id=related)
        self._run(coro)

    def _run(self, coro: Coroutine[Any, Any, None]) -> None:
        async def send(previous: concurrent.futures.Future[None] | None = None) -> None:
            if previous is not None:
                await _settled(previous)
            try:
                await coro
            except Exception as exc:  # a closed stream must not kill the tool
                logger.debug("dropped notification: %s", exc)
            finally:
                with self._lock:
                    self._pending -= 1

        loop = self._loop
        if loop is None:  # not an asyncio loop: hand it over and wait, as any backend allows
            try:
                _from_thread(send)
            except RuntimeError:  # called on the event loop itself (async tool): schedule nothing
                coro.close()
            return
        if _on_a_loop():  # the event loop itself (an async tool): schedule nothing
            coro.close()
            return
        with self._lock:
            sending = send(self._last)
            try:
                self._last = last = asyncio.run_coroutine_threadsafe(sending, loop)
            except RuntimeError:  # the loop is closed: the server is ending
                sending.close()
                coro.close()
                return
            self._pending += 1
            behind = self._pending >= MAX_PENDING_MESSAGES
        if behind:  # a tool making messages faster than the client takes them waits for them, as it used to
            concurrent.futures.wait([last])

    async def sent(self) -> None:
        """Wait (on the event loop) until every message handed over so far is written or dropped."""
        with self._lock:
            last = self._last
        if last is not None:
            await _settled(last)


def _running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop running this code, or None (another backend, or no loop)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _on_a_loop() -> bool:
    return _running_asyncio_loop() is not None


async def _settled(future: concurrent.futures.Future[None]) -> None:
    """Wait for a send handed to the loop, whatever became of it."""
    if not future.done():
        await asyncio.wait([asyncio.wrap_future(future)])


class _SessionPeer:
    """Sampling and elicitation through the client, callable from a tool thread.

    Handshake-era sessions get a server-to-client request mid-call, on the call's own stream
    (over HTTP the POST's event stream, open before the call runs: the session's standalone
    GET stream may not be open yet, and a request stored for it would never be delivered);
    2026-07-28 sessions get an input round (:class:`InputRequired`), answered on the retry
    from ``answers``.
    """

    def __init__(self, ctx: ServerRequestContext[Any, Any], answers: Mapping[str, Any],
                 reporter: _RequestReporter | None = None) -> None:
        self._ctx = ctx
        self._answers = answers
        self._modern = is_version_at_least(ctx.protocol_version, MODERN_ERA)
        self._reporter = reporter
        """The call's messages, written before a question is asked (the order the tool made them in)."""

    async def _after_messages(self) -> None:
        if self._reporter is not None:
            await self._reporter.sent()

    @property
    def asks_during_call(self) -> bool:
        """Whether a question reaches the person while the call runs (handshake-era sessions); a
        2026-07-28 session's question ends the call, which the client then runs again."""
        return not self._modern

    def _answer(self, kind: str, payload: Any, request: types.ElicitRequest | types.CreateMessageRequest) -> Any:
        key = f"codeward.{kind}.{hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]}"
        if key not in self._answers:
            raise InputRequired({key: request})
        return self._answers[key]

    def _require(self, capability: str) -> None:
        """A client that did not declare the capability cannot answer: fail like a missing back-channel."""
        declared = self._ctx.session.client_capabilities
        if declared is None or getattr(declared, capability, None) is None:
            raise RuntimeError(f"the client does not support {capability}")

    def sample(self, prompt: str, max_tokens: int = 256) -> str:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        if self._modern:
            self._require("sampling")
            request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
                messages=[message], max_tokens=max_tokens))
            answer = types.CreateMessageResult.model_validate(
                self._answer("sample", [prompt, max_tokens], request), from_attributes=True)
            content = answer.content
            return content.text if isinstance(content, types.TextContent) else str(content)

        async def ask() -> str:
            await self._after_messages()
            result = await self._ctx.session.create_message(messages=[message], max_tokens=max_tokens,
                                                            related_request_id=self._ctx.request_id)
            content = result.content
            return content.text if isinstance(content, types.TextContent) else str(content)

        return _from_thread(ask)

    def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        if self._modern:
            self._require("elicitation")
            request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message,
                                                                               requested_schema=schema))
            answer = types.ElicitResult.model_validate(self._answer("elicit", [message, schema], request),
                                                       from_attributes=True)
            return {"action": answer.action, "content": answer.content}

        async def ask() -> dict[str, Any]:
            await self._after_messages()
            result = await self._ctx.session.elicit_form(message=message, requested_schema=schema,
                                                         related_request_id=self._ctx.request_id)
            return {"action": result.action, "content": result.content}

        return _from_thread(ask)


class CodewardServer:
    """One MCP server: a surface, a workspace, resource/prompt providers, and the SDK server."""

    def __init__(
        self,
        surface: ToolSurface,
        workspace: Workspace,
        *,
        settings: Settings | None = None,
        roots_from_client: bool = False,
        resource_providers: Sequence[ResourceProvider] = (),
        prompt_providers: Sequence[PromptProvider] = (),
        services: Services | None = None,
        name: str = "codeward",
        roots_ttl: float = 10.0,
        tools_can_change: bool = False,
        relayed: RelayedProvider | None = None,
        files: bool = True,
        unavailable: Callable[[], Sequence[str]] | None = None,
        lean: LeanListing | None = None,
    ) -> None:
        """``tools_can_change``: the surface's tool list may change while serving (a gateway);
        clients are then told, and :meth:`tools_changed` is how to tell them. ``relayed``: another
        server's resources, prompts and completions served beside these (a gateway's upstreams).
        ``files``: serve the workspace's files as resources (not on a gateway without native tools).
        ``unavailable``: why tools a client may expect are missing (a gateway's failed or starting upstreams),
        sent as warning log messages with every ``tools/list`` so a short list never comes without a reason.
        ``lean``: each session lists what this lean listing shows it (:mod:`codeward.kernel.lean_listing`), and is
        told when a toolset it enabled changes that."""
        self.surface = surface
        self.unavailable = unavailable
        self.listing = ToolListing(surface)
        self.lean = lean
        self._toolsets: dict[str, SessionToolsets] = {}
        """Each session's enabled toolsets (lean listing), by :func:`client_of`; a session's goes with it."""
        self.relayed = relayed
        self.holder = WorkspaceHolder(workspace, roots_from_client, stale=roots_from_client)
        self.settings = settings or Settings()
        self.resource_providers: list[ResourceProvider] = [*([FileResources()] if files else []),
                                                           *resource_providers]
        self.prompt_providers = list(prompt_providers)
        self.content: ToolSurface = surface if surface.has(READ_RESOURCE) else \
            ContentSurface(self.resource_providers, self.prompt_providers)
        """Where resource reads and prompt gets go: the chain (a stack's surface serves them, so they are
        observed and audited like tool calls), else these providers directly."""
        self.services = services or Services()
        self.roots_ttl = roots_ttl
        self._log_level = "info"
        self.subscriptions: set[str] = set()
        changes = tools_can_change or relayed is not None or lean is not None
        self.notifier = ChangeNotifier(self._watch_all, self._unwatch_all) if changes else None
        handlers: dict[str, Any] = {
            "on_list_tools": self._list_tools,
            "on_call_tool": self._call_tool,
            "on_list_resources": self._list_resources,
            "on_list_resource_templates": self._list_templates,
            "on_read_resource": self._read_resource,
            "on_completion": self._complete,
            "on_subscribe_resource": self._subscribe,
            "on_unsubscribe_resource": self._unsubscribe,
        }
        if self.prompt_providers or relayed is not None:
            handlers["on_list_prompts"] = self._list_prompts
            handlers["on_get_prompt"] = self._get_prompt
        if self.notifier is not None:
            handlers["on_subscriptions_listen"] = self.notifier.listen_handler
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            announced = NotificationOptions(tools_changed=True, prompts_changed=relayed is not None or
                                            tools_can_change, resources_changed=relayed is not None or
                                            tools_can_change) if changes else None
            self.lowlevel: Server[Any] = _LowLevelServer(
                announced,
                name,
                version=__version__,
                instructions=INSTRUCTIONS,
                on_set_logging_level=self._set_level,
                on_roots_list_changed=self._roots_changed,
                get_tool_input_schema=self.listing.input_schema,
                **handlers,
            )

    # -- tools ---------------------------------------------------------------------------

    def tools_changed(self) -> None:
        """Tell connected clients the tool list changed (call it on the event loop, e.g. from a
        gateway's subscriber); sent while :meth:`run_stdio` or :meth:`run_http` runs."""
        if self.notifier is not None:
            self.notifier.changed()

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        if self.notifier is not None and not is_version_at_least(ctx.protocol_version, MODERN_ERA):
            self.notifier.remember(ctx)  # a 2026-07-28 client hears of changes on its listen stream
        notes = self.unavailable() if self.unavailable is not None else ()
        if notes:
            link = RequestLink(ctx, client=None, state=RoundState())
            for note in notes:
                try:
                    await link.log("warning", note, "codeward.gateway")
                except Exception as exc:  # a client that cannot take it still gets its list
                    logger.debug("could not send a note with tools/list: %s", exc)
        # The result as JSON, not ~80 Tool models: the SDK validates it against the session's
        # version of ListToolsResult and dumps it, as it would the model (tests/test_tool_listing.py).
        lean = self.lean
        if lean is None:
            return self.listing.result()
        enabled = self._session_toolsets(ctx).enabled
        return self.listing.result(lambda name: lean.shows(name, enabled))

    def _session_toolsets(self, ctx: ServerRequestContext[Any, Any]) -> SessionToolsets:
        """The toolsets the session of this request enabled (a 2026-07-28 HTTP request's: none, for good)."""
        client = client_of(ctx)
        if client is None:
            return SessionToolsets(can_change=False)
        found = self._toolsets.get(client)
        if found is None:
            found = self._toolsets[client] = SessionToolsets()
            try:  # forgotten with the session's connection
                weakref.finalize(connection_of(ctx), self._toolsets.pop, client, None)
            except TypeError:  # a connection that cannot be weakly referenced lives as long as the server
                logger.debug("the toolsets of %s are kept until the server stops", client)
        return found

    async def _tell_listing_changed(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """A toolset enabled or disabled by this request's session: tell that client alone."""
        if self.notifier is not None:
            await self.notifier.notify_one(ctx, "tools", modern=is_version_at_least(ctx.protocol_version, MODERN_ERA),
                                           listeners=client_of(ctx) == "")

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | dict[str, Any]:
        # 2026-07-28: the answers of every round of this call so far (request_link.RoundState)
        state = RoundState.decode(getattr(params, "request_state", None)).joined(
            getattr(params, "input_responses", None))
        workspace = await self._current_workspace(ctx, state.answers)
        if isinstance(workspace, types.InputRequiredResult):
            return input_round(workspace.input_requests or {}, state)
        toolsets = self._session_toolsets(ctx) if self.lean is not None else None
        version = toolsets.version if toolsets is not None else 0
        tool_ctx = self._context(ctx, workspace, state, toolsets, afterwards=Afterwards())
        try:
            try:
                if params.name in CONTENT_CALLS:  # the chain's names for reads, never a tool's
                    outcome = unknown_tool(params.name, [info.name for info in self.surface.tool_infos()])
                else:
                    outcome = await self.surface.call(params.name, params.arguments, tool_ctx)
            finally:
                await _messages_sent(tool_ctx)
        except InputRequired as needed:
            return input_round(needed.requests, RoundState(state.answers, needed.resume or state.resume))
        finally:
            _start_afterwards(tool_ctx)
        if toolsets is not None and toolsets.version != version:
            await self._tell_listing_changed(ctx)
        return call_result(outcome)

    def _context(self, ctx: ServerRequestContext[Any, Any], workspace: Workspace,
                 state: RoundState | None = None, toolsets: SessionToolsets | None = None,
                 afterwards: Afterwards | None = None) -> ToolContext:
        """What a call of this request carries: the workspace, settings, services, the client as peer
        and as the link a relaying surface answers through (with the answers of the call's earlier
        2026-07-28 input rounds, ``state``), on a lean server the session's enabled ``toolsets``, and
        what the call leaves for after its answer (``afterwards``, started by the caller)."""
        state = state if state is not None else RoundState()
        client = client_of(ctx)
        reporter = _RequestReporter(ctx, lambda: self._log_level)
        return ToolContext(
            workspace=workspace,
            settings=self.settings,
            reporter=reporter,
            peer=_SessionPeer(ctx, state.answers, reporter),
            services=self.services,
            call=CallInfo(close_sse_stream=ctx.close_sse_stream, client=client, user=user_of(ctx),
                          toolsets=toolsets, request_id=_request_id(ctx), session=session_of(ctx),
                          afterwards=afterwards),
            link=RequestLink(ctx, client=client, state=state),
        )

    # -- workspace and roots ---------------------------------------------------------------

    async def _current_workspace(
        self, ctx: ServerRequestContext[Any, Any], answers: Mapping[str, Any] | None = None
    ) -> Workspace | types.InputRequiredResult:
        """The workspace for this request, re-reading the client's roots when they changed.

        Handshake-era clients are asked with a ``roots/list`` request; 2026-07-28 clients answer
        through an ``InputRequiredResult`` round (only tool calls can carry one).
        """
        holder = self.holder
        modern = is_version_at_least(ctx.protocol_version, MODERN_ERA)
        if not holder.needs_refresh(modern, self.roots_ttl):
            return holder.get()
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            holder.roots_from_client = False
            return holder.get()
        try:
            if modern:
                answer = (answers or {}).get(ROOTS_REQUEST_KEY)
                if answer is None:
                    if answers is None and ctx.method != "tools/call":
                        return holder.get()
                    return types.InputRequiredResult(input_requests={ROOTS_REQUEST_KEY: types.ListRootsRequest()},
                                                     result_type="input_required")
                listed = types.ListRootsResult.model_validate(answer, from_attributes=True)
            else:
                with anyio.fail_after(5), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    listed = await ctx.session.list_roots()
        except Exception as exc:  # a client that cannot answer keeps the default root
            logger.info("client roots unavailable (%s); serving %s", exc, holder.get().primary)
            holder.roots_from_client = False
            return holder.get()
        usable = [p for p in (_root_path(str(root.uri)) for root in listed.roots) if p and Path(p).is_dir()]
        holder.set(holder.get().with_roots(usable) if usable else holder.get())
        return holder.get()

    async def _workspace(self, ctx: ServerRequestContext[Any, Any]) -> Workspace:
        """The workspace for requests that cannot ask the client anything (lists, reads)."""
        current = await self._current_workspace(ctx)
        return current if isinstance(current, Workspace) else self.holder.get()

    async def _roots_changed(self, ctx: ServerRequestContext[Any, Any], params: Any) -> None:
        if self.holder.roots_from_client:
            self.holder.stale = True

    async def _set_level(self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams) -> Any:
        self._log_level = str(params.level)
        if self.notifier is not None:
            self.notifier.set_level(ctx, self._log_level)  # an upstream's log lines outside any call reach it
        if self.relayed is not None and self.relayed.offers("logging"):
            await self.relayed.set_level(self._log_level)
        return types.EmptyResult()

    def _link(self, ctx: ServerRequestContext[Any, Any], params: Any) -> tuple[RequestLink, RoundState]:
        """The client of a request that may run on an upstream, and the answers of its earlier rounds."""
        state = RoundState.decode(getattr(params, "request_state", None)).joined(
            getattr(params, "input_responses", None))
        return RequestLink(ctx, client=client_of(ctx), state=state), state

    # -- resources -----------------------------------------------------------------------

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        workspace = await self._workspace(ctx)
        self._remember(ctx)

        def collect() -> list[types.Resource]:
            out: list[types.Resource] = []
            for provider in self.resource_providers:
                for info in provider.list_resources(workspace):
                    out.append(types.Resource(uri=info.uri, name=info.name, description=info.description or None,
                                              mime_type=info.mime_type, size=info.size))
            return out

        native = await anyio.to_thread.run_sync(collect) if self.resource_providers else []
        relayed = await self.relayed.list_resources() if self.relayed is not None else []
        return {**_json(types.ListResourcesResult(resources=[])),
                "resources": [*(_json(resource) for resource in native), *relayed]}

    async def _list_templates(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        workspace = await self._workspace(ctx)
        templates = [
            types.ResourceTemplate(uri_template=t.uri_template, name=t.name, description=t.description or None,
                                   mime_type=t.mime_type)
            for provider in self.resource_providers
            for t in provider.list_templates(workspace)
        ]
        relayed = await self.relayed.list_templates() if self.relayed is not None else []
        return {**_json(types.ListResourceTemplatesResult(resource_templates=[])),
                "resourceTemplates": [*(_json(template) for template in templates), *relayed]}

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | dict[str, Any]:
        from mcp.shared.exceptions import MCPError

        uri = str(params.uri)
        if self.relayed is not None and self.relayed.owns_uri(uri):
            link, state = self._link(ctx, params)
            try:
                return _complete(await self.relayed.read_resource(uri, link), types.ReadResourceResult(contents=[]))
            except InputRequired as needed:
                return input_round(needed.requests, RoundState(state.answers, needed.resume or state.resume))
        outcome = await self.content.call(READ_RESOURCE, {"uri": uri}, self._context(ctx, await self._workspace(ctx)))
        data = outcome.served
        if outcome.is_error or data is None or isinstance(data, tuple):
            raise MCPError(code=types.INVALID_PARAMS, message=content_error(outcome), data={"uri": uri})
        content: types.TextResourceContents | types.BlobResourceContents
        if data.blob is not None:
            content = types.BlobResourceContents(uri=uri, mime_type=data.mime_type,
                                                 blob=base64.b64encode(data.blob).decode("ascii"))
        else:
            content = types.TextResourceContents(uri=uri, mime_type=data.mime_type, text=data.text or "")
        return types.ReadResourceResult(contents=[content])

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> Any:
        uri = str(params.uri)
        if self.relayed is not None and await self.relayed.watch(uri) and self.notifier is not None:
            self.notifier.subscribe(ctx, uri)
        self.subscriptions.add(uri)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> Any:
        uri = str(params.uri)
        if self.notifier is not None and self.notifier.unsubscribe(ctx, uri) and self.relayed is not None:
            await self.relayed.unwatch(uri)
        self.subscriptions.discard(uri)
        return types.EmptyResult()

    async def _watch_all(self, uris: Iterable[str]) -> None:
        """A 2026-07-28 listen stream opened on these URIs: the upstreams' among them are subscribed."""
        if self.relayed is not None:
            for uri in uris:
                await self.relayed.watch(uri)

    async def _unwatch_all(self, uris: Iterable[str]) -> None:
        if self.relayed is not None:
            for uri in uris:
                await self.relayed.unwatch(uri)

    def _remember(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Note a handshake-era session that listed something, to tell it when the list changes."""
        if self.notifier is not None and not is_version_at_least(ctx.protocol_version, MODERN_ERA):
            self.notifier.remember(ctx)

    # -- prompts ---------------------------------------------------------------------------

    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        workspace = await self._workspace(ctx)
        self._remember(ctx)
        prompts = [
            types.Prompt(
                name=p.name,
                description=p.description or None,
                arguments=[types.PromptArgument(name=a.name, description=a.description or None, required=a.required)
                           for a in p.arguments],
            )
            for provider in self.prompt_providers
            for p in provider.list_prompts(workspace)
        ]
        relayed = (await self.relayed.list_prompts(reserved={p.name for p in prompts})
                   if self.relayed is not None else [])
        return {**_json(types.ListPromptsResult(prompts=[])),
                "prompts": [*(_json(prompt) for prompt in prompts), *relayed]}

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | dict[str, Any]:
        from mcp.shared.exceptions import MCPError

        workspace = await self._workspace(ctx)
        if self.relayed is not None and self.relayed.owns_prompt(params.name) and not any(
                p.name == params.name for provider in self.prompt_providers for p in provider.list_prompts(workspace)):
            link, state = self._link(ctx, params)
            try:
                return _complete(await self.relayed.get_prompt(params.name, params.arguments, link),
                                 types.GetPromptResult(messages=[]))
            except InputRequired as needed:
                return input_round(needed.requests, RoundState(state.answers, needed.resume or state.resume))
        arguments = {"name": params.name, "arguments": dict(params.arguments or {})}
        outcome = await self.content.call(GET_PROMPT, arguments, self._context(ctx, workspace))
        if outcome.is_error or not isinstance(outcome.served, tuple):
            raise MCPError(code=types.INVALID_PARAMS, message=content_error(outcome))
        messages = [types.PromptMessage(role=m.role, content=to_content(m.content))  # type: ignore[arg-type]
                    for m in outcome.served]
        return types.GetPromptResult(messages=messages)

    # -- completion ------------------------------------------------------------------------

    async def _complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult | dict[str, Any]:
        if self.relayed is not None:
            wire = {key: value for key, value in _json(params).items() if key != "_meta"}
            relayed = await self.relayed.complete(wire.get("ref") or {}, wire, self._link(ctx, params)[0])
            if relayed is not None:
                return _complete(relayed, types.CompleteResult(completion=types.Completion(values=[])))
        workspace = await self._workspace(ctx)
        ref = params.ref
        name, prefix = params.argument.name, params.argument.value
        values: list[str] = []
        if isinstance(ref, types.ResourceTemplateReference):
            for provider in self.resource_providers:
                values.extend(provider.complete(ref.uri, name, prefix, workspace))
        elif isinstance(ref, types.PromptReference):
            for prompt_provider in self.prompt_providers:
                values.extend(prompt_provider.complete(ref.name, name, prefix, workspace))
        return types.CompleteResult(
            completion=types.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    # -- running ---------------------------------------------------------------------------

    async def run_stdio(self, drain: Drain | None = None) -> None:
        """Serve over this process's stdin/stdout until the client closes the pipe (or, with ``drain``,
        until SIGTERM has drained the calls in flight: :mod:`codeward.serving.transport.stdio_drain`)."""
        from codeward.serving.transport.era_loop import serve_stdio_connection
        from codeward.serving.transport.stdio import fast_stdio_server, freeze_startup_heap
        from codeward.serving.transport.stdio_drain import drain_on_sigterm, draining_streams

        freeze_startup_heap()
        async with fast_stdio_server() as (read_stream, write_stream), self.announcing():
            if drain is None:
                await serve_stdio_connection(self.lowlevel, read_stream, write_stream,
                                             self.lowlevel.create_initialization_options())
                return
            reading, writing = draining_streams(read_stream, write_stream, drain)
            with anyio.CancelScope() as serving, drain_on_sigterm(drain, serving):
                await serve_stdio_connection(self.lowlevel, reading, writing,
                                             self.lowlevel.create_initialization_options())

    @asynccontextmanager
    async def announcing(self) -> AsyncIterator[None]:
        """Run the tool-list notifier beside a transport (nothing to run when tools cannot change)."""
        if self.notifier is None:
            yield
            return
        async with anyio.create_task_group() as group:
            group.start_soon(self.notifier.run)
            try:
                yield
            finally:
                group.cancel_scope.cancel()

    def http_app(self, *, host: str = "127.0.0.1", path: str = "/mcp", token: str | None = None,
                 allowed_hosts: Sequence[str] = (), state: StateBackend | None = None,
                 users: Directory | None = None, audit: AuditLog | None = None, **options: Any) -> Any:
        """A Starlette app serving streamable HTTP (:func:`codeward.serving.http_server.http_app`)."""
        from codeward.serving.http_server import http_app  # HTTP only: the transport's app and middleware

        return http_app(self, host=host, path=path, token=token, allowed_hosts=allowed_hosts, state=state,
                        users=users, audit=audit, **options)

    async def run_http(self, *, host: str, port: int, token: str | None = None, state: StateBackend | None = None,
                       users: Directory | None = None, audit: AuditLog | None = None,
                       http_stack: HttpStack | None = None, drain: Drain | None = None,
                       connecting: Callable[[], Sequence[str]] = tuple, **options: Any) -> None:
        """Serve over streamable HTTP until stopped (:func:`codeward.serving.http_server.run_http`)."""
        from codeward.serving.http_server import run_http  # HTTP only: uvicorn and the app

        await run_http(self, host=host, port=port, token=token, state=state, users=users, audit=audit,
                       http_stack=http_stack, drain=drain, connecting=connecting, **options)


class _LowLevelServer(Server[Any]):
    """The SDK's server, announcing ``listChanged`` to handshake-era clients for the lists that can change
    (a gateway's upstreams change all three; a lean listing, the tools): 2026-07-28 clients learn it from the
    ``subscriptions/listen`` handler."""

    def __init__(self, announced: NotificationOptions | None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._announced = announced

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(notification_options or self._announced,
                                                     experimental_capabilities, extensions)


async def _messages_sent(tool_ctx: ToolContext) -> None:
    """The call's progress and log messages are written (they come before its answer)."""
    if isinstance(tool_ctx.reporter, _RequestReporter):
        await tool_ctx.reporter.sent()


def _start_afterwards(tool_ctx: ToolContext) -> None:
    """Start what the call left for after its answer (:mod:`codeward.kernel.afterwards`) once the answer is
    written: the SDK shapes and writes it right after this handler returns, before the loop runs the next
    callback (at worst the hand-overs run beside the write: they only wake a background thread)."""
    afterwards = tool_ctx.call.afterwards
    if afterwards is None:
        return
    loop = _running_asyncio_loop()
    if loop is None:
        afterwards.start()
    else:
        loop.call_soon(afterwards.start)


def client_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Who is calling, for state a tool keeps per client (Python sessions).

    Over stdio the process serves one client (``""``). Over streamable HTTP a handshake-era
    client is its MCP session (the SDK issued the ``Mcp-Session-Id`` and refuses unknown ones);
    a 2026-07-28 request carries no such id, so it names no client (``None``).
    """
    request = ctx.request
    if request is None:
        return ""
    headers = getattr(request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    return f"mcp-session:{session}" if session else None


def user_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The user the HTTP request's bearer token belongs to (``codeward.audit.users``), or None."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("codeward.user") if isinstance(scope, dict) else None
    return user if isinstance(user, str) else None


def _request_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request_id = getattr(ctx, "request_id", None)
    return None if request_id is None else str(request_id)


def session_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The request's ``Mcp-Session-Id`` over streamable HTTP, or None."""
    headers = getattr(ctx.request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    return session if isinstance(session, str) else None


def call_result(outcome: ToolOutcome) -> types.CallToolResult | dict[str, Any]:
    """What ``tools/call`` answers: an upstream's result as its server sent it (the SDK checks it
    against the client's protocol version), else :func:`to_call_result`. An upstream's JSON-RPC error
    that the client must act on is raised as that error."""
    if outcome.wire_error is not None:
        from mcp.shared.exceptions import MCPError

        error = outcome.wire_error
        raise MCPError(code=int(error["code"]), message=str(error.get("message", "")), data=error.get("data"))
    return _complete(outcome.wire) if outcome.wire is not None else to_call_result(outcome)


def to_call_result(outcome: ToolOutcome) -> types.CallToolResult:
    """A catalog outcome as an MCP tool result (errors become ``isError`` results)."""
    if outcome.rich is not None and not outcome.is_error:
        content = [to_content(block) for block in outcome.rich.blocks]
    else:
        content = [types.TextContent(type="text", text=outcome.text)]
    if outcome.is_error and outcome.structured is not None:
        # A failure's shape (Codomyrmex's ``{"success": false, ...}``) goes as a second text block of JSON,
        # never as structured content: the TypeScript SDK validates structured content against the tool's
        # output schema even on an error result, and a failure's shape is not the success's.
        content.append(types.TextContent(type="text", text=json.dumps(outcome.structured, ensure_ascii=False)))
    return types.CallToolResult(
        content=content,  # type: ignore[arg-type]
        structured_content=None if outcome.is_error else outcome.structured,
        is_error=outcome.is_error,
    )


def to_content(block: Block) -> types.TextContent | types.ImageContent | types.AudioContent | types.EmbeddedResource:
    if isinstance(block, TextBlock):
        return types.TextContent(type="text", text=block.text)
    if isinstance(block, BinaryBlock):
        if block.kind == "audio":
            return types.AudioContent(type="audio", data=block.base64, mime_type=block.mime_type)
        return types.ImageContent(type="image", data=block.base64, mime_type=block.mime_type)
    assert isinstance(block, ResourceBlock)
    resource: types.TextResourceContents | types.BlobResourceContents
    if block.blob is not None:
        resource = types.BlobResourceContents(uri=block.uri, mime_type=block.mime_type,
                                              blob=base64.b64encode(block.blob).decode("ascii"))
    else:
        resource = types.TextResourceContents(uri=block.uri, mime_type=block.mime_type, text=block.text or "")
    return types.EmbeddedResource(type="resource", resource=resource)


def _complete(result: Mapping[str, Any], empty: types.Result | None = None) -> dict[str, Any]:
    """An upstream's result as this server sends it: a handshake-era answer lacks what 2026-07-28 requires
    (``resultType``; ``ttlMs`` and ``cacheScope`` on a cacheable result: ``empty``'s defaults), which the SDK
    drops again for handshake-era clients."""
    return {**(_json(empty) if empty is not None else {"resultType": "complete"}), **result}


def _json(model: Any) -> dict[str, Any]:
    json_value: dict[str, Any] = as_json(model)
    return json_value


def _root_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def print_banner(lines: Sequence[str]) -> None:
    """Tell a person who started the server by hand what it serves and how to connect."""
    if sys.stdin.isatty():
        print("\n".join(lines), file=sys.stderr, flush=True)
