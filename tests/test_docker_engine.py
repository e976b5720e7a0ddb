"""The Docker backend against a real Docker engine, through a real ``codeward serve`` and the
official MCP client: code runs and its output comes back, the engine's limits hold, the
container has no network, no capabilities, a read-only root and a non-root user, and it is
gone afterwards. The engine and the image come from ``tests/docker_support.py``."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.docker_support import Engine

pytestmark = [pytest.mark.anyio, pytest.mark.services, pytest.mark.xdist_group("docker")]


@asynccontextmanager
async def serve(root: Path, engine: Engine, config: str = "") -> AsyncIterator[Client]:
    """``codeward serve ROOT`` over stdio, reaching ``engine``; ``config`` is the project's codeward.toml."""
    if config:
        (root / "codeward.toml").write_text(config, encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **engine.env()}
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)], env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def run_in_docker(client: Client, **arguments: Any) -> tuple[bool, dict[str, Any], str]:
    """``coding_run_in_docker``: (is_error, structured result, text)."""
    result = await client.call_tool("coding_run_in_docker", arguments)
    text = "\n".join(getattr(block, "text", "") or "" for block in result.content)
    return bool(result.is_error), dict(result.structured_content or {}), text


async def test_code_runs_in_a_container_and_its_output_comes_back(
        root: Path, docker_engine: Engine, docker_image: str) -> None:
    before = set(docker_engine.containers())
    code = ("import os, sys\nprint(sys.stdin.read().strip(), os.environ['GREETING'], os.getuid())\n"
            "print('to stderr', file=sys.stderr)\nsys.exit(3)\n")
    async with serve(root, docker_engine) as client:
        failed, result, text = await run_in_docker(client, language="python", code=code, image=docker_image,
                                                   stdin="from stdin", environment={"GREETING": "hi"})
    assert not failed, text
    assert result["stdout"] == "from stdin hi 1000\n"
    assert result["stderr"] == "to stderr\n"
    assert result["exit_code"] == 3 and result["status"] == "error"
    assert result["image"] == docker_image and len(result["container_id"]) == 12
    assert set(docker_engine.containers()) == before  # the container was removed
