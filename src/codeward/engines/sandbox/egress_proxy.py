"""The egress proxy: a sandboxed run's only way out when the operator allows some domains.

An HTTP proxy on the host — ``CONNECT host:port`` tunnels (https, and anything else a client
tunnels) and absolute-URI requests forwarded as plain http — that listens on a socket inside the
client's network namespace (``127.0.0.1:3128`` there; the namespace has no other route).

Several runs share that namespace (a shell, processes, code, registry tools), each with its own
lists. So each run is admitted with a credential of its own (:meth:`Served.admit`): its proxy
variables carry it (``http://codeward:TOKEN@127.0.0.1:3128``), clients send it as
``Proxy-Authorization``, and the proxy decides the connection by *that run's*
:class:`~.egress_policy.EgressPolicy` and records the decision in *that run's* :class:`EgressLog` —
attribution by the connection, not by time. A connection without a live credential is answered
``407``. Each connection is decided by the name first, then every address it resolves to; the
connection is then made to the checked address, so the answer cannot change in between. A refusal
answers ``403`` with a reason phrase and body naming the domain and the ``[network]`` key that would
allow it, and every decision is logged (``codeward.network``).

One event loop in a thread of its own serves every namespace of the server; requests are parsed
with h11.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import ipaddress
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import h11

from codeward.engines.net.guard import IPAddress
from codeward.engines.sandbox.egress_policy import EgressPolicy

if TYPE_CHECKING:
    from codeward.kernel.context import Services

PROXY_PORT = 3128
PROXY_USER = "codeward"
CONNECT_TIMEOUT_S = 10.0
HEAD_TIMEOUT_S = 30.0
MAX_HEAD_BYTES = 64 * 1024
CHUNK = 256 * 1024
KEPT_EVENTS = 1000
MAX_CONNECTIONS = 256
"""Connections one namespace may hold open through the proxy at once; more are answered 503."""
HOP_BY_HOP = frozenset({b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization",
                        b"proxy-authenticate", b"te", b"trailer", b"upgrade"})
logger = logging.getLogger("codeward.network")
T = TypeVar("T")
Audit = Callable[["EgressEvent"], None]


def proxy_environment(token: str) -> dict[str, str]:
    """The variables that send a box's HTTP clients (curl, pip, uv, npm, cargo, go...) through the proxy,
    with the run's credential (they all send a proxy URL's user and password as ``Proxy-Authorization``)."""
    url = f"http://{PROXY_USER}:{token}@127.0.0.1:{PROXY_PORT}"
    env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
    return env


def egress_proxy_of(services: Services) -> EgressProxy:
    """The server's proxy, made on first use."""
    return services.runtimes.get(EgressProxy, EgressProxy)


def egress_notes(events: list[EgressEvent]) -> list[str]:
    """What a run's result says of its connections: each refusal, and how many were allowed."""
    notes = [event.line() for event in events if not event.allowed]
    allowed = sorted({f"{event.host}:{event.port}" for event in events if event.allowed})
    if allowed:
        notes.append(f"network: {sum(e.allowed for e in events)} connection(s) allowed through the proxy "
                     f"({', '.join(allowed[:10])}{', ...' if len(allowed) > 10 else ''})")
    return notes


@dataclass(frozen=True)
class EgressEvent:
    """One connection the proxy decided."""

    at: float
    allowed: bool
    method: str
    host: str
    port: int
    address: str
    reason: str
    run: str = ""
    """Which run made it (``run_shell``, ``process web``, ``code``...); empty when none did."""

    def line(self) -> str:
        verdict = "allowed" if self.allowed else "REFUSED"
        where = f"{self.host}:{self.port}" + (f" ({self.address})" if self.address else "")
        return f"network: {verdict} {self.method} {where}" + (f": {self.reason}" if not self.allowed else "")


