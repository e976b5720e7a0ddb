"""Gateway configuration: which upstream MCP servers to connect and the approval policy.

Two file shapes are read, both into the same immutable :class:`GatewayConfig`:

* ``codeward.toml`` — an ``[mcp]`` table (``auto_approve``, ``read_only_auto_approve``,
  ``max_tool_depth``, ``pin``...) with one ``[mcp.servers.<alias>]`` table per server;
* the Claude-Desktop-style ``{"mcpServers": {"<alias>": {...}}}`` JSON, imported unchanged
  (given directly, or listed in ``[mcp] import``).

Every problem in a file is collected and reported at once, naming the file, the key and the
fix. Tokens named by ``auth_env`` are *not* read here: they are read from the environment
when the server is connected, so a rotated token needs no config change.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from codeward import state_dir
from codeward.config import ConfigError, expand_env

Transport = Literal["stdio", "http", "sse"]
PinMode = Literal["off", "warn", "refuse"]

ALIAS_SEPARATOR = "__"
NAME_CHARS = re.compile(r"^[a-zA-Z0-9_-]+$")
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 300.0
DEFAULT_PIN_FILE = f"{state_dir.NAME}/{state_dir.PINS}"

_TRANSPORT_NAMES: Mapping[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}
_SERVER_KEYS = frozenset({
    "command", "args", "env", "cwd", "url", "type", "transport", "headers", "auth_token", "auth_env",
    "allow", "deny", "timeout", "call_timeout", "disabled", "enabled", "auto_approve", "autoApprove",
})
_MCP_KEYS = frozenset({
    "servers", "auto_approve", "read_only_auto_approve", "max_tool_depth", "pin", "pin_file",
    "max_name_length", "native", "startup_wait", "import", "urls",
})
_HOST_NOISE = frozenset({"mcp", "www", "api", "app", "server"})


@dataclass(frozen=True)
class ServerConfig:
    """One upstream MCP server: how to reach it, how to authenticate, which tools to take."""

    alias: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth_token: str | None = None
    auth_env: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    auto_approve: tuple[str, ...] = ()
    """Upstream tool names (or globs) of this server that run without confirmation."""
    timeout: float = DEFAULT_CONNECT_TIMEOUT
    """Seconds for start-up (spawn or connect, initialize, tools/list)."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    enabled: bool = True

    @property
    def target(self) -> str:
        """Where the server is, for messages: its URL or its command line."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()


@dataclass(frozen=True)
class GatewayConfig:
    """The whole gateway configuration; immutable once loaded (nothing at run time changes it)."""

    servers: tuple[ServerConfig, ...] = ()
    auto_approve: tuple[str, ...] = ()
    """Exposed tool names (``alias__tool``) or globs (``alias__*``) that need no confirmation."""
    read_only_auto_approve: bool = False
    """Also run tools whose upstream annotations say read-only without confirmation."""
    max_tool_depth: int = 8
    pin: PinMode = "off"
    pin_file: Path | None = None
    max_name_length: int = 128
    native: bool | str = False
    """Serve codeward's own tools too: ``True`` under their names, a string as ``<string>__name``."""
    startup_wait: float = DEFAULT_CONNECT_TIMEOUT
    source: Path | None = None

    def server(self, alias: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.alias == alias), None)

    def with_server(self, server: ServerConfig) -> GatewayConfig:
        """A copy with one more server (its alias must be new)."""
        if self.server(server.alias) is not None:
            raise ConfigError(f"a server named {server.alias!r} is already configured; choose another alias")
        return replace(self, servers=(*self.servers, server))


# -- public entry points ------------------------------------------------------------------------


