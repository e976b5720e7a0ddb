"""``[mcp]``: the upstream MCP servers the gateway connects, and its approval policy.

One ``[mcp.servers.<alias>]`` table per server; servers can also come from ``urls`` (an alias
is derived from each host) and from Claude-Desktop ``mcpServers`` JSON files listed in
``import``. Tokens named by ``auth_env`` are read when a server is connected, not here, so a
rotated token needs no configuration change.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, ValidationInfo, field_validator, model_validator

from codeward.config.base import (
    Bool,
    ConfigPath,
    EnvStr,
    Field,
    Int,
    Seconds,
    Str,
    Strings,
    Table,
    base_dir_of,
    code_only,
    expand_env,
    origin_of,
)
from codeward.config.errors import ConfigError
from codeward.kernel import state_dir

Transport = Literal["stdio", "http", "sse"]
PinMode = Literal["off", "warn", "refuse"]

ALIAS_SEPARATOR = "__"
NAME_CHARS = re.compile(r"^[a-zA-Z0-9_-]+$")
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 300.0
DEFAULT_PIN_FILE = f"{state_dir.NAME}/{state_dir.PINS}"
MAX_SECONDS = 86_400.0

_TRANSPORT_NAMES: Mapping[str, Transport] = {
    "stdio": "stdio", "http": "http", "streamable-http": "http", "streamable_http": "http",
    "streamablehttp": "http", "sse": "sse",
}
_CLIENT_KEYS = frozenset({"type", "disabled", "autoApprove"})
"""Keys other MCP clients write in ``mcpServers`` entries, understood as their codeward equivalents."""
_HOST_NOISE = frozenset({"mcp", "www", "api", "app", "server"})
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOOL_GLOB = re.compile(r"^[a-zA-Z0-9_*?\[\]-]+$")


def check_alias(alias: str) -> str | None:
    """Why ``alias`` cannot name a server, or None when it can.

    The exposed name is ``alias__tool`` and is split at its leftmost ``__``, so an alias may
    neither contain ``__`` nor end with ``_`` (``a_`` + ``__x`` would split as ``a`` + ``_x``).
    """
    if not alias:
        return "an alias must not be empty"
    if ALIAS_SEPARATOR in alias:
        return (f"alias {alias!r} contains '__', which separates the alias from the tool name in "
                f"'alias__tool'; rename it (e.g. {alias.replace('__', '_').strip('_') or 'server'!r})")
    if alias.endswith("_"):
        return f"alias {alias!r} ends with '_', which would make 'alias__tool' ambiguous; drop the trailing '_'"
    if not NAME_CHARS.match(alias):
        return (f"alias {alias!r} may only use letters, digits, '_' and '-' (tool names must match "
                f"^[a-zA-Z0-9_-]{{1,128}}$); e.g. {sanitize_alias(alias)!r}")
    if len(alias) > 40:
        return f"alias {alias!r} is longer than 40 characters; shorten it so tool names stay readable"
    return None


def sanitize_alias(text: str) -> str:
    """The closest valid alias to ``text``: invalid characters become '-', '__' becomes '_'."""
    alias = re.sub(r"[^a-zA-Z0-9_-]+", "-", text)
    alias = re.sub(r"_{2,}", "_", alias).strip("-_")[:40].rstrip("_-")
    return alias or "server"


def alias_for_url(url: str, taken: Iterable[str] = ()) -> str:
    """A readable alias derived from a URL's host, unique among ``taken``.

    ``http://boltzmann.fritz.box:8080/mcp`` → ``boltzmann``; ``https://mcp.example.com/mcp`` →
    ``example``; ``http://127.0.0.1:3001/mcp`` → ``local-3001``. A taken alias gets ``-2``,
    ``-3``... appended.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host or host == "localhost" or _is_ip(host):
        local = host in ("", "localhost") or _is_loopback(host)
        base = f"local-{parts.port}" if local and parts.port else ("local" if local else host.replace(":", "-"))
    else:
        labels = [label for label in host.split(".") if label]
        meaningful = [label for label in labels[:-1] if label not in _HOST_NOISE] or labels
        base = meaningful[0]
    alias = sanitize_alias(base)
    used = set(taken)
    if alias not in used:
        return alias
    n = 2
    while f"{alias}-{n}" in used:
        n += 1
    return f"{alias}-{n}"