class EgressLog:
    """The decisions for one run (or, for connections of no run, one namespace), newest last (bounded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[EgressEvent] = []
        self._dropped = 0
        self.open_connections = 0
        """Changed only on the proxy's event loop."""

    def add(self, event: EgressEvent) -> None:
        with self._lock:
            self._events.append(event)
            if len(self._events) > KEPT_EVENTS:
                del self._events[0]
                self._dropped += 1

    def since(self, mark: int) -> tuple[list[EgressEvent], int]:
        """The events from position ``mark`` on (0: the first), and the position after them."""
        with self._lock:
            return list(self._events[max(0, mark - self._dropped):]), self._dropped + len(self._events)


class EgressGrant:
    """One run's admission to its namespace's proxy: its credential, its lists, its decisions.
    :meth:`close` (the run ended) makes the credential worthless."""

    def __init__(self, grants: Grants, token: str, policy: EgressPolicy, label: str) -> None:
        self._grants = grants
        self.token = token
        self.policy = policy
        self.label = label
        self.log = EgressLog()
        self._seen = 0

    def environment(self) -> dict[str, str]:
        """The proxy variables for the run, carrying its credential."""
        return proxy_environment(self.token)

    def notes(self) -> list[str]:
        """What the run's result says of the connections it made since the last call (each refusal, a count of
        the allowed ones)."""
        events, self._seen = self.log.since(self._seen)
        return egress_notes(events)

    def close(self) -> None:
        self._grants.revoke(self.token)


class Grants:
    """The live credentials of one namespace's runs (read on the proxy's loop, changed by the runs' threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, EgressGrant] = {}

    def admit(self, policy: EgressPolicy, label: str) -> EgressGrant:
        grant = EgressGrant(self, secrets.token_urlsafe(24), policy, label)
        with self._lock:
            self._live[grant.token] = grant
        return grant

    def revoke(self, token: str) -> None:
        with self._lock:
            self._live.pop(token, None)

    def find(self, token: str) -> EgressGrant | None:
        with self._lock:
            return self._live.get(token)


class Served:
    """One namespace's listener being served; :meth:`admit` lets a run in, :meth:`close` stops it."""

    def __init__(self, proxy: EgressProxy, server: asyncio.Server, grants: Grants, log: EgressLog) -> None:
        self._proxy = proxy
        self._server = server
        self._grants = grants
        self.log = log
        """Connections that belonged to no run (no live credential): the server log's, no result's."""

    def admit(self, policy: EgressPolicy, label: str = "") -> EgressGrant:
        """A credential for one run deciding its connections by ``policy``; ``label`` names the run in the log."""
        return self._grants.admit(policy, label)

    def close(self) -> None:
        """Stop accepting (the listener closes); connections already open end with their peers."""
        server = self._server

        async def stop() -> None:
            server.close()

        self._proxy.call_if_running(stop())