def load_gateway_config(path: str | Path) -> GatewayConfig:
    """Read a ``codeward.toml`` or a Claude-Desktop ``mcpServers`` JSON file."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"gateway config {str(path)!r} does not exist; pass an existing codeward.toml "
                          "or an mcpServers JSON file")
    file = file.resolve()
    text = _read(file)
    if file.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        return parse_mcp_servers_json(_parse_json(text, file), file)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file.name}: invalid TOML: {exc}; fix the syntax at that line") from exc
    mcp = raw.get("mcp", {})
    if not isinstance(mcp, dict):
        raise ConfigError(f"{file.name}: [mcp] must be a table")
    return parse_gateway_table(mcp, file)


def parse_gateway_table(mcp: Mapping[str, Any], source: Path | None = None) -> GatewayConfig:
    """The ``[mcp]`` table of a ``codeward.toml`` (already parsed) as a :class:`GatewayConfig`."""
    problems = _Problems(source)
    base = source.parent if source else Path.cwd()
    for key in sorted(set(mcp) - _MCP_KEYS):
        problems.add(f"[mcp] has an unknown key {key!r}{_did_you_mean(key, _MCP_KEYS)}")

    servers: list[ServerConfig] = []
    tables = mcp.get("servers", {})
    if not isinstance(tables, dict):
        problems.add("[mcp] servers must be a table of [mcp.servers.<alias>] tables")
        tables = {}
    for alias, table in tables.items():
        server = _server(str(alias), table, base, problems, where=f"[mcp.servers.{alias}]", strict=True)
        if server is not None:
            servers.append(server)
    for url in _strings(mcp, "urls", "[mcp]", problems):
        alias = alias_for_url(url, {s.alias for s in servers})
        server = _server(alias, {"url": url}, base, problems, where=f"[mcp] urls entry {url!r}", strict=True)
        if server is not None:
            servers.append(server)
    imports = mcp.get("import", [])
    for name in [imports] if isinstance(imports, str) else _strings(mcp, "import", "[mcp]", problems):
        imported = base / expand_env(name)
        try:
            for server in load_gateway_config(imported).servers:
                if any(s.alias == server.alias for s in servers):
                    problems.add(f"[mcp] import {name!r}: server {server.alias!r} is also defined here; "
                                 "rename one of them")
                else:
                    servers.append(server)
        except ConfigError as exc:
            problems.add(f"[mcp] import {name!r}: {exc}")

    auto_approve = _auto_approve(mcp.get("auto_approve", []), problems)
    pin = _pin_mode(mcp.get("pin", "off"), problems)
    pin_file_raw = mcp.get("pin_file", DEFAULT_PIN_FILE)
    if not isinstance(pin_file_raw, str) or not pin_file_raw:
        problems.add(f"[mcp] pin_file must be a path string, got {pin_file_raw!r}")
        pin_file_raw = DEFAULT_PIN_FILE
    config = GatewayConfig(
        servers=tuple(servers),
        auto_approve=auto_approve,
        read_only_auto_approve=_bool(mcp, "read_only_auto_approve", False, "[mcp]", problems),
        max_tool_depth=_int(mcp, "max_tool_depth", 8, 1, 1000, "[mcp]", problems),
        pin=pin,
        pin_file=(base / expand_env(pin_file_raw)).resolve(),
        max_name_length=_int(mcp, "max_name_length", 128, 16, 128, "[mcp]", problems),
        native=_native(mcp.get("native", False), problems),
        startup_wait=_seconds(mcp, "startup_wait", DEFAULT_CONNECT_TIMEOUT, "[mcp]", problems),
        source=source,
    )
    problems.raise_if_any()
    return config


def parse_mcp_servers_json(data: Any, source: Path | None = None) -> GatewayConfig:
    """A Claude-Desktop ``{"mcpServers": {...}}`` document, imported unchanged.

    Keys other clients add (``disabled``, ``autoApprove``, ``timeout``, ``type``, ``headers``)
    are understood; other unknown keys are ignored, as those clients do.
    """
    problems = _Problems(source)
    base = source.parent if source else Path.cwd()
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        problems.add('expected a JSON object with an "mcpServers" object, as in claude_desktop_config.json')
        problems.raise_if_any()
    servers: list[ServerConfig] = []
    for alias, table in data["mcpServers"].items():
        server = _server(str(alias), table, base, problems, where=f'mcpServers["{alias}"]', strict=False)
        if server is not None:
            servers.append(server)
    problems.raise_if_any()
    return GatewayConfig(servers=tuple(servers), source=source,
                         pin_file=(base / DEFAULT_PIN_FILE).resolve())


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


def server_from_url(url: str, alias: str | None = None, *, taken: Iterable[str] = (), **options: Any) -> ServerConfig:
    """A :class:`ServerConfig` for a URL given at run time (``codeward gateway --url``)."""
    chosen = alias or alias_for_url(url, taken)
    problems = _Problems(None)
    server = _server(chosen, {"url": url, **options}, Path.cwd(), problems, where=f"server {chosen!r}", strict=True)
    problems.raise_if_any()
    assert server is not None
    return server


# -- one server --------------------------------------------------------------------------------


def _server(alias: str, table: Any, base: Path, problems: _Problems, *, where: str,
            strict: bool) -> ServerConfig | None:
    if not isinstance(table, dict):
        problems.add(f"{where} must be a table/object with 'command' or 'url'")
        return None
    reason = check_alias(alias)
    if reason is not None:
        problems.add(f"{where}: {reason}")
        return None
    if strict:
        for key in sorted(set(table) - _SERVER_KEYS):
            problems.add(f"{where} has an unknown key {key!r}{_did_you_mean(key, _SERVER_KEYS)}")
    command = table.get("command")
    url = table.get("url")
    if (command is None) == (url is None):
        problems.add(f"{where} needs exactly one of 'command' (a program to start) or 'url' "
                     "(an MCP endpoint), e.g. command = \"npx\" or url = \"http://127.0.0.1:3001/mcp\"")
        return None
    transport = _transport(table, url, where, problems)
    if transport is None:
        return None
    args: list[str] = []
    if command is not None:
        if not isinstance(command, str) or not command.strip():
            problems.add(f"{where} command must be a non-empty string, got {command!r}")
            return None
        args = _strings(table, "args", where, problems)
    else:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            problems.add(f"{where} url must be an http:// or https:// URL, got {url!r}")
            return None
    cwd = table.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        problems.add(f"{where} cwd must be a path string, got {cwd!r}")
        cwd = None
    auth_token = table.get("auth_token")
    auth_env = table.get("auth_env")
    for key, value in (("auth_token", auth_token), ("auth_env", auth_env)):
        if value is not None and (not isinstance(value, str) or not value):
            problems.add(f"{where} {key} must be a non-empty string, got {value!r}")
    if auth_env is not None and isinstance(auth_env, str) and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", auth_env):
        problems.add(f"{where} auth_env must name an environment variable (e.g. \"MY_TOKEN\"), got {auth_env!r}")
    if command is not None and (auth_token or auth_env):
        problems.add(f"{where}: auth_token/auth_env apply to url servers only; pass a token to a stdio "
                     "server through 'env' instead")
    enabled = _bool(table, "enabled", True, where, problems) and not _bool(table, "disabled", False, where, problems)
    approve = _strings(table, "auto_approve", where, problems) + _strings(table, "autoApprove", where, problems)
    return ServerConfig(
        alias=alias,
        transport=transport,
        command=expand_env(command) if isinstance(command, str) else None,
        args=tuple(expand_env(a) for a in args),
        env={k: expand_env(v) for k, v in _string_table(table, "env", where, problems).items()},
        cwd=str((base / expand_env(cwd)).resolve()) if isinstance(cwd, str) else None,
        url=expand_env(url) if isinstance(url, str) else None,
        headers={k: expand_env(v) for k, v in _string_table(table, "headers", where, problems).items()},
        auth_token=auth_token if isinstance(auth_token, str) and auth_token else None,
        auth_env=auth_env if isinstance(auth_env, str) and auth_env else None,
        allow=tuple(_strings(table, "allow", where, problems)),
        deny=tuple(_strings(table, "deny", where, problems)),
        auto_approve=tuple(approve),
        timeout=_seconds(table, "timeout", DEFAULT_CONNECT_TIMEOUT, where, problems),
        call_timeout=_seconds(table, "call_timeout", DEFAULT_CALL_TIMEOUT, where, problems),
        enabled=enabled,
    )


def _transport(table: Mapping[str, Any], url: Any, where: str, problems: _Problems) -> Transport | None:
    declared = table.get("transport", table.get("type"))
    if declared is None:
        if url is None:
            return "stdio"
        path = urlsplit(str(url)).path.rstrip("/")
        return "sse" if path.endswith("/sse") else "http"
    name = _TRANSPORT_NAMES.get(str(declared).lower())
    if name is None:
        problems.add(f"{where} transport {declared!r} is not known; use 'stdio', 'http' (streamable HTTP) or 'sse'")
        return None
    if (name == "stdio") != (url is None):
        problems.add(f"{where} transport {declared!r} does not fit "
                     f"{'a url' if url is not None else 'a command'}; drop the transport key or fix it")
        return None
    return name


# -- field readers -------------------------------------------------------------------------------


class _Problems:
    def __init__(self, source: Path | None) -> None:
        self.source = source
        self.items: list[str] = []

    def add(self, message: str) -> None:
        self.items.append(message)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        name = self.source.name if self.source else "gateway config"
        if len(self.items) == 1:
            raise ConfigError(f"{name}: {self.items[0]}")
        raise ConfigError(f"{name}: {len(self.items)} problems:\n" + "\n".join(f"  - {p}" for p in self.items))


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read gateway config {file}: {exc}") from exc


def _parse_json(text: str, file: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file.name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc


def _strings(table: Mapping[str, Any], key: str, where: str, problems: _Problems) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.add(f"{where} {key} must be a list of strings, got {value!r}")
        return []
    return list(value)


def _string_table(table: Mapping[str, Any], key: str, where: str, problems: _Problems) -> dict[str, str]:
    value = table.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        problems.add(f"{where} {key} must be a table of strings (e.g. {key} = {{ NAME = \"value\" }}), got {value!r}")
        return {}
    return {str(k): v for k, v in value.items()}


def _bool(table: Mapping[str, Any], key: str, default: bool, where: str, problems: _Problems) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        problems.add(f"{where} {key} must be true or false, got {value!r}")
        return default
    return value


def _int(table: Mapping[str, Any], key: str, default: int, low: int, high: int, where: str,
         problems: _Problems) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.add(f"{where} {key} must be an integer from {low} to {high}, got {value!r}")
        return default
    return value


def _seconds(table: Mapping[str, Any], key: str, default: float, where: str, problems: _Problems) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86_400:
        problems.add(f"{where} {key} must be a number of seconds above 0, got {value!r}")
        return default
    return float(value)


def _auto_approve(value: Any, problems: _Problems) -> tuple[str, ...]:
    """A list of names/globs, or the seed's table form ``{ "alias__tool" = true }``."""
    if isinstance(value, dict):
        bad = {k: v for k, v in value.items() if not isinstance(v, bool)}
        if bad:
            problems.add(f"[mcp] auto_approve table values must be true or false, got {bad!r}")
        names = [str(k) for k, v in value.items() if v is True]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = list(value)
    else:
        problems.add(f"[mcp] auto_approve must be a list of tool names/globs (e.g. [\"fs__read_file\", "
                     f"\"time__*\"]), got {value!r}")
        return ()
    for name in names:
        if not re.match(r"^[a-zA-Z0-9_*?\[\]-]+$", name):
            problems.add(f"[mcp] auto_approve entry {name!r} is not a tool name or glob like 'alias__*'")
    return tuple(names)


def _pin_mode(value: Any, problems: _Problems) -> PinMode:
    if value is True:
        return "warn"
    if value is False:
        return "off"
    if value in ("off", "warn", "refuse"):
        return value  # type: ignore[no-any-return]
    problems.add(f"[mcp] pin must be 'off', 'warn' or 'refuse', got {value!r}")
    return "off"


def _native(value: Any, problems: _Problems) -> bool | str:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        reason = check_alias(value)
        if reason is None:
            return value
        problems.add(f"[mcp] native: {reason}")
        return False
    problems.add(f"[mcp] native must be true, false or an alias string, got {value!r}")
    return False


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(known))}"


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