def _seconds(value: float) -> float:
    if not 0 < value <= MAX_SECONDS:
        raise ValueError("must be a number of seconds above 0 (at most a day)")
    return value


def _cwd(value: Any, info: ValidationInfo) -> Any:
    if not isinstance(value, str):
        return value
    path = Path(expand_env(value)).expanduser()
    base = base_dir_of(info)
    return str((base / path).resolve() if base is not None else path.resolve())


CwdStr = Annotated[Str, BeforeValidator(_cwd)]


class ServerConfig(Table):
    """One upstream MCP server: how to reach it, how to authenticate, which tools to take.

    Give exactly one of ``command`` (a program started over stdio) or ``url`` (an endpoint:
    streamable HTTP, or legacy SSE when the path ends in ``/sse``).
    """

    alias: Str = ""
    """The server's name, taken from its table name; its tools are exposed as ``alias__tool``."""
    transport: Transport = "stdio"
    """``stdio``, ``http`` (streamable HTTP) or ``sse``; derived from ``command``/``url`` when omitted
    (``type`` is read too, as other clients write it)."""
    command: EnvStr | None = None
    """The program to start (``${VAR}`` expanded)."""
    args: tuple[EnvStr, ...] = ()
    """Its arguments."""
    env: dict[str, EnvStr] = Field(default_factory=dict)
    """Environment variables for it, e.g. ``env = { TOKEN = "${MY_TOKEN}" }``."""
    cwd: CwdStr | None = None
    """Its working directory (relative to the file)."""
    url: EnvStr | None = None
    """The MCP endpoint, ``http://`` or ``https://``."""
    headers: dict[str, EnvStr] = Field(default_factory=dict)
    """HTTP headers sent with every request."""
    auth_token: Str | None = None
    """A bearer token (prefer ``auth_env``: files get copied)."""
    auth_env: Str | None = None
    """The environment variable holding the bearer token, read at connect time."""
    allow: Strings = ()
    """Upstream tool names (or globs) to take; empty takes all."""
    deny: Strings = ()
    """Upstream tool names (or globs) to leave out."""
    auto_approve: Strings = ()
    """Upstream tool names (or globs) of this server that run without confirmation (``autoApprove``
    is read too)."""
    timeout: Annotated[float, Field(strict=True)] = DEFAULT_CONNECT_TIMEOUT
    """Seconds for start-up (spawn or connect, initialize, tools/list)."""
    call_timeout: Annotated[float, Field(strict=True)] = DEFAULT_CALL_TIMEOUT
    """Seconds one tool call may take."""
    enabled: Bool = True
    """``false`` keeps the server configured but not connected (``disabled = true`` is read too)."""
    sampling: Bool = True
    """Pass the server's sampling requests to the client of the call they belong to; ``false`` refuses
    them (the server is told why)."""
    resources: Bool = True
    """Serve the server's resources and resource templates (URIs mapped to ``scheme://alias/...``)."""
    prompts: Bool = True
    """Serve the server's prompts (as ``alias__prompt``)."""

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            if isinstance(data, ServerConfig):
                return data
            raise ValueError("must be a table/object with 'command' or 'url'")
        table = dict(data)
        known = set(cls.model_fields) | _CLIENT_KEYS
        if origin_of(info) == "json":  # other clients' keys are ignored, as those clients do
            table = {k: v for k, v in table.items() if k in known}
        if set(table) - known:
            return table  # unknown keys are reported (with a suggestion) before anything else
        _client_keys(table)
        command, url = table.get("command"), table.get("url")
        if (command is None) == (url is None):
            raise ValueError("needs exactly one of 'command' (a program to start) or 'url' (an MCP endpoint), "
                             "e.g. command = \"npx\" or url = \"http://127.0.0.1:3001/mcp\"")
        table["transport"] = _transport(table.get("transport"), url)
        return table

    @field_validator("alias")
    @classmethod
    def _alias(cls, value: str) -> str:
        reason = check_alias(value) if value else None
        if reason is not None:
            raise ValueError(reason)
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a non-empty string")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("auth_token", "auth_env")
    @classmethod
    def _non_empty(cls, value: str | None) -> str | None:
        if value is not None and not value:
            raise ValueError("must be a non-empty string")
        return value

    @field_validator("auth_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must name an environment variable (e.g. \"MY_TOKEN\")")
        return value

    @field_validator("timeout", "call_timeout")
    @classmethod
    def _positive_seconds(cls, value: float) -> float:
        return _seconds(value)

    @model_validator(mode="after")
    def _auth_fits(self) -> ServerConfig:
        if self.command is not None and (self.auth_token or self.auth_env):
            raise ValueError("auth_token/auth_env apply to url servers only; pass a token to a stdio server "
                             "through 'env' instead")
        return self

    @property
    def target(self) -> str:
        """Where the server is, for messages: its URL or its command line."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()


class GatewayConfig(Table):
    """The gateway's servers and approval policy; immutable once loaded."""

    servers: tuple[ServerConfig, ...] = Field(default=(), json_schema_extra={"type_text": "tables"})
    """``[mcp.servers.ALIAS]`` tables, one per upstream server (below)."""
    urls: Strings = ()
    """More servers given only by URL; each alias is derived from the host (``local-3001``, ``example``)."""
    imports: Strings = Field(default=(), alias="import")
    """Claude-Desktop ``mcpServers`` JSON files whose servers are added (a string or a list)."""
    auto_approve: Strings = ()
    """Exposed tool names (``alias__tool``) or globs (``alias__*``) that need no confirmation (the
    table form ``{ "alias__tool" = true }`` is read too)."""
    read_only_auto_approve: Bool = False
    """Also run tools whose upstream annotations say read-only without confirmation."""
    max_tool_depth: Int = 8
    """Tool-call rounds the agent runs for one message (1 to 1000)."""
    pin: PinMode = "off"
    """Pin upstream tool definitions: ``warn`` or ``refuse`` when one changes (``true`` means ``warn``)."""
    pin_file: ConfigPath | None = None
    """Where pins are kept (default ``.codeward/gateway-pins.json`` in the project)."""
    max_name_length: Int = 128
    """Longest exposed tool name (16 to 128); longer ones are shortened with a hash."""
    native: Bool | Str = False
    """Serve codeward's own tools too: ``true`` under their names, an alias string as ``<alias>__name``."""
    startup_wait: Seconds = DEFAULT_CONNECT_TIMEOUT
    """Seconds to wait for servers at start-up before serving the ones that are ready."""
    source: Path | None = code_only(None)
    """The file this came from."""

    @field_validator("servers", mode="before")
    @classmethod
    def _servers(cls, value: Any) -> Any:
        """The TOML form is a table of tables keyed by alias; code may pass a sequence."""
        if isinstance(value, Mapping):
            return [{**table, "alias": str(alias)} if isinstance(table, Mapping) else table
                    for alias, table in value.items()]
        return value

    @field_validator("imports", mode="before")
    @classmethod
    def _one_import(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("auto_approve", mode="before")
    @classmethod
    def _approve_table(cls, value: Any) -> Any:
        """A list of names/globs, or the seed's table form ``{ "alias__tool" = true }``."""
        if isinstance(value, Mapping):
            bad = {k: v for k, v in value.items() if not isinstance(v, bool)}
            if bad:
                raise ValueError(f"table values must be true or false, got {bad!r}")
            return [str(k) for k, v in value.items() if v is True]
        return value

    @field_validator("auto_approve")
    @classmethod
    def _approve_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _TOOL_GLOB.match(name):
                raise ValueError(f"entry {name!r} is not a tool name or glob like 'alias__*'")
        return value

    @field_validator("pin", mode="before")
    @classmethod
    def _pin(cls, value: Any) -> Any:
        if value is True:
            return "warn"
        if value is False:
            return "off"
        if value not in ("off", "warn", "refuse"):
            raise ValueError("must be 'off', 'warn' or 'refuse'")
        return value

    @field_validator("max_tool_depth")
    @classmethod
    def _depth(cls, value: int) -> int:
        if not 1 <= value <= 1000:
            raise ValueError("must be an integer from 1 to 1000")
        return value

    @field_validator("max_name_length")
    @classmethod
    def _name_length(cls, value: int) -> int:
        if not 16 <= value <= 128:
            raise ValueError("must be an integer from 16 to 128")
        return value

    @field_validator("native", mode="before")
    @classmethod
    def _native(cls, value: Any) -> Any:
        if isinstance(value, str):
            reason = check_alias(value)
            if reason is not None:
                raise ValueError(reason)
        elif not isinstance(value, bool):
            raise ValueError("must be true, false or an alias string")
        return value

    @model_validator(mode="after")
    def _unique_aliases(self) -> GatewayConfig:
        seen: set[str] = set()
        for server in self.servers:
            if server.alias in seen:
                raise ValueError(f"server {server.alias!r} is defined twice; rename one of them")
            seen.add(server.alias)
        return self

    def server(self, alias: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.alias == alias), None)

    def with_server(self, server: ServerConfig) -> GatewayConfig:
        """A copy with one more server (its alias must be new)."""
        if self.server(server.alias) is not None:
            raise ConfigError(f"a server named {server.alias!r} is already configured; choose another alias")
        return self.model_copy(update={"servers": (*self.servers, server)})

    def only(self, alias: str) -> GatewayConfig:
        """A copy with just one server (``codeward call alias__tool`` connects only that one)."""
        return self.model_copy(update={"servers": tuple(s for s in self.servers if s.alias == alias)})


