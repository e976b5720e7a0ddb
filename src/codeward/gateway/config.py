"""Gateway configuration: the ``[mcp]`` table of the typed configuration, and ways to get one.

The model itself (:class:`GatewayConfig`, :class:`ServerConfig`) and its validation live in
:mod:`codeward.config.mcp` with every other table; a loaded :class:`codeward.config.Config`
carries it as ``config.mcp``. This module reads one from a file or a parsed table, for the
gateway's own entry points and tests, and builds a server from a URL given at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from codeward.config.errors import ConfigError, display_path
from codeward.config.files import mcp_servers_of, read_config_file
from codeward.config.loader import fold_servers, validate_file, validate_layer
from codeward.config.mcp import (
    ALIAS_SEPARATOR,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_PIN_FILE,
    NAME_CHARS,
    GatewayConfig,
    PinMode,
    ServerConfig,
    Transport,
    alias_for_url,
    check_alias,
    sanitize_alias,
)

__all__ = [
    "ALIAS_SEPARATOR", "DEFAULT_CALL_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT", "DEFAULT_PIN_FILE", "NAME_CHARS",
    "GatewayConfig", "PinMode", "ServerConfig", "Transport", "alias_for_url", "check_alias",
    "load_gateway_config", "parse_gateway_table", "parse_mcp_servers_json", "sanitize_alias", "server_from_url",
]


def load_gateway_config(path: str | Path) -> GatewayConfig:
    """The ``[mcp]`` table of a ``codeward.toml``, or the servers of an ``mcpServers`` JSON file."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"gateway config {str(path)!r} does not exist; pass an existing codeward.toml "
                          "or an mcpServers JSON file")
    file = file.resolve()
    return _finished(validate_file(read_config_file(file, "project")).mcp, file)


def parse_gateway_table(mcp: Mapping[str, Any], source: Path | None = None) -> GatewayConfig:
    """An ``[mcp]`` table (already parsed) as a :class:`GatewayConfig`; paths are relative to ``source``."""
    base = source.parent if source else Path.cwd()
    label = display_path(source) if source else "gateway config"
    layer = validate_layer(GatewayConfig, mcp, "project", base, label)
    return _finished(fold_servers(layer, base, label), source)


def parse_mcp_servers_json(data: Any, source: Path | None = None) -> GatewayConfig:
    """A Claude-Desktop ``{"mcpServers": {...}}`` document, imported unchanged.

    Keys other clients add (``disabled``, ``autoApprove``, ``timeout``, ``type``, ``headers``)
    are understood; other unknown keys are ignored, as those clients do.
    """
    base = source.parent if source else Path.cwd()
    label = display_path(source) if source else "mcpServers JSON"
    servers = mcp_servers_of(data, label)
    layer = validate_layer(GatewayConfig, {"servers": servers}, "json", base, label)
    return _finished(layer, source)


def server_from_url(url: str, alias: str | None = None, *, taken: Iterable[str] = (), **options: Any) -> ServerConfig:
    """A :class:`ServerConfig` for a URL given at run time (``codeward gateway --url``)."""
    chosen = alias or alias_for_url(url, taken)
    return validate_layer(ServerConfig, {"url": url, **options, "alias": chosen}, "project", Path.cwd(),
                          f"server {chosen!r}")


def _finished(config: GatewayConfig, source: Path | None) -> GatewayConfig:
    base = source.parent if source else Path.cwd()
    return config.model_copy(update={"source": source,
                                     "pin_file": config.pin_file or (base / DEFAULT_PIN_FILE).resolve()})
