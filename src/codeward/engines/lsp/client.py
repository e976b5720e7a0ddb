"""One language server, spoken to over its stdio with pygls' JSON-RPC protocol.

pygls frames and parses the messages, matches answers to requests and dispatches the server's
own requests and notifications; this module adds what a client of a *running* server needs:
a reader thread over the process's stdout (the process is started by the sandbox, not here),
the server's stderr kept (its last lines explain a crash), answers as plain JSON (so a server
that strays from the protocol's types still answers), deadlines on every request, the
diagnostics and work-done progress the server reports, and answers to the requests servers make
of their client (configuration, progress tokens, capability registration). A server's
``workspace/applyEdit`` is refused: codeward writes files itself, through its gate.
"""

from __future__ import annotations

import contextlib
import logging
import re
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import IO, Any

from codeward.engines.lsp.positions import Encoding

STDERR_KEPT = 64
LOGS_KEPT = 200
"""Lines of a server's stderr kept for the report when it crashes."""
EXIT_WAIT_S = 2.0


class LspError(Exception):
    """A request failed: the server answered with an error, did not answer in time, or is gone."""


class ServerGone(LspError):
    """The server's process ended (or its pipes broke) before it answered."""


class RequestTimeout(LspError):
    """The server did not answer within the deadline (the request was cancelled)."""


@dataclass
class Diagnostics:
    """What the server last published for one document."""

    version: int | None
    items: list[dict[str, Any]]
    received: float = field(default_factory=time.monotonic)


