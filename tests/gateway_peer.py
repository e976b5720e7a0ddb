"""A small real MCP server the gateway tests connect to (run as a subprocess).

    python tests/gateway_peer.py stdio
    python tests/gateway_peer.py http --port 4100 [--token SECRET] [--json-response]
    python tests/gateway_peer.py sse --port 4100

With ``--token`` every HTTP request must carry ``Authorization: Bearer SECRET``; anything
else gets ``401 {"error": "unauthorized"}`` — a body that is not JSON-RPC, like the servers
the gateway seed describes. ``PEER_DESCRIPTION`` in the environment changes one tool's
description (to test pinning); with ``PEER_CALL_LOG`` each ``echo`` and ``slow`` appends a line to that
file as it runs (its text, ``slow <seconds>``), so a test counts how often a call ran.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("gateway-peer")
calls = {"count": 0}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    _ran(text)
    return text


def _ran(line: str) -> None:
    if os.environ.get("PEER_CALL_LOG"):
        with open(os.environ["PEER_CALL_LOG"], "a", encoding="utf-8") as runs:
            runs.write(line + "\n")


@server.tool(description=os.environ.get("PEER_DESCRIPTION", "Report the process id of this server."),
             annotations=ToolAnnotations(read_only_hint=True))
def pid() -> str:
    return str(os.getpid())


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami(ctx: Context) -> str:
    """The Authorization header this request arrived with (HTTP only)."""
    headers = ctx.headers or {}
    return headers.get("authorization", "(none)")


@server.tool()
def count() -> str:
    """Count calls (not idempotent)."""
    calls["count"] += 1
    return str(calls["count"])


@server.tool()
def write_file(path: str, text: str) -> str:
    """Write TEXT to the file at PATH (a call that takes effect: the team tests kill a replica mid-write)."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    return f"wrote {path}"


@server.tool()
def fail(reason: str = "it broke") -> str:
    """Fail as a tool: the result carries isError."""
    raise ValueError(reason)


@server.tool()
def rpc_error() -> str:
    """Refuse with a JSON-RPC error envelope."""
    raise MCPError(code=-32602, message="rpc_error always refuses", data={"why": "test"})


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    import anyio

    _ran(f"slow {seconds}")
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
async def steps(count: int, ctx: Context, delay: float = 0.2) -> str:
    """Report COUNT progress steps DELAY seconds apart, then answer (a long, streaming, repeatable call)."""
    import anyio

    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step}")
        await anyio.sleep(delay)
    return f"{count} steps"


@server.tool()
async def add_tool(name: str, ctx: Context, description: str = "") -> str:
    """Register a new tool named NAME (optionally with a DESCRIPTION) and announce the change."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=description or f"A tool added at run time: {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
async def remove_tool(name: str, ctx: Context) -> str:
    """Remove the tool named NAME and announce the change."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"removed {name}"


class Answer(BaseModel):
    color: str
    size: int = 0


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the client (elicitation) for a color and a size."""
    result = await ctx.elicit("Pick a color", Answer)
    return json.dumps({"action": result.action, "data": result.data.model_dump() if result.data else None})


def _http_app(args: argparse.Namespace) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    if args.mode == "sse":
        app = server.sse_app(transport_security=security)
    else:
        app = server.streamable_http_app(json_response=args.json_response, transport_security=security)
    if not args.token:
        return app
    expected = f"Bearer {args.token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope.get("headers") or []).get(b"authorization") != expected:
            body = json.dumps({"error": "unauthorized"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token")
    parser.add_argument("--json-response", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.mode == "stdio":
        server.run()
        return
    import uvicorn

    uvicorn.run(_http_app(args), host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
