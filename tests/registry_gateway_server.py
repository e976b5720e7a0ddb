"""A gateway in meta mode for the registry tests: codeward's catalog plus a real upstream MCP server
(``mcp-server-time``) behind the four registry meta-tools, served over stdio.

    python tests/registry_gateway_server.py ROOT
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from codeward.gateway import Gateway, parse_gateway_table
from codeward.registry.wiring import wire_registry
from codeward.server import CodewardServer
from codeward.surface import CatalogSurface, CompositeSurface
from codeward.tools import default_catalog
from codeward.workspace import Workspace


async def serve(root: Path) -> None:
    config = parse_gateway_table({
        "servers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                             "timeout": 30}},
        "auto_approve": ["time__*"],
    })
    async with Gateway(config) as gateway:
        await gateway.wait_settled(30)
        wired = wire_registry(CompositeSurface([CatalogSurface(default_catalog()), gateway]), meta=True)
        server = CodewardServer(wired.surface, Workspace.create([root]), extras=wired.extras,
                                resource_providers=wired.resource_providers, prompt_providers=wired.prompt_providers)
        await server.run_stdio()


if __name__ == "__main__":
    anyio.run(serve, Path(sys.argv[1]))
