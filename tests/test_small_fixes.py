"""Small contract fixes: one listing per tool (the seed's name is an alias), latency without a
person's think time, set_file_slice keeping the final newline, usages of a qualified member."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from codeward.approval.policy import Approval, ApprovalPolicy, ApprovalRequest
from codeward.apps.control.observe import Observe, SessionObserver
from codeward.apps.control.state import ControlState
from codeward.gateway import Gateway
from codeward.kernel.catalog import Catalog, Result, tool
from codeward.kernel.chain import Middleware, chain
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.surface import CatalogSurface, ToolSurface
from codeward.kernel.workspace import Workspace
from tests.conftest import every_tool_env
from tests.gateway_support import config, stdio_peer

WAIT = 3.0
"""How long the simulated person takes to answer an approval prompt."""


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


# -- the seed's name: an alias, not a second listing ----------------------------------------


@pytest.mark.anyio
async def test_get_ui_performance_answers_but_only_get_server_metrics_is_listed(root: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env=every_tool_env(PYTHONUNBUFFERED="1"))
    async with Client(params) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "get_server_metrics" in listed and "get_ui_performance" not in listed
        descriptions = [tool.description for tool in listed.values()]
        assert len(descriptions) == len(set(descriptions)), "two tools share a description"
        seed = await client.call_tool("get_ui_performance", {})
        current = await client.call_tool("get_server_metrics", {})
    assert not seed.is_error and not current.is_error
    assert seed.structured_content is not None and current.structured_content is not None
    assert set(seed.structured_content) == set(current.structured_content)
    assert seed.structured_content["process"]["pid"] == current.structured_content["process"]["pid"]


def test_an_alias_may_not_take_a_tool_name() -> None:
    def first(ctx: ToolContext) -> Result[str]:
        return Result.success("first")

    def second(ctx: ToolContext) -> Result[str]:
        return Result.success("second")

    one = tool(toolset="t", read_only=True, aliases=("second",))(first)
    two = tool(toolset="t", read_only=True)(second)
    with pytest.raises(ValueError, match="alias 'second'"):
        Catalog.from_functions([two, one])
    with pytest.raises(ValueError, match="'second' is registered twice"):
        Catalog.from_functions([one, two])
    with pytest.raises(ValueError, match="must match"):
        tool(toolset="t", read_only=True, aliases=("not a name",))(first)


# -- approval waits are not latency -------------------------------------------------------------


def _person(approve: bool, seen: list[str]) -> Callable[[ApprovalRequest], Any]:
    async def answer(request: ApprovalRequest) -> bool:
        seen.append(request.name)
        await anyio.sleep(WAIT)
        return approve

    return answer


def _observed(surface: ToolSurface, *inner: Middleware) -> tuple[ToolSurface, ControlState]:
    """``surface`` behind the control plane's observer (outermost) and ``inner``, as a stack chains them."""
    state = ControlState("test")
    return chain(surface, [Observe(SessionObserver(state)), *inner]), state


def _record(state: ControlState, name: str) -> dict[str, Any]:
    return next(call for call in state.calls() if call["name"] == name)


@pytest.mark.anyio
@pytest.mark.parametrize("approve", [True, False])
async def test_gateway_latency_leaves_out_the_wait_for_approval(ctx: ToolContext, approve: bool) -> None:
    seen: list[str] = []
    cfg = config({"peer": stdio_peer(timeout=60)})
    async with Gateway(cfg) as gateway:
        assert await gateway.wait_settled(60)
        observed, state = _observed(gateway, Approval(ApprovalPolicy.from_config(cfg), _person(approve, seen),
                                                      trusted_digest=gateway.trusted_digest))
        outcome = await observed.call("peer__count", {}, ctx)
    assert seen == ["peer__count"] and outcome.is_error is not approve
    assert outcome.waited >= WAIT
    assert outcome.seconds < outcome.waited, "the tool's latency must not include the person's think time"
    record = _record(state, "peer__count")
    assert record["approval_wait_ms"] >= WAIT * 1000
    assert record["duration_ms"] < record["approval_wait_ms"]
    [figures] = state.tool_metrics.snapshot().tools
    assert figures.max_ms < WAIT * 1000


