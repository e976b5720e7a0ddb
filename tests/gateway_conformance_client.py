"""Adapter the MCP conformance suite runs as its client: ``python gateway_conformance_client.py URL``.

It drives codeward's gateway (and so its upstream client) against the suite's mock server:
the server is configured as one upstream named ``conformance`` and every call goes through
:meth:`Gateway.call`, approval policy and all. The scenario name arrives in
``MCP_CONFORMANCE_SCENARIO``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from codeward.gateway import Gateway, parse_gateway_table
from codeward.kernel.context import ToolContext
from codeward.kernel.workspace import Workspace


class AcceptingUser:
    """Answers elicitation by accepting the form as offered (leaving every field at its default)."""

    def sample(self, prompt: str, max_tokens: int = 256) -> str:
        return ""

    def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {}}


CALLS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}


async def main(url: str, scenario: str) -> int:
    config = parse_gateway_table({"servers": {"conformance": {"url": url, "timeout": 20}}})
    with tempfile.TemporaryDirectory() as scratch:
        ctx = ToolContext(Workspace.create([Path(scratch)]), peer=AcceptingUser())
        async with Gateway(config) as gateway:
            await gateway.wait_settled(25)
            [status] = gateway.statuses()
            if status.error:
                print(f"connect failed: {status.error}", file=sys.stderr)
                return 1
            call = CALLS.get(scenario)
            if call is None:
                return 0
            name, arguments = call
            outcome = await gateway.call(f"conformance__{name}", arguments, ctx)
            print(outcome.text)
            return 1 if outcome.is_error else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")))
