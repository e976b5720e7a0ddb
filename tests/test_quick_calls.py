"""Quick tools on small files run on the event loop; everything else still gets a worker thread."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from codeward.kernel.catalog import QUICK_FILE_BYTES, Catalog, tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import Result

pytestmark = pytest.mark.anyio

PathArg = Annotated[str, Field(description="a file")]


@tool(toolset="probe", read_only=True, quick=True)
def quick_probe(ctx: ToolContext, path: PathArg) -> Result[str]:
    """Say which thread ran the call."""
    return Result.success(threading.current_thread().name)


@tool(toolset="probe", read_only=True)
def plain_probe(ctx: ToolContext, path: PathArg) -> Result[str]:
    """Say which thread ran the call."""
    return Result.success(threading.current_thread().name)


@tool(toolset="probe", quick=True)
def writing_probe(ctx: ToolContext, path: PathArg) -> Result[str]:
    """Say which thread ran the call (not read-only, so never quick)."""
    return Result.success(threading.current_thread().name)


@pytest.fixture
def probes() -> Catalog:
    return Catalog.from_functions([quick_probe, plain_probe, writing_probe])


async def test_a_quick_tool_on_a_small_file_runs_on_the_event_loop_thread(
    probes: Catalog, ctx: ToolContext, root: Path
) -> None:
    (root / "small.txt").write_text("x" * 1000)
    loop_thread = threading.current_thread().name
    assert (await probes.acall("quick_probe", {"path": "small.txt"}, ctx)).text == loop_thread
    assert (await probes.acall("quick_probe", {"path": "missing.txt"}, ctx)).text == loop_thread


async def test_big_files_directories_fifos_and_other_tools_go_to_a_worker_thread(
    probes: Catalog, ctx: ToolContext, root: Path
) -> None:
    (root / "big.txt").write_bytes(b"x" * (QUICK_FILE_BYTES + 1))
    (root / "small.txt").write_text("x")
    (root / "folder").mkdir()
    os.mkfifo(root / "pipe")
    loop_thread = threading.current_thread().name
    for path in ("big.txt", "folder", "pipe"):
        assert (await probes.acall("quick_probe", {"path": path}, ctx)).text != loop_thread, path
    assert (await probes.acall("plain_probe", {"path": "small.txt"}, ctx)).text != loop_thread
    assert (await probes.acall("writing_probe", {"path": "small.txt"}, ctx)).text != loop_thread


async def test_read_file_answers_the_same_on_either_path(catalog: Catalog, ctx: ToolContext, root: Path) -> None:
    small = "small file\n" * 10
    big = "€" * (QUICK_FILE_BYTES // 3 + 10) + "\n"  # over the quick size, under the output cap
    (root / "small.txt").write_text(small)
    (root / "big.txt").write_text(big)
    assert (await catalog.acall("read_file", {"path": "small.txt"}, ctx)).text == small
    assert (await catalog.acall("read_file", {"path": "big.txt"}, ctx)).text == big
    refused = await catalog.acall("read_file", {"path": "../outside.txt"}, ctx)
    assert refused.is_error and "outside the workspace" in refused.text