@pytest.mark.anyio
@pytest.mark.parametrize("approve", [True, False])
async def test_native_tool_latency_leaves_out_the_wait_for_approval(root: Path, catalog: Catalog,
                                                                    approve: bool) -> None:
    ctx = ToolContext(Workspace.create([root]))
    seen: list[str] = []
    observed, state = _observed(CatalogSurface(catalog), Approval(ApprovalPolicy(), _person(approve, seen)))
    outcome: ToolOutcome = await observed.call("write_file", {"path": "notes.md", "content": "hello\n"}, ctx)
    assert seen == ["write_file"] and outcome.is_error is not approve
    assert (root / "notes.md").exists() is approve
    assert outcome.waited >= WAIT and outcome.seconds < outcome.waited
    record = _record(state, "write_file")
    assert record["approval_wait_ms"] >= WAIT * 1000 and record["duration_ms"] < record["approval_wait_ms"]
    assert state.tool_metrics.snapshot().tools[0].max_ms < WAIT * 1000


# -- set_file_slice keeps the file's last newline ---------------------------------------------


@pytest.mark.parametrize(("before", "start", "end", "content", "after"), [
    (b"a\nb\nc\n", 3, 3, "C", b"a\nb\nC\n"),  # the reported case: the last line, replaced
    (b"a\nb\nc\n", 2, 3, "B\nC", b"a\nB\nC\n"),
    (b"a\nb\nc\n", 4, 3, "d\n", b"a\nb\nc\nd\n"),  # appended after the last line
    (b"a\nb\nc\n", 4, 3, "d", b"a\nb\nc\nd\n"),  # the file ended with a newline: it still does
    (b"a\nb\nc", 3, 3, "C", b"a\nb\nC"),  # a file without a final newline stays without one
    (b"a\nb\nc", 4, 3, "d", b"a\nb\nc\nd"),
    (b"a\r\nb\r\n", 2, 2, "B", b"a\r\nB\r\n"),  # CRLF kept
    (b"a\nb\nc\n", 3, 3, "", b"a\nb\n"),  # deleting the last line
    (b"a\nb\nc\n", 1, 1, "A", b"A\nb\nc\n"),
])
def test_set_file_slice_keeps_the_final_newline(root: Path, call: Callable[..., ToolOutcome], before: bytes,
                                                start: int, end: int, content: str, after: bytes) -> None:
    (root / "f.txt").write_bytes(before)
    done = call("set_file_slice", path="f.txt", start_line=start, end_line=end, new_content=content)
    assert not done.is_error, done.text
    assert (root / "f.txt").read_bytes() == after


# -- a qualified member's usages ----------------------------------------------------------------

SEGMENT = '''class Segment:
    @classmethod
    def split_cells(cls, segment, cut):
        return cls.split_cells(segment, cut - 1) if cut > 9 else (segment, cut)


class Other:
    def split_cells(self):
        return None


def render(segments):
    for segment in segments:
        yield Segment.split_cells(segment, 4)
        yield segment.split_cells
        split_cells = "a local name, not the method"
        print(split_cells)
'''


@pytest.mark.parametrize("scope", [".", "segment.py"])
def test_usages_of_a_qualified_method_are_its_attribute_uses(root: Path, call: Callable[..., ToolOutcome],
                                                             scope: str) -> None:
    (root / "segment.py").write_text(SEGMENT)
    found = call("py_find_usages", path=scope, name="Segment.split_cells")
    assert not found.is_error, found.text
    assert found.structured is not None
    lines = sorted((u["line"], u["definition"]) for u in found.structured["usages"])
    # the definition (line 3), cls.split_cells (4), Segment.split_cells (14), segment.split_cells (15);
    # not Other's definition (8) nor the local variable (16, 17)
    assert lines == [(3, True), (4, False), (14, False), (15, False)], found.text
    assert "Closest defined names: Segment.split_cells" not in found.text


def test_a_qualified_name_that_is_not_defined_never_suggests_itself(root: Path,
                                                                    call: Callable[..., ToolOutcome]) -> None:
    (root / "segment.py").write_text(SEGMENT)
    missing = call("py_find_usages", path=".", name="Segment.split_cell")
    assert not missing.is_error and missing.structured is not None and missing.structured["total"] == 0
    assert "Segment.split_cells" in missing.text  # the close name is suggested
    dotted = call("py_find_usages", path=".", name="os.path.join")
    assert dotted.structured is not None and dotted.structured["total"] == 0
    assert "Closest defined names: os.path.join" not in dotted.text
