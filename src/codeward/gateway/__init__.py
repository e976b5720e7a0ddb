"""The gateway: connect other MCP servers, namespace their tools, approve calls by policy.

Public pieces: :func:`load_gateway_config` (``codeward.toml`` ``[mcp]`` or ``mcpServers``
JSON), :class:`Gateway` (a tool surface over every upstream), :class:`Upstream` (one
connection) and the typed upstream errors. Its commands live in :mod:`codeward.apps.cli`.
"""

from importlib import import_module
from typing import Any

# Names are imported on first use, so that importing one light module (the policy, the config)
# does not load the MCP client stack.
_HOMES = {
    "GatewayConfig": "config", "ServerConfig": "config", "load_gateway_config": "config",
    "parse_gateway_table": "config",
    "UpstreamDisconnected": "errors", "UpstreamError": "errors", "UpstreamHttpError": "errors",
    "UpstreamProtocolError": "errors", "UpstreamRpcError": "errors", "UpstreamTimeout": "errors",
    "UpstreamUnreachable": "errors",
    "Gateway": "gateway",
    "ApprovalPolicy": "policy", "ApprovalRequest": "policy", "ConfirmCallback": "policy",
    "ServerState": "upstream", "ServerStatus": "upstream", "Upstream": "upstream",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'codeward.gateway' has no attribute {name!r}")
    return getattr(import_module(f"codeward.gateway.{home}"), name)
