"""One upstream MCP server, kept connected: start-up, tool list, calls, reconnection.

An :class:`Upstream` is driven by :meth:`Upstream.run`, a supervisor task that owns the
connection (the SDK transport and ``ClientSession`` live inside it). Calls come from other
tasks and share the session. The supervisor:

* connects with a deadline (spawn or HTTP connect + ``initialize`` + ``tools/list``);
  a failure at start-up is reported once and the server offers no tools;
* tolerates a protocol version it does not know (logged, then used as answered);
* follows ``notifications/tools/list_changed`` by listing the tools again;
* notices a lost connection (the stdio process exited, the SSE stream ended, the HTTP
  endpoint refused or forgot the session) and reconnects at once, then with exponential
  backoff, a bounded number of times; meanwhile the tools stay listed and calls wait for the
  new connection. When the attempts are used up the server is marked failed and its tools
  are withdrawn until :meth:`Upstream.reconnect` is called.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from enum import StrEnum
from typing import IO, Any

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, MCP_PROTOCOL_VERSION_HEADER, NAME_BEARING_METHODS, encode_header_value
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types import CONNECTION_CLOSED, INVALID_REQUEST, methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import TypeAdapter, ValidationError

from codeward import __version__
from codeward.gateway.callbacks import OutOfCallLog, UpstreamCallbacks
from codeward.gateway.config import ServerConfig
from codeward.gateway.errors import (
    UpstreamDisconnected,
    UpstreamError,
    UpstreamHttpError,
    UpstreamProtocolError,
    UpstreamRpcError,
    UpstreamTimeout,
    UpstreamUnreachable,
)
from codeward.gateway.relay import Relay, RelayBoard
from codeward.gateway.transports import HttpFailures, open_transport

logger = logging.getLogger("codeward.gateway")

CLIENT_NAME = "codeward-gateway"
MAX_PAGES = 100
STABLE_AFTER = 5.0
"""A connection that lasted this long (seconds) resets the reconnect backoff; a shorter one counts as a failure."""
STDERR_TAIL = 1200

CAPABILITIES = types.ClientCapabilities(
    sampling=types.SamplingCapability(context=types.SamplingContextCapability(), tools=types.SamplingToolsCapability()),
    elicitation=types.ElicitationCapability(form=types.FormElicitationCapability(),
                                            url=types.UrlElicitationCapability()),
    roots=types.RootsCapability(list_changed=False),
)
"""What the gateway tells every upstream it can do: whatever its clients can, by passing the request
to the client of the call it belongs to (:mod:`codeward.gateway.relay`). A client that cannot is
named in the error the upstream gets; the upstream's tools for it are listed all the same."""
_RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
"""A result kept as the JSON the server sent (after the SDK checked it against the protocol version)."""

UpstreamEvent = Callable[["Upstream", types.ServerNotification], None]
"""Told of an upstream's change notifications (resources, prompts) by the gateway."""


