"""The gateway: connect other MCP servers, namespace their tools, approve calls by policy.

Public pieces: :func:`load_gateway_config` (``codeward.toml`` ``[mcp]`` or ``mcpServers``
JSON), :class:`Gateway` (a tool surface over every upstream), :class:`Upstream` (one
connection), the typed upstream errors, and the CLI entry points in
:mod:`codeward.gateway.cli`.
"""

from codeward.gateway.config import GatewayConfig, ServerConfig, load_gateway_config, parse_gateway_table
from codeward.gateway.errors import (
    UpstreamDisconnected,
    UpstreamError,
    UpstreamHttpError,
    UpstreamProtocolError,
    UpstreamRpcError,
    UpstreamTimeout,
    UpstreamUnreachable,
)
from codeward.gateway.gateway import Gateway
from codeward.gateway.policy import ApprovalPolicy, ApprovalRequest, ConfirmCallback
from codeward.gateway.upstream import ServerState, ServerStatus, Upstream

__all__ = [
    "ApprovalPolicy",
    "ApprovalRequest",
    "ConfirmCallback",
    "Gateway",
    "GatewayConfig",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "Upstream",
    "UpstreamDisconnected",
    "UpstreamError",
    "UpstreamHttpError",
    "UpstreamProtocolError",
    "UpstreamRpcError",
    "UpstreamTimeout",
    "UpstreamUnreachable",
    "load_gateway_config",
    "parse_gateway_table",
]