class _LockedWriter:
    """pygls' writer protocol over the server's stdin; one message at a time from any thread."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._closed = False

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:  # a session being closed has nothing more to say (an answer the reader still sends)
                return
            self._stream.write(data)
            self._stream.flush()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            with contextlib.suppress(OSError, ValueError):
                self._stream.close()


def _raw_converter() -> Any:
    """lsprotocol's converter, keeping every message's params and result as the JSON that came."""
    from lsprotocol import converters
    from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

    converter = converters.get_converter()
    for kind in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(kind, lambda obj, cls: cls(**obj))
    return converter


class LspClient:
    """A started language server process and the JSON-RPC session with it."""

    def __init__(self, proc: subprocess.Popen[bytes], name: str,
                 settings: Callable[[str], Any] | None = None,
                 workspace_folders: list[dict[str, str]] | None = None) -> None:
        from pygls.client import JsonRPCClient
        from pygls.protocol import JsonRPCProtocol

        if logging.getLogger("pygls").level == logging.NOTSET:
            logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message body at INFO
        self.proc = proc
        self.name = name
        self._settings = settings or (lambda _section: None)
        self._folders = workspace_folders or []
        self._rpc = JsonRPCClient(protocol_cls=JsonRPCProtocol, converter_factory=_raw_converter)
        self._stderr: deque[str] = deque(maxlen=STDERR_KEPT)
        self._changed = threading.Condition()
        self._diagnostics: dict[str, Diagnostics] = {}
        self._progress: dict[str, str] = {}
        """Work-done progress in flight: token -> title."""
        self._progress_ended = 0
        self._logs: deque[str] = deque(maxlen=LOGS_KEPT)
        self._logged = 0
        self._closed = threading.Event()
        self.capabilities: dict[str, Any] = {}
        self.encoding = Encoding.UTF16
        self._register_handlers()
        assert proc.stdin is not None and proc.stdout is not None
        self._writer = _LockedWriter(proc.stdin)
        self._rpc.protocol.set_writer(self._writer)
        self._reader = threading.Thread(target=self._read, args=(proc.stdout,), name=f"lsp-{name}-reader",
                                        daemon=True)
        self._reader.start()
        if proc.stderr is not None:
            threading.Thread(target=self._drain_stderr, args=(proc.stderr,), name=f"lsp-{name}-stderr",
                             daemon=True).start()

    # -- the session ----------------------------------------------------------------------

    def initialize(self, root_uri: str, options: Mapping[str, Any] | None, timeout: float) -> dict[str, Any]:
        """The ``initialize``/``initialized`` handshake; returns the server's capabilities."""
        params = {
            "processId": None,
            "clientInfo": {"name": "codeward"},
            "rootUri": root_uri,
            "rootPath": root_uri.removeprefix("file://"),
            "workspaceFolders": self._folders,
            "capabilities": CLIENT_CAPABILITIES,
            "initializationOptions": dict(options) if options else None,
        }
        answer = self.request("initialize", params, timeout)
        capabilities = answer.get("capabilities", {}) if isinstance(answer, dict) else {}
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        # LSP 3.17's positionEncoding, or clangd's own offsetEncoding (clangd before 15)
        chosen = self.capabilities.get("positionEncoding") or (answer.get("offsetEncoding")
                                                                 if isinstance(answer, dict) else None)
        self.encoding = Encoding.of(chosen)
        self.notify("initialized", {})
        return self.capabilities

    def request(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and wait for its answer (raw JSON); :class:`LspError` when none comes."""
        if not self.alive():
            raise ServerGone(self._gone_message())
        try:
            future: Future[Any] = self._rpc.protocol.send_request(method, params)
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ServerGone(self._gone_message(exc)) from exc
        deadline = time.monotonic() + timeout
        while True:
            try:
                return future.result(timeout=min(0.25, max(0.0, deadline - time.monotonic())))
            except FutureTimeout:
                if not self.alive():
                    raise ServerGone(self._gone_message()) from None
                if time.monotonic() >= deadline:
                    self._cancel(future)
                    raise RequestTimeout(f"{self.name} did not answer {method} within {timeout:g} s") from None
            except LspError:
                raise
            except Exception as exc:  # the server answered with a JSON-RPC error
                raise LspError(f"{self.name} answered {method} with an error: {exc}") from exc

    def request_all(self, method: str, params: list[Any], timeout: float) -> list[Any]:
        """Send every request at once, then wait for all (the server answers them in turn, without a round trip
        each): the answers in order, an :class:`LspError` in place of one that failed."""
        if not self.alive():
            raise ServerGone(self._gone_message())
        try:
            futures: list[Future[Any]] = [self._rpc.protocol.send_request(method, item) for item in params]
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ServerGone(self._gone_message(exc)) from exc
        deadline = time.monotonic() + timeout
        answers: list[Any] = []
        for future in futures:
            while True:
                try:
                    answers.append(future.result(timeout=min(0.25, max(0.0, deadline - time.monotonic()))))
                    break
                except FutureTimeout:
                    if not self.alive():
                        raise ServerGone(self._gone_message()) from None
                    if time.monotonic() >= deadline:
                        for pending in futures:
                            if not pending.done():
                                self._cancel(pending)
                        raise RequestTimeout(f"{self.name} did not answer {len(futures)} {method} requests within "
                                             f"{timeout:g} s") from None
                except LspError as exc:
                    answers.append(exc)
                    break
                except Exception as exc:  # the server answered this one with a JSON-RPC error
                    answers.append(LspError(f"{self.name} answered {method} with an error: {exc}"))
                    break
        return answers

    def notify(self, method: str, params: Any) -> None:
        try:
            self._rpc.protocol.notify(method, params)
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ServerGone(self._gone_message(exc)) from exc

    def shutdown(self, timeout: float = EXIT_WAIT_S) -> None:
        """Ask the server to stop (``shutdown`` then ``exit``); the caller kills what is left."""
        if self.alive():
            with contextlib.suppress(LspError):
                self.request("shutdown", None, timeout)
            with contextlib.suppress(LspError):
                self.notify("exit", None)
        self.close()

    def close(self) -> None:
        self._closed.set()
        self._rpc._stop_event.set()  # the reader loop's own stop flag
        self._writer.close()
        for stream in (self.proc.stdout,):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        with self._changed:
            self._changed.notify_all()

    def alive(self) -> bool:
        return not self._closed.is_set() and self.proc.poll() is None

    @property
    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def _gone_message(self, exc: BaseException | None = None) -> str:
        code = self.proc.poll()
        how = f"exited with status {code}" if code is not None else f"stopped answering ({exc})" if exc else "stopped"
        tail = self.stderr_tail.strip().splitlines()[-3:]
        return f"{self.name} {how}" + (f"; its last words: {' | '.join(tail)}" if tail else "")

    def _cancel(self, future: Future[Any]) -> None:
        for msg_id, pending in list(self._rpc.protocol._request_futures.items()):
            if pending is future:
                self._rpc.protocol._request_futures.pop(msg_id, None)
                with contextlib.suppress(LspError):
                    self.notify("$/cancelRequest", {"id": msg_id})
        future.cancel()

    # -- what the server reports ------------------------------------------------------------

    def diagnostics(self, uri: str) -> Diagnostics | None:
        with self._changed:
            return self._diagnostics.get(uri)

    def wait_diagnostics(self, uri: str, since: float, timeout: float) -> Diagnostics | None:
        """The first diagnostics for ``uri`` published after ``since`` (monotonic), or None."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = self._diagnostics.get(uri)
                if found is not None and found.received >= since:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.alive():
                    return None
                self._changed.wait(min(remaining, 0.5))

    def busy(self) -> list[str]:
        """Titles of the work the server reports in progress (indexing, loading packages...)."""
        with self._changed:
            return list(self._progress.values())

    def wait_idle(self, timeout: float, *, settle: float = 0.3) -> bool:
        """Wait until no work-done progress is in flight for ``settle`` seconds; whether it came to that."""
        deadline = time.monotonic() + timeout
        quiet_since: float | None = None
        with self._changed:
            while self.alive():
                now = time.monotonic()
                if self._progress:
                    quiet_since = None
                elif quiet_since is None:
                    quiet_since = now
                elif now - quiet_since >= settle:
                    return True
                if now >= deadline:
                    return False
                self._changed.wait(min(0.1, deadline - now))
        return False

    def wait_log(self, pattern: re.Pattern[str], timeout: float) -> bool:
        """Wait until the server logs (``window/logMessage``) a line matching ``pattern``; whether it did."""
        deadline = time.monotonic() + timeout
        checked = 0
        with self._changed:
            while True:
                fresh = self._logged - checked
                if fresh > 0:
                    recent = list(self._logs)[-min(fresh, len(self._logs)):]
                    if any(pattern.search(line) for line in recent):
                        return True
                    checked = self._logged
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.alive():
                    return False
                self._changed.wait(min(remaining, 0.25))

    @property
    def progress_ended(self) -> int:
        """How many work-done progresses have ended so far."""
        with self._changed:
            return self._progress_ended

    # -- plumbing ---------------------------------------------------------------------------

    def _read(self, stdout: IO[bytes]) -> None:
        from pygls.io_ import run

        with contextlib.suppress(OSError, ValueError):
            run(self._rpc._stop_event, stdout, self._rpc.protocol)
        self._closed.set()
        for pending in list(self._rpc.protocol._request_futures.values()):
            if not pending.done():
                with contextlib.suppress(Exception):
                    pending.set_exception(ServerGone(self._gone_message()))
        with self._changed:
            self._changed.notify_all()

    def _drain_stderr(self, stderr: IO[bytes]) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in stderr:
                self._stderr.append(line.decode("utf-8", "replace").rstrip())

    def _register_handlers(self) -> None:
        def on(method: str, answer: Callable[[Any], Any]) -> None:
            def handler(params: Any) -> Any:  # a fresh function: pygls marks each handler it registers
                return answer(params)

            self._rpc.protocol.fm.feature(method)(handler)

        on("workspace/configuration", self._configuration)
        on("workspace/workspaceFolders", lambda _params: self._folders)
        on("workspace/applyEdit", lambda _params: {
            "applied": False, "failureReason": "codeward applies edits itself, through its workspace gate"})
        on("textDocument/publishDiagnostics", self._published)
        on("$/progress", self._progressed)
        on("window/logMessage", self._logged_message)
        for method in IGNORED:
            on(method, lambda _params: None)

    def _configuration(self, params: Any) -> list[Any]:
        items = params.get("items", []) if isinstance(params, dict) else []
        return [self._settings(str(item.get("section") or "")) for item in items if isinstance(item, dict)]

    def _published(self, params: Any) -> None:
        if not isinstance(params, dict) or "uri" not in params:
            return
        items = params.get("diagnostics")
        version = params.get("version")
        with self._changed:
            self._diagnostics[str(params["uri"])] = Diagnostics(
                version if isinstance(version, int) else None, items if isinstance(items, list) else [])
            self._changed.notify_all()

    def _logged_message(self, params: Any) -> None:
        message = params.get("message") if isinstance(params, dict) else None
        if isinstance(message, str):
            with self._changed:
                self._logs.append(message)
                self._logged += 1
                self._changed.notify_all()

    def _progressed(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        token = str(params.get("token"))
        value = params.get("value")
        kind = value.get("kind") if isinstance(value, dict) else None
        with self._changed:
            if kind == "begin":
                self._progress[token] = str(value.get("title") or token) if isinstance(value, dict) else token
            elif kind == "end" and self._progress.pop(token, None) is not None:
                self._progress_ended += 1
            self._changed.notify_all()


IGNORED = (
    # requests a client may answer with null
    "window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability",
    "window/showMessageRequest", "window/showDocument", "workspace/semanticTokens/refresh",
    "workspace/inlayHint/refresh", "workspace/codeLens/refresh", "workspace/diagnostic/refresh",
    "workspace/inlineValue/refresh", "workspace/foldingRange/refresh",
    # notifications nobody reads here
    "window/showMessage", "telemetry/event", "$/logTrace", "language/status",
    "language/actionableNotification", "textDocument/clangd.fileStatus", "$/typescriptVersion",
    "experimental/serverStatus",
)
"""Server requests answered with null, and notifications dropped (anything else unknown gets
JSON-RPC's method-not-found, which servers take as "not supported")."""

CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-32", "utf-16"]},
    "offsetEncoding": ["utf-32", "utf-16"],  # clangd's name for it before LSP 3.17
    "window": {"workDoneProgress": True, "showMessage": {}},
    "workspace": {
        "applyEdit": False,
        "configuration": True,
        "workspaceFolders": True,
        "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create", "rename", "delete"],
                          "failureHandling": "abort"},
        "didChangeWatchedFiles": {"dynamicRegistration": False},
        "symbol": {"dynamicRegistration": False},
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": False, "willSave": False},
        "definition": {"linkSupport": True},
        "declaration": {"linkSupport": True},
        "typeDefinition": {"linkSupport": True},
        "implementation": {"linkSupport": True},
        "references": {},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "rename": {"prepareSupport": True},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
        "signatureHelp": {},
    },
}
"""What codeward asks of a server: navigation, rename, hover, diagnostics — never edits it would apply itself."""
