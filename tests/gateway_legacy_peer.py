"""A minimal hand-written MCP stdio server that answers ``initialize`` with a protocol version
the client does not know (run as a subprocess). It speaks plain JSON-RPC lines, as old or
home-grown servers do; the gateway must log the mismatch and carry on.

    python tests/gateway_legacy_peer.py [VERSION]
"""

from __future__ import annotations

import json
import sys

VERSION = sys.argv[1] if len(sys.argv) > 1 else "2099-01-01"
TOOLS = [{"name": "ping", "description": "Answer pong.", "inputSchema": {"type": "object", "properties": {}}}]


def answer(request: dict[str, object]) -> dict[str, object] | None:
    method = request.get("method")
    if "id" not in request:
        return None
    if method == "initialize":
        result: object = {"protocolVersion": VERSION, "capabilities": {"tools": {"listChanged": False}},
                          "serverInfo": {"name": "legacy-peer", "version": "0.1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "pong"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