class ServerState(StrEnum):
    CONNECTING = "connecting"
    READY = "ready"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    DISABLED = "disabled"
    STOPPED = "stopped"


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server for listings (``codeward servers``, the control plane)."""

    alias: str
    transport: str
    target: str
    state: ServerState
    tools: int
    latency_ms: float | None
    protocol_version: str | None
    server_name: str | None
    error: str | None
    reconnects: int


@dataclass(eq=False)
class _Connection:
    session: ClientSession
    dispatcher: JSONRPCDispatcher[Any]
    version: str
    failures: HttpFailures
    lost: anyio.Event
    closed: anyio.Event = field(default_factory=anyio.Event)
    loss: UpstreamError | None = None


class Upstream:
    """One configured server and its live connection. Create it inside a running event loop."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        on_change: Callable[[Upstream], None] | None = None,
        on_event: UpstreamEvent | None = None,
        out_of_call_log: OutOfCallLog | None = None,
        retries: int = 6,
        backoff: float = 0.25,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.alias = config.alias
        self.retries = retries
        self.backoff = backoff
        self.environ = environ
        self.state = ServerState.CONNECTING if config.enabled else ServerState.DISABLED
        self.tools: tuple[types.Tool, ...] = ()
        self.tool_wire: dict[str, dict[str, Any]] = {}
        """Each tool's definition as the server sent it, by its name there."""
        self.capabilities: types.ServerCapabilities | None = None
        """What the server announced it offers (tools, resources, prompts, completions, logging)."""
        self.error: UpstreamError | None = None
        self.protocol_version: str | None = None
        self.server_name: str | None = None
        self.latency_ms: float | None = None
        self.reconnects = 0
        self.settled = anyio.Event()
        """Set once the first connection attempt has ended (ready or failed)."""
        self.board = RelayBoard()
        """The requests running here, and which one a request from the server belongs to."""
        self._on_change = on_change
        self._on_event = on_event
        self._out_of_call_log = out_of_call_log or _drop_log
        self._callbacks = UpstreamCallbacks(self.alias, self.board, sampling=config.sampling,
                                            out_of_call_log=self._out_of_call_log)
        self._conn: _Connection | None = None
        self._changed = anyio.Event()
        self._wake = anyio.Event()
        self._refresh = anyio.Event()
        self._ever_ready = False
        self._stderr: IO[str] | None = None
        self._stderr_mark = 0

    # -- status ------------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        return ServerStatus(
            alias=self.alias,
            transport=self.config.transport,
            target=self.config.target,
            state=self.state,
            tools=len(self.tools),
            latency_ms=self.latency_ms,
            protocol_version=self.protocol_version,
            server_name=self.server_name,
            error=self.error.message if self.error and self.state != ServerState.READY else None,
            reconnects=self.reconnects,
        )

    def unavailable_note(self) -> str | None:
        """Why this server offers no tools now (failed, or still starting), for a person; None when it is ready
        (or disabled, or stopped)."""
        hint = f" ({self.error.hint})" if self.error is not None and self.error.hint else ""
        if self.state == ServerState.FAILED:
            reason = self.error.message if self.error is not None else "could not connect"
            return (f"server {self.alias!r} is unavailable and offers no tools: {reason}{hint}; "
                    f"`codeward servers` shows its state")
        if self.state in (ServerState.CONNECTING, ServerState.RECONNECTING):
            last = f"; last error: {self.error.message}{hint}" if self.error is not None else ""
            return (f"server {self.alias!r} is still starting (its limit is {self.config.timeout:g}s): its tools "
                    f"appear when it answers{last}")
        return None

    def offers(self, feature: str) -> bool:
        """Whether the live server announced ``feature`` (``resources``, ``prompts``, ``completions``, ``logging``)."""
        return self.state == ServerState.READY and getattr(self.capabilities, feature, None) is not None

    def _set_state(self, state: ServerState, error: UpstreamError | None = None) -> None:
        self.state = state
        if error is not None:
            self.error = error
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        if self._on_change is not None:
            self._on_change(self)

    # -- the supervisor ------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect and stay connected until cancelled (run it in the gateway's task group)."""
        if not self.config.enabled:
            self.settled.set()
            return
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as stderr:
            self._stderr = stderr if self.config.transport == "stdio" else None
            try:
                await self._supervise()
            finally:
                self.state = ServerState.STOPPED
                self._stderr = None

    async def _supervise(self) -> None:
        failures = 0
        while True:
            started = anyio.current_time()
            error, was_ready = await self._connect_once()
            if was_ready:
                self.reconnects += 1
                logger.info("gateway: server %r disconnected (%s); reconnecting", self.alias,
                            error.message if error else "closed")
                if anyio.current_time() - started >= STABLE_AFTER:
                    failures = 0
                    continue
                # up only briefly: a crash loop, so back off as for a failed attempt
            failures += 1
            if not self._ever_ready or failures > self.retries:
                self._give_up(error, failures)
                await self._announce_unavailable()
                await self._wake.wait()
                self._wake = anyio.Event()
                failures = 0
                self._set_state(ServerState.CONNECTING)
                continue
            await anyio.sleep(min(self.backoff * 2 ** (failures - 1), 5.0))

    def _give_up(self, error: UpstreamError | None, attempts: int) -> None:
        error = error or UpstreamUnreachable(self.alias, "could not connect")
        had_tools = bool(self.tools)
        self.tools = ()
        self.tool_wire = {}
        self._set_state(ServerState.FAILED, error)
        self.settled.set()
        again = f" after {attempts} reconnect attempts" if self._ever_ready else ""
        logger.warning("gateway: server %r is unavailable%s and offers no tools: %s%s", self.alias, again,
                       error.message, f" ({error.hint})" if error.hint else "")
        if had_tools and self._on_change is not None:
            self._on_change(self)

    async def _announce_unavailable(self) -> None:
        """Tell the gateway's clients (an MCP log message) that this server failed, not only its stderr."""
        note = self.unavailable_note()
        if note is None:
            return
        try:
            await self._out_of_call_log(types.LoggingMessageNotificationParams(level="error", data=note,
                                                                               logger="codeward.gateway"))
        except Exception as exc:  # telling of a failure never adds one
            logger.debug("gateway: could not announce server %r as unavailable: %s", self.alias, exc)

    def reconnect(self) -> None:
        """Ask for a new connection now (after a failure, or to pick up a restarted server)."""
        if self.state == ServerState.FAILED:
            self._wake.set()
        elif self._conn is not None:
            self._conn.loss = UpstreamUnreachable(self.alias, "reconnect requested")
            self._conn.lost.set()

    async def _connect_once(self) -> tuple[UpstreamError | None, bool]:
        """One connection from start to end; returns why it ended and whether it ever got ready."""
        failures = HttpFailures()
        lost = anyio.Event()
        conn: _Connection | None = None
        error: UpstreamError | None = None
        started = time.perf_counter()
        self._mark_stderr()
        with anyio.CancelScope(deadline=anyio.current_time() + self.config.timeout) as scope:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(
                        open_transport(self.config, failures=failures, ended=lost, errlog=self._stderr,
                                       environ=self.environ))
                    dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write)
                    callbacks = self._callbacks
                    session = await stack.enter_async_context(ClientSession(
                        dispatcher=dispatcher, message_handler=self._on_message,
                        sampling_callback=callbacks.sampling, elicitation_callback=callbacks.elicitation,
                        list_roots_callback=callbacks.roots, logging_callback=callbacks.logging,
                        client_info=types.Implementation(name=CLIENT_NAME, version=__version__)))
                    version = await self._handshake(session)
                    offers_tools = session.server_capabilities is None or session.server_capabilities.tools
                    tools = await self._list_tools(session) if offers_tools else ((), {})
                    scope.deadline = math.inf
                    conn = _Connection(session, dispatcher, version, failures, lost)
                    self._conn = conn
                    self._ever_ready = True
                    self.latency_ms = (time.perf_counter() - started) * 1000
                    self.tools, self.tool_wire = tools
                    self._set_state(ServerState.READY)
                    self.settled.set()
                    await self._serve(conn)
                    error = conn.loss or self._closed_error()
            except Exception as exc:  # every failure of this connection becomes a typed error
                tail = self._stderr_tail() if conn is None else ""
                error = (conn.loss if conn and conn.loss else None) or classify(self.alias, self.config, exc,
                                                                               failures, tail)
            finally:
                if conn is not None:
                    conn.loss = conn.loss or error
                    self._conn = None
                    self._set_state(ServerState.RECONNECTING, error)
                    conn.closed.set()
        if scope.cancelled_caught and conn is None:
            error = UpstreamTimeout(
                self.alias, f"no answer to initialize/tools/list within {self.config.timeout:g}s "
                f"({self.config.target}){self._stderr_note()}",
                "The server hangs at start-up or is slow: check it by hand, or raise its 'timeout'.")
        return error, conn is not None

    async def _serve(self, conn: _Connection) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._follow_tool_changes, conn)
            await conn.lost.wait()
            tg.cancel_scope.cancel()

    async def _handshake(self, session: ClientSession) -> str:
        """``initialize`` that logs and tolerates a protocol version this SDK does not know."""
        params = types.InitializeRequestParams(
            protocol_version=LATEST_HANDSHAKE_VERSION, capabilities=CAPABILITIES,
            client_info=types.Implementation(name=CLIENT_NAME, version=__version__))
        result = await session.send_request(types.InitializeRequest(params=params), types.InitializeResult)
        answered = result.protocol_version
        if answered != LATEST_HANDSHAKE_VERSION:
            spoken = closest_known_version(answered)
            also = f", speaking {spoken}" if spoken != answered else ""
            logger.warning("gateway: server %r: protocol version mismatch (sent %s, got %s%s); proceeding",
                           self.alias, LATEST_HANDSHAKE_VERSION, answered, also)
            result = result.model_copy(update={"protocol_version": spoken})
        session.adopt(result)
        await session.send_notification(types.InitializedNotification())
        self.protocol_version = answered
        self.server_name = result.server_info.name if result.server_info else None
        self.capabilities = result.capabilities
        return result.protocol_version

    async def _list_tools(self, session: ClientSession) -> tuple[tuple[types.Tool, ...], dict[str, dict[str, Any]]]:
        """Every page of ``tools/list``: the tools, and each one as the server sent it."""
        tools: list[types.Tool] = []
        wire: dict[str, dict[str, Any]] = {}
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await session.send_request(
                types.ListToolsRequest(params=types.PaginatedRequestParams(cursor=cursor)), _RAW)  # type: ignore[type-var]
            for raw in page.get("tools") or ():
                tool = types.Tool.model_validate(raw, by_name=False)
                tools.append(tool)
                wire[tool.name] = raw
            cursor = page.get("nextCursor")
            if not cursor or not isinstance(cursor, str):
                break
        return tuple(tools), wire

    async def _follow_tool_changes(self, conn: _Connection) -> None:
        while True:
            await self._refresh.wait()
            self._refresh = anyio.Event()
            try:
                started = time.perf_counter()
                with anyio.fail_after(self.config.timeout):
                    tools, wire = await self._list_tools(conn.session)
                self.latency_ms = (time.perf_counter() - started) * 1000
            except Exception as exc:
                logger.warning("gateway: server %r announced new tools but listing them failed: %s", self.alias, exc)
                continue
            self.tools, self.tool_wire = tools, wire
            logger.info("gateway: server %r now offers %d tools", self.alias, len(tools))
            self._set_state(ServerState.READY)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._refresh.set()
        elif isinstance(message, types.ResourceListChangedNotification | types.PromptListChangedNotification |
                        types.ResourceUpdatedNotification | types.ElicitCompleteNotification):
            if self._on_event is not None:
                try:
                    self._on_event(self, message)
                except Exception:  # a listener must never break the connection
                    logger.exception("gateway: handling %s of server %r failed", type(message).__name__, self.alias)
        elif isinstance(message, Exception):
            logger.debug("gateway: server %r transport fault: %s", self.alias, message)

    def _closed_error(self) -> UpstreamError:
        return UpstreamUnreachable(self.alias, "the server closed the connection",
                                   "It exited or dropped the stream; it is being restarted.")

    def _stderr_tail(self) -> str:
        """What the server wrote to stderr since the current connection attempt began."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, 2)
            self._stderr.seek(max(self._stderr_mark, size - STDERR_TAIL))
            return self._stderr.read().strip()
        except (OSError, ValueError):
            return ""

    def _mark_stderr(self) -> None:
        if self._stderr is not None:
            try:
                self._stderr.flush()
                self._stderr_mark = self._stderr.seek(0, 2)
            except (OSError, ValueError):
                self._stderr_mark = 0

    def _stderr_note(self) -> str:
        tail = self._stderr_tail()
        return f"; its stderr ends with: {tail[-400:]}" if tail else ""

    async def measure_latency(self) -> float | None:
        """One ``tools/list`` round trip on the live connection, in milliseconds (None if down)."""
        conn = self._conn
        if self.state != ServerState.READY or conn is None:
            return None
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.config.timeout):
                await conn.session.list_tools(params=types.PaginatedRequestParams())
        except Exception:
            return None
        self.latency_ms = (time.perf_counter() - started) * 1000
        return self.latency_ms

    # -- requests ----------------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        relay: Relay | None = None,
        idempotent: bool = False,
    ) -> tuple[dict[str, Any], types.CallToolResult]:
        """Call ``tool`` upstream: the result as the server sent it, and as a ``CallToolResult``.

        A tool-level failure comes back as a result with ``isError``. Raises an
        :class:`UpstreamError` subclass for HTTP-level, JSON-RPC and timeout failures.
        """
        raw = await self.request("tools/call", {"name": tool, "arguments": dict(arguments or {})}, relay=relay,
                                 idempotent=idempotent, what=f"tool {tool!r}")
        try:
            return raw, types.CallToolResult.model_validate(raw, by_name=False)
        except ValidationError as exc:
            raise UpstreamProtocolError(self.alias, f"tool {tool!r} returned an invalid result: {exc}",
                                        "The server broke the MCP protocol; report it to its authors.") from exc

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        relay: Relay | None = None,
        idempotent: bool = False,
        what: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one request to the server; its result as the server sent it.

        ``relay`` is the client the request is made for: what the server asks or reports while it
        runs goes there. The request is bounded by ``timeout`` (``call_timeout`` by default), timed
        here — a JSON-RPC error with any code is the server's own answer. It is sent again once,
        after reconnecting, only when it provably did not arrive (connection refused, session
        unknown to the server) or ``idempotent`` says running it twice is harmless. Raises an
        :class:`UpstreamError` subclass for HTTP-level, JSON-RPC, protocol and timeout failures.
        """
        what = what or method
        limit = self.config.call_timeout if timeout is None else timeout
        for attempt in range(2):
            conn = await self._ready()
            seen = conn.failures.count
            try:
                with self.board.running(relay), anyio.fail_after(limit):
                    raw = await self._send(conn, method, params, relay)
                if relay is not None:
                    await relay.drain()
                return raw
            except TimeoutError:
                raise UpstreamTimeout(self.alias, f"{what} did not answer within {limit:g}s",
                                      "Raise the server's 'call_timeout', or ask for less work per call.") from None
            except MCPError as exc:
                error, retry = await self._request_error(conn, what, exc, seen, idempotent)
                if retry and attempt == 0:
                    continue
                raise error from exc
            except (RuntimeError, ValidationError) as exc:
                raise UpstreamProtocolError(self.alias, f"{what} returned an invalid result: {exc}",
                                            "The server broke the MCP protocol; report it to its authors.") from exc
        raise AssertionError("unreachable")

    async def _send(self, conn: _Connection, method: str, params: Mapping[str, Any] | None,
                    relay: Relay | None) -> dict[str, Any]:
        """One request straight through the dispatcher; the gateway passes the result on as it came, so
        the session's typed passes are skipped (``tools/call``), or kept to check the result's shape."""
        headers = {MCP_PROTOCOL_VERSION_HEADER: conn.version}
        name_key = NAME_BEARING_METHODS.get(method)
        name = (params or {}).get(name_key) if name_key else None
        if isinstance(name, str):
            headers[MCP_NAME_HEADER] = encode_header_value(name)
        options: CallOptions = {"headers": headers}
        if relay is not None and relay.wants_progress:
            options["on_progress"] = relay.progress
        raw = await conn.dispatcher.send_raw_request(method, dict(params) if params is not None else None, options)
        if method != "tools/call":
            with suppress(KeyError):  # a method this version does not define: nothing to check it against
                methods.validate_server_result(method, conn.version, raw)
        return raw

    async def _ready(self) -> _Connection:
        """The live connection, waiting (bounded) while the server connects or reconnects."""
        deadline = anyio.current_time() + self.config.timeout
        while True:
            conn = self._conn
            if self.state == ServerState.READY and conn is not None and not conn.lost.is_set():
                return conn
            if self.state in (ServerState.FAILED, ServerState.DISABLED, ServerState.STOPPED):
                raise self.unavailable()
            changed = self._changed
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())) as waited:
                await changed.wait()
            if waited.cancelled_caught:
                raise UpstreamTimeout(self.alias, f"still {self.state.value} after {self.config.timeout:g}s",
                                      "The server is restarting slowly; retry in a moment.")

    def unavailable(self) -> UpstreamError:
        if self.state == ServerState.DISABLED:
            return UpstreamUnreachable(self.alias, "the server is disabled in the configuration",
                                       "Remove 'disabled = true' from its table to use it.")
        if self.error is None:
            return UpstreamUnreachable(self.alias, "the server is not connected",
                                       "`codeward servers` shows every server's state.")
        return self.error.restated(f"the server is unavailable: {self.error.message}",
                                   f"{self.error.hint} `codeward servers` shows every server's state.".strip())

    async def _request_error(self, conn: _Connection, what: str, exc: MCPError, seen: int,
                             idempotent: bool) -> tuple[UpstreamError, bool]:
        """Map an SDK error to a typed one, and say whether sending the request again is safe."""
        http = conn.failures.last if conn.failures.count > seen else None
        if exc.code == CONNECTION_CLOSED and _connection_gone(conn):
            conn.lost.set()
            with anyio.move_on_after(5):
                await conn.closed.wait()
            loss = conn.loss
            if isinstance(loss, UpstreamUnreachable) and loss.undelivered:
                return loss, True
            if idempotent:
                return loss or self._closed_error(), True
            why = f" ({loss.message})" if loss else ""
            return UpstreamDisconnected(
                self.alias, f"the connection was lost while {what} was running{why}; it may or may not have run",
                "The server is being reconnected; check whether the action happened before calling again."), False
        forgotten = (http is not None and http.status == 404) or "session terminated" in exc.message.lower()
        if exc.code == INVALID_REQUEST and forgotten:
            loss = UpstreamUnreachable(self.alias, "the server no longer knows this session (HTTP 404)")
            loss.undelivered = True
            conn.loss = loss
            conn.lost.set()
            with anyio.move_on_after(5):
                await conn.closed.wait()
            return loss, True
        if http is not None:
            return UpstreamHttpError(self.alias, http.status, http.body, http.url,
                                     _auth_hint(self.config, self.environ, http.status)), False
        return UpstreamRpcError(self.alias, exc.code, exc.message, exc.data), False


