"""``[server]``: what every surface serves — roots, extra protected and host-run globs, toolsets, output cap, HTTP
stack."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import field_validator

from codeward.config.base import ADDITIVE, PROJECT_ONLY, Bool, ConfigPath, Field, Int, Seconds, Strings, Table

CHARS_PER_TOKEN = 4


class ServerSettings(Table):
    """The workspace policy and catalog every command builds from the configuration."""

    table_name: ClassVar[str] = "server"

    roots: tuple[ConfigPath, ...] = Field(default=(), json_schema_extra={PROJECT_ONLY: True})
    """Directories the tools may access, the first being primary (relative to the file). Empty: the
    client's MCP roots, else the command line, else the current directory."""
    blacklist: Strings = Field(default=(), json_schema_extra={ADDITIVE: True})
    """Extra glob patterns no tool may read or write (on top of the built-in protected names)."""
    host_run_paths: Strings = Field(default=(), json_schema_extra={ADDITIVE: True})
    """Extra glob patterns (gitignore style, case-insensitive) of files the human's tools run later, on
    top of the built-in list (hook folders, ``.pre-commit-config.yaml``, ``.vscode/``, ``.mcp.json``,
    shell rc files...: see docs/security.md), e.g. ``[".github/workflows/", "Makefile"]``. A write to
    one asks a person with the diff, whatever ``auto_approve`` says, and is refused when nobody can be
    asked."""
    toolsets: Strings | None = None
    """What a client's model is sent. Unset (or ``["core"]``): the lean listing — the core tools and the
    discovery tools ``toolsets`` (enables a toolset for the session; the client is told
    ``tools/list_changed``) and ``call_tool``, with every toolset served; ``["core", "python"]`` lists
    toolsets from the start besides; ``["all"]`` lists every tool; toolset names alone serve only those,
    all listed (``codeward tools`` shows each tool's toolset). ``lsp`` (language-server navigation) is
    served only when named, or with ``["all"]``."""
    output_cap_tokens: Int = 25_000
    """About this many tokens of a tool's output are returned; the rest is saved to a file the caller
    can read."""
    spill_keep: Int = 100
    """Outputs cut by ``output_cap_tokens`` are kept whole under ``.codeward/outputs/``; this many of the
    newest are kept, older ones deleted as new ones are saved."""
    fast_http: Bool = True
    """``serve --http`` and ``gateway --http`` run on uvloop and httptools when the ``fast`` extra is
    installed (the HTTP banner says how to add it); false forces asyncio and h11, for debugging. The
    start-up line names the stack in use."""
    http_head_timeout: Seconds = 30.0
    """Seconds an HTTP connection has to send a whole request line and headers, from its opening or a
    new request's first bytes; past it the server answers ``408`` and closes the connection, so clients
    that never finish a request (slowloris) cannot hold the server's sockets. The body and the answer
    are not limited by it."""
    drain_timeout: Seconds = 20.0
    """Seconds a server stopped by SIGTERM (over HTTP, Ctrl-C too) gives the calls it runs to finish, while it
    refuses new requests (over HTTP with ``503``: a balancer sends them to another replica, and ``/readyz``
    says it is draining; over stdio with a JSON-RPC error); past it the calls still running are cut. Keep
    it under the supervisor's own limit (``docker stop -t``, systemd's ``TimeoutStopSec``, Kubernetes'
    ``terminationGracePeriodSeconds``)."""

    log_format: Literal["text", "json"] = "text"
    """How a server writes its log lines on stderr: ``text`` (over HTTP each line stamped with the UTC time,
    the level and the logger, and the request id, session, user and tool of the call it was written in),
    or ``json``: one JSON object per line with the same fields (``time``, ``level``, ``logger``,
    ``message``, ``replica``, ``request_id``...) for a log collector. Read at start."""
    access_log: Bool = False
    """An HTTP server logs one line per HTTP request it answers (logger ``codeward.access``, in
    ``log_format``): method, path, status, milliseconds, bytes, user, MCP session, JSON-RPC method and
    request id, client address, the balancer's ``X-Request-Id``. Read at start."""

    @field_validator("output_cap_tokens")
    @classmethod
    def _cap(cls, value: int) -> int:
        if value < 100:
            raise ValueError("must be an integer of at least 100")
        return value

    @field_validator("spill_keep")
    @classmethod
    def _keep(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be an integer of at least 1")
        return value

    @property
    def output_cap_chars(self) -> int:
        return self.output_cap_tokens * CHARS_PER_TOKEN