class EgressProxy:
    """The server's proxy: one event loop thread, made on first use, serving any number of listeners."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def serve(self, listener: socket.socket, label: str, audit: Audit | None = None) -> Served:
        """Serve connections accepted on ``listener`` (which the caller hands over) as ``label``'s; ``audit``
        is told every decision (an ``OSError`` it raises is logged, not fatal)."""
        log = EgressLog()
        grants = Grants()
        listener.setblocking(False)

        async def start() -> asyncio.Server:
            return await asyncio.start_server(lambda r, w: self._connection(r, w, grants, log, label, audit),
                                              sock=listener)

        return Served(self, self.call(start()), grants, log)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._running_loop()).result(timeout)

    def call_if_running(self, coroutine: Coroutine[Any, Any, None], timeout: float = 2.0) -> None:
        """Run ``coroutine`` on the loop unless the proxy was closed (then the loop and its sockets are gone)."""
        with self._lock:
            loop = self._loop
        if loop is None:
            coroutine.close()
            return
        with contextlib.suppress(RuntimeError, TimeoutError):
            asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout)

    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            with contextlib.suppress(RuntimeError, TimeoutError):
                asyncio.run_coroutine_threadsafe(_cancel_connections(), loop).result(5)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            if not thread.is_alive():
                loop.close()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, daemon=True, name="codeward-egress-proxy")
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    # -- one connection --------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, grants: Grants,
                          log: EgressLog, label: str, audit: Audit | None) -> None:
        log.open_connections += 1
        try:
            await self._serve_one(reader, writer, grants, log, label, audit)
        except (TimeoutError, OSError, h11.ProtocolError, asyncio.IncompleteReadError):
            pass
        finally:
            log.open_connections -= 1
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, grants: Grants,
                         log: EgressLog, label: str, audit: Audit | None) -> None:
        client = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        try:
            request = await asyncio.wait_for(_next_event(client, reader), HEAD_TIMEOUT_S)
        except h11.RemoteProtocolError as exc:
            with contextlib.suppress(h11.LocalProtocolError):
                await _answer(writer, client, 400, "Bad Request", f"codeward: the proxy could not read the "
                              f"request ({exc}); send CONNECT host:port or an absolute http:// URL.\n")
            return
        if not isinstance(request, h11.Request):
            return
        method = request.method.decode("ascii", "replace")
        target = _target(request)
        if target is None:
            await _answer(writer, client, 400, "Bad Request", "codeward's proxy takes CONNECT host:port and "
                          "absolute http:// URLs; use https:// (CONNECT) or http:// with the proxy variables set.")
            return
        host, port = target
        if log.open_connections > MAX_CONNECTIONS:
            await _answer(writer, client, 503, "Too Many Connections", f"codeward: this session already has "
                          f"{MAX_CONNECTIONS} connections open through the proxy; close some first.\n")
            return
        grant = grants.find(_credential(request))
        address: IPAddress | None = None
        refusal: str | None = ("the connection carries no credential of a running run (each run's proxy variables "
                               "carry its own; use them as given)")
        if grant is not None:
            address, refusal = await _decide(grant.policy, host, port)
        event = EgressEvent(time.time(), refusal is None, method, host, port, str(address or ""), refusal or "",
                            grant.label if grant is not None else "")
        (grant.log if grant is not None else log).add(event)
        logger.log(logging.INFO if event.allowed else logging.WARNING, "%s%s%s", event.line(),
                   f" [client {label}]" if label else "", f" [{event.run}]" if event.run else "")
        if audit is not None:
            try:
                audit(event)
            except OSError as exc:
                logger.warning("could not record a network decision: %s", exc)
        if grant is None:
            await _answer(writer, client, 407, "Proxy Authentication Required", f"codeward: {refusal}\n",
                          [(b"proxy-authenticate", b'Basic realm="codeward"')])
            return
        if refusal is not None or address is None:
            await _answer(writer, client, 403, f"codeward refused {host}", f"codeward: {refusal}\n")
            return
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(str(address), port), CONNECT_TIMEOUT_S)
        except (TimeoutError, OSError) as exc:
            await _answer(writer, client, 502, "Bad Gateway", f"codeward: could not connect to {host}:{port} "
                          f"({address}): {exc or 'timed out'}\n")
            return
        try:
            if request.method == b"CONNECT":
                writer.write(client.send(h11.Response(status_code=200, reason=b"Connection established",
                                                      headers=[])) or b"")
                leftover, _ = client.trailing_data
                if leftover:
                    upstream_writer.write(leftover)
            else:
                await _forward_request(client, request, host, port, reader, upstream_writer)
            await _splice(reader, writer, upstream_reader, upstream_writer, request.method == b"CONNECT")
        finally:
            upstream_writer.close()
            with contextlib.suppress(OSError):
                await upstream_writer.wait_closed()


async def _decide(policy: EgressPolicy, host: str, port: int) -> tuple[IPAddress | None, str | None]:
    """The address to connect to, or why not: the name, then what it resolves to (all of it)."""
    refusal = policy.refuse_name(host)
    if refusal is not None:
        return None, refusal
    fixed = policy.fixed_address(host)
    if fixed is not None:
        addresses = [fixed]
    else:
        try:
            found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return None, f"{host} could not be resolved ({exc})"
        addresses = list(dict.fromkeys(_parsed(str(info[4][0])) for info in found))
    for address in addresses:
        refusal = policy.refuse_address(host, address)
        if refusal is not None:
            return address, refusal  # any bad answer refuses the name: no retry on another address
    return (addresses[0], None) if addresses else (None, f"{host} resolved to no address")


def _credential(request: h11.Request) -> str:
    """The password of the request's ``Proxy-Authorization: Basic`` (the run's token), or ``""``."""
    for name, value in request.headers:
        if name.lower() == b"proxy-authorization":
            scheme, _, encoded = value.partition(b" ")
            if scheme.lower() != b"basic":
                return ""
            try:
                decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return ""
            return decoded.partition(":")[2]
    return ""


async def _cancel_connections() -> None:
    """End every connection still open (the server is stopping)."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