async def _drop_log(params: types.LoggingMessageNotificationParams) -> None:
    return None


def _connection_gone(conn: _Connection) -> bool:
    """Whether a ``-32000`` error is the connection closing (the SDK's own) rather than the server's answer:
    the read stream ended, or the dispatcher stopped, before the error reached the caller."""
    return conn.lost.is_set() or bool(getattr(conn.dispatcher, "_closed", False))


def closest_known_version(answered: str) -> str:
    """The handshake version this SDK speaks that is nearest to ``answered`` (itself when known).

    Revisions are date strings: an unknown newer one maps to the newest known, an older one to
    the oldest; anything else to the newest.
    """
    if answered in HANDSHAKE_PROTOCOL_VERSIONS:
        return answered
    if answered < HANDSHAKE_PROTOCOL_VERSIONS[0] and answered[:2].isdigit():
        return HANDSHAKE_PROTOCOL_VERSIONS[0]
    older = [v for v in HANDSHAKE_PROTOCOL_VERSIONS if v <= answered]
    return older[-1] if older and answered[:2].isdigit() else LATEST_HANDSHAKE_VERSION


def classify(alias: str, config: ServerConfig, exc: BaseException, failures: HttpFailures,
             stderr_tail: str = "") -> UpstreamError:
    """The typed error behind whatever a transport or session raised (exception groups unwrapped)."""
    import httpx2

    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, UpstreamError):
            return leaf
    if failures.last is not None:
        last = failures.last
        return UpstreamHttpError(alias, last.status, last.body, last.url, _auth_hint(config, None, last.status))
    note = f"; its stderr ends with: {stderr_tail[-400:]}" if stderr_tail else ""
    for leaf in leaves:
        if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
            error = UpstreamUnreachable(alias, f"cannot connect to {config.url}: {leaf or type(leaf).__name__}",
                                        "Is the server running? Check the url (host, port and path).")
            error.undelivered = True
            return error
        if isinstance(leaf, httpx2.TimeoutException):
            return UpstreamTimeout(alias, f"{config.url} did not answer in time ({type(leaf).__name__})",
                                   "The server is slow or hung; raise its 'timeout' or check it.")
        if isinstance(leaf, httpx2.HTTPStatusError):
            response = leaf.response
            return UpstreamHttpError(alias, response.status_code, _safe_text(response), str(response.request.url),
                                     _auth_hint(config, None, response.status_code))
        if isinstance(leaf, httpx2.HTTPError):
            return UpstreamUnreachable(alias, f"HTTP transport failed for {config.url}: {type(leaf).__name__}: {leaf}",
                                       "Check that the url is an MCP endpoint and the server is healthy.")
        if isinstance(leaf, FileNotFoundError | PermissionError) and config.transport == "stdio":
            return UpstreamUnreachable(alias, f"cannot start {config.command!r}: {leaf.strerror or leaf}",
                                       "Install the program or fix 'command' (use an absolute path if it is "
                                       "not on PATH).")
        if isinstance(leaf, OSError):
            return UpstreamUnreachable(alias, f"{type(leaf).__name__}: {leaf}{note}",
                                       "Check the server's configuration.")
        if isinstance(leaf, MCPError):
            if leaf.code == CONNECTION_CLOSED:
                return UpstreamUnreachable(alias, f"the server closed the connection during start-up{note}",
                                           "Run its command by hand to see why it exits.")
            return UpstreamRpcError(alias, leaf.code, leaf.message, leaf.data)
        if isinstance(leaf, RuntimeError | ValidationError | ValueError):
            return UpstreamProtocolError(alias, f"{type(leaf).__name__}: {leaf}{note}",
                                         "The server does not speak MCP as expected; check the command or url.")
    first = leaves[0] if leaves else exc
    return UpstreamProtocolError(alias, f"{type(first).__name__}: {first}{note}", "Check the server's configuration.")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _safe_text(response: Any) -> str:
    try:
        return str(response.text)
    except Exception:
        return ""


def _auth_hint(config: ServerConfig, environ: Mapping[str, str] | None, status: int) -> str:
    if status not in (401, 403):
        return ""
    import os

    env = os.environ if environ is None else environ
    if config.auth_token:
        return "The server refused the auth_token in the config; replace it with a valid token."
    if config.auth_env and not env.get(config.auth_env):
        return (f"auth_env names {config.auth_env}, which is not set in the environment, so no token was sent; "
                "export it before starting codeward.")
    if config.auth_env:
        return f"The server refused the token in ${config.auth_env}; set it to a valid token."
    return ("No token was sent: add auth_env = \"VAR\" (an environment variable holding the token) or "
            "auth_token to this server's table.")
