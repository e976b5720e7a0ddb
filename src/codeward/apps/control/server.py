"""Running the Hook API: uvicorn on its own thread and event loop, beside the session.

A thread of its own keeps the API answering while the session's loop is busy (a long tool
call, a terminal prompt) and keeps uvicorn away from the terminal's signal handlers. The
socket is bound before the thread starts, so a taken port is an error the caller sees at
once, with the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import threading
import time
from pathlib import Path
from typing import Any

from codeward.apps.control.app import create_app
from codeward.apps.control.defaults import DEFAULT_HOST, DEFAULT_PORT
from codeward.apps.control.security import check_bind, new_token, write_token_file
from codeward.apps.control.session_logs import SessionLogs
from codeward.apps.control.state import ControlState
from codeward.serving.transport.http_head_deadline import DeadlineH11Protocol
from codeward.serving.transport.http_token import is_loopback

START_TIMEOUT_S = 10.0


class ControlServer:
    """The Hook API of one session. ``start()`` / ``stop()``, or use it as a context manager."""

    def __init__(self, state: ControlState, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 token: str | None = None, allow_remote: bool = False, token_dir: Path | None = None,
                 logs: SessionLogs | None = None, ask_timeout: float = 60.0) -> None:
        check_bind(host, allow_remote)
        self.state = state
        self.host = host
        self.token = token or new_token()
        self.token_dir = token_dir
        self.token_file_path: Path | None = None
        """``<token_dir>/<port>.token`` once started (mode 0600, removed at stop)."""
        self.logs = logs
        self.ask_timeout = ask_timeout
        self._requested_port = port
        self._port = port
        self._socket: socket.socket | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        if logs is not None:
            logs.redactor.add(self.token)

    # -- addresses ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port asked for, or once bound the real one (port 0 picks a free port)."""
        return self._port

    @property
    def url(self) -> str:
        shown = self.host if is_loopback(self.host) or self.host not in ("0.0.0.0", "::") else "127.0.0.1"
        shown = f"[{shown}]" if ":" in shown and not shown.startswith("[") else shown
        return f"http://{shown}:{self.port}"

    @property
    def console_url(self) -> str:
        """Open this in a browser: it carries the token, which becomes a cookie on first visit."""
        return f"{self.url}/?token={self.token}"

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> ControlServer:
        import uvicorn

        self._socket = _bind(self.host, self._requested_port)
        self._port = int(self._socket.getsockname()[1])
        remote = not is_loopback(self.host)
        wildcard = self.host in ("0.0.0.0", "::")
        app = create_app(self.state, self.token, logs=self.logs, ask_timeout=self.ask_timeout,
                         extra_hosts=(self.host,) if remote and not wildcard else (), any_host=wildcard)
        # h11 named, not uvicorn's "auto": with the fast extra installed, "auto" would pick httptools, which
        # does not bound a request's head (see codeward.serving.transport.http_head_bound); the console needs no speed.
        # Its protocol closes a connection whose request head is not complete in time (http_head_deadline).
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="off",
                                proxy_headers=False, server_header=False, timeout_graceful_shutdown=2,
                                timeout_keep_alive=5, http=DeadlineH11Protocol, loop="asyncio")
        server = uvicorn.Server(config)
        self._server = server
        sock = self._socket

        def run() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            except BaseException as exc:  # reported by start() or stop()
                self._failure = exc

        self._thread = threading.Thread(target=run, name=f"codeward-control-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise OSError(f"the control API did not start on {self.url}: {self._failure or 'timed out'}")
            time.sleep(0.01)
        if self.token_dir is not None:
            self.token_file_path = write_token_file(self.token_dir / f"{self.port}.token", self.token)
        return self

    def stop(self) -> None:
        """Close watcher streams and pending asks, stop the server, remove the token file."""
        self.state.close()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
        if self.token_file_path is not None:
            self.token_file_path.unlink(missing_ok=True)
            self.token_file_path = None

    def __enter__(self) -> ControlServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise OSError(f"port {port} on {host} is already in use (another codeward session?); "
                          "pass --control-port N to choose another, or 0 for any free port") from exc
        raise OSError(f"cannot bind the control API to {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock
