"""The ways a call to an upstream server can fail, told apart.

Three layers fail differently and callers treat them differently:

* **HTTP level** — the request never produced a JSON-RPC answer: an HTTP error status with a
  body that is not JSON-RPC (``401 {"error":"unauthorized"}``), an unreachable host, a process
  that would not start, a timeout. → :class:`UpstreamHttpError`, :class:`UpstreamUnreachable`,
  :class:`UpstreamTimeout`.
* **JSON-RPC level** — the server answered with an ``error`` envelope (unknown tool, invalid
  params). → :class:`UpstreamRpcError`.
* **Tool level** — the call ran and the tool reported failure (``isError: true``). That is a
  normal result, not an exception: its content goes back to the model unchanged.

Each exception knows its :class:`ErrorKind` and renders as an :class:`ErrorInfo` whose
``source`` says the layer (``upstream-http``, ``upstream-rpc``...).
"""

from __future__ import annotations

from codeward.kernel.result import ErrorInfo, ErrorKind

BODY_SNIPPET = 400


class UpstreamError(Exception):
    """Base of every upstream failure; ``message`` says what happened, ``hint`` what to do."""

    kind: ErrorKind = ErrorKind.UNAVAILABLE
    layer: str = "upstream"
    undelivered: bool = False
    """True when the request provably never reached the server (so sending it again is safe)."""

    def __init__(self, alias: str, message: str, hint: str = "") -> None:
        super().__init__(f"{alias}: {message}")
        self.alias = alias
        self.message = message
        self.hint = hint

    def restated(self, message: str, hint: str) -> UpstreamError:
        """The same failure (same class, kind and layer) with a new message and hint."""
        clone = type(self).__new__(type(self))
        Exception.__init__(clone, f"{self.alias}: {message}")
        clone.__dict__.update(self.__dict__)
        clone.message = message
        clone.hint = hint
        return clone

    def info(self) -> ErrorInfo:
        return ErrorInfo(self.kind, f"server {self.alias!r}: {self.message}", self.hint, source=self.layer)


class UpstreamHttpError(UpstreamError):
    """An HTTP error status whose body is not a JSON-RPC message (auth failures, proxies, 5xx)."""

    layer = "upstream-http"

    def __init__(self, alias: str, status: int, body: str, url: str, hint: str = "") -> None:
        snippet = body.strip()[:BODY_SNIPPET] or "(empty body)"
        super().__init__(alias, f"HTTP {status} from {url}: {snippet}", hint or _status_hint(status))
        self.status = status
        self.body = body
        self.url = url
        self.kind = ErrorKind.PERMISSION if status in (401, 403) else ErrorKind.UNAVAILABLE


class UpstreamUnreachable(UpstreamError):
    """The server cannot be reached at all: connection refused, DNS failure, process not started or gone."""

    layer = "upstream-unreachable"


class UpstreamTimeout(UpstreamError):
    """The server did not answer in time (start-up or one call)."""

    kind = ErrorKind.TIMEOUT
    layer = "upstream-timeout"


class UpstreamRpcError(UpstreamError):
    """A JSON-RPC ``error`` answer: the server understood the request and refused it."""

    layer = "upstream-rpc"

    def __init__(self, alias: str, code: int, message: str, data: object = None) -> None:
        detail = f" (data: {_compact(data)})" if data is not None else ""
        super().__init__(alias, f"JSON-RPC error {code}: {message}{detail}", _rpc_hint(code))
        self.code = code
        self.rpc_message = message
        self.data = data
        self.kind = _RPC_KINDS.get(code, ErrorKind.INTERNAL)


class UpstreamProtocolError(UpstreamError):
    """The server answered something that breaks the protocol (bad result shape, bad structured content)."""

    kind = ErrorKind.INTERNAL
    layer = "upstream-protocol"


class UpstreamDisconnected(UpstreamUnreachable):
    """The connection dropped while a call was in flight: the call may or may not have run."""

    layer = "upstream-disconnected"


_RPC_KINDS = {
    -32601: ErrorKind.NOT_FOUND,
    -32602: ErrorKind.INVALID_INPUT,
    -32600: ErrorKind.INVALID_INPUT,
    -32700: ErrorKind.INVALID_INPUT,
}


def _compact(data: object) -> str:
    """An error's data as one line of JSON, cut at :data:`BODY_SNIPPET` characters."""
    import json

    text = json.dumps(data, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= BODY_SNIPPET else text[:BODY_SNIPPET] + "..."


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return ("The server refused the credentials: set auth_token, or auth_env naming an environment "
                "variable that holds a valid token, in this server's [mcp.servers.<alias>] table.")
    if status == 404:
        return "Check the server's url: it should be the MCP endpoint (often ending in /mcp or /sse)."
    if status >= 500:
        return "The server failed internally; check its logs, then retry."
    return "Check the server's url and configuration."


def _rpc_hint(code: int) -> str:
    if code == -32601:
        return "The server does not know that method or tool; list its tools again (`codeward servers`)."
    if code == -32602:
        return "Fix the arguments to match the tool's input schema."
    return "The server refused the request; read its message and adjust the call."
