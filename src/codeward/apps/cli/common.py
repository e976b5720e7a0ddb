"""The configuration a command runs with: ``codeward.toml`` and, for the gateway, its servers."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from codeward.config import Config, ConfigError, load_config

if TYPE_CHECKING:
    from codeward.gateway.config import GatewayConfig


def load_configs(explicit: str | Path | None) -> tuple[Config, GatewayConfig]:
    """The configuration (``--config FILE``: a ``codeward.toml`` or a Claude-Desktop ``mcpServers``
    JSON file; else the one found upward from here) and its ``[mcp]`` servers."""
    config = load_config(str(explicit) if explicit is not None else None)
    return config, config.mcp


def configs_of(args: argparse.Namespace) -> tuple[Config, GatewayConfig]:
    return load_configs(getattr(args, "config", None))


def with_urls(gateway: GatewayConfig, urls: Sequence[str] = (), *, require: bool = True) -> GatewayConfig:
    """The configured servers plus those given by URL on the command line (``require``: at least one)."""
    from codeward.gateway.config import server_from_url  # only with --url

    for url in urls:
        gateway = gateway.with_server(server_from_url(url, taken=[s.alias for s in gateway.servers]))
    if require and not gateway.servers:
        raise ConfigError("no MCP servers to connect: add [mcp.servers.<alias>] tables to codeward.toml, "
                          "pass a Claude-Desktop mcpServers JSON file, or give --url")
    return gateway