def _client_keys(table: dict[str, Any]) -> None:
    """Other clients' spellings (``type``, ``disabled``, ``autoApprove``) folded into codeward's keys."""
    if "type" in table:
        declared = table.pop("type")
        table.setdefault("transport", declared)
    if "disabled" in table:
        disabled = table.pop("disabled")
        if not isinstance(disabled, bool):
            raise ValueError(f"disabled must be true or false, got {disabled!r}")
        enabled = table.get("enabled", True)
        table["enabled"] = enabled and not disabled if isinstance(enabled, bool) else enabled
    if "autoApprove" in table:
        extra = table.pop("autoApprove")
        if not isinstance(extra, list) or not all(isinstance(v, str) for v in extra):
            raise ValueError(f"autoApprove must be a list of strings, got {extra!r}")
        own = table.get("auto_approve", [])
        table["auto_approve"] = [*own, *extra] if isinstance(own, list | tuple) else own


def _transport(declared: Any, url: Any) -> Transport:
    if declared is None:
        if url is None:
            return "stdio"
        path = urlsplit(str(url)).path.rstrip("/")
        return "sse" if path.endswith("/sse") else "http"
    name = _TRANSPORT_NAMES.get(str(declared).lower())
    if name is None:
        raise ValueError(f"transport {declared!r} is not known; use 'stdio', 'http' (streamable HTTP) or 'sse'")
    if (name == "stdio") != (url is None):
        raise ValueError(f"transport {declared!r} does not fit {'a url' if url is not None else 'a command'}; "
                         "drop the transport key or fix it")
    return name


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