def _parsed(text: str) -> IPAddress:
    return ipaddress.ip_address(text.split("%", 1)[0])


async def _next_event(connection: h11.Connection, reader: asyncio.StreamReader) -> Any:
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        connection.receive_data(await reader.read(CHUNK))


def _target(request: h11.Request) -> tuple[str, int] | None:
    """(host, port) of a CONNECT authority or an absolute http URL; ``None`` for anything else."""
    text = request.target.decode("ascii", "replace")
    if request.method == b"CONNECT":
        parts = urlsplit(f"//{text}")
    else:
        parts = urlsplit(text)
        if parts.scheme.lower() != "http":
            return None
    try:
        port = parts.port or (None if request.method == b"CONNECT" else 80)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return parts.hostname, port


async def _answer(writer: asyncio.StreamWriter, connection: h11.Connection, status: int, reason: str,
                  body: str, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
    data = body.encode()
    phrase = reason.encode("ascii", "replace")[:200]
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(data)).encode()),
               (b"connection", b"close"), (b"x-codeward-refused", b"1" if status in (403, 407) else b"0"), *extra]
    for event in (h11.Response(status_code=status, reason=phrase, headers=headers), h11.Data(data=data),
                  h11.EndOfMessage()):
        writer.write(connection.send(event) or b"")
    await writer.drain()


async def _forward_request(client: h11.Connection, request: h11.Request, host: str, port: int,
                           reader: asyncio.StreamReader, upstream: asyncio.StreamWriter) -> None:
    """The request re-framed for the origin (origin-form target, the target's ``Host``, hop-by-hop headers
    dropped, one request per connection), its body passed through."""
    parts = urlsplit(request.target.decode("ascii", "replace"))
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # RFC 9112 3.2.2: the Host the run sent is replaced by the target's, so a request cannot name one
    # (allowed) host to the proxy and another to the server behind it.
    headers = [(name, value) for name, value in request.headers if name.lower() not in HOP_BY_HOP | {b"host"}]
    authority = f"[{host}]" if ":" in host else host
    headers.insert(0, (b"host", (authority if port == 80 else f"{authority}:{port}").encode()))
    headers.append((b"connection", b"close"))
    origin = h11.Connection(h11.CLIENT)
    upstream.write(origin.send(h11.Request(method=request.method, target=path.encode(), headers=headers)) or b"")
    while True:
        event = await asyncio.wait_for(_next_event(client, reader), HEAD_TIMEOUT_S)
        if isinstance(event, h11.Data):
            upstream.write(origin.send(event) or b"")
        elif isinstance(event, h11.EndOfMessage):
            upstream.write(origin.send(h11.EndOfMessage()) or b"")
            break
        else:
            raise h11.RemoteProtocolError("the request ended early")
    await upstream.drain()


async def _splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                  upstream_reader: asyncio.StreamReader, upstream_writer: asyncio.StreamWriter,
                  both_ways: bool) -> None:
    """Bytes from the origin back to the run (and, for a tunnel, from the run on to the origin) until closed."""

    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(CHUNK):
                sink.write(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()

    back = asyncio.ensure_future(pump(upstream_reader, writer))
    if both_ways:
        await pump(reader, upstream_writer)
    await back
