"""Helpers for the gateway tests: the peer servers' commands, gateway configs, process checks."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from codeward.gateway.config import GatewayConfig, parse_gateway_table

TESTS = Path(__file__).resolve().parent
PEER = str(TESTS / "gateway_peer.py")
LEGACY_PEER = str(TESTS / "gateway_legacy_peer.py")


def peer_http(port: int, *extra: str, mode: str = "http") -> list[str]:
    return [sys.executable, PEER, mode, "--port", str(port), *extra]


def stdio_peer(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [PEER, "stdio"], **extra}


def config(servers: Mapping[str, Mapping[str, Any]], **mcp: Any) -> GatewayConfig:
    return parse_gateway_table({"servers": {k: dict(v) for k, v in servers.items()}, **mcp})


def process_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with suppress(ChildProcessError):  # reap it if it is our zombie child
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return False
