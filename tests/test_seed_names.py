"""The seed's other tool names through a real MCP session: callable by name, never listed."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.kernel.catalog import Catalog, Result, tool
from codeward.kernel.context import ToolContext
from codeward.tools import default_catalog

SEED_NAMES = ("run_powershell", "code_execute", "code_review_file", "code_review_project", "code_debug")


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.anyio
async def test_each_seed_name_answers_through_a_real_session_but_none_is_listed(root: Path) -> None:
    (root / "shop.py").write_text("import os\n\n\ndef total(prices):\n    return sum(prices)\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1", "CODEWARD_HOME": str(root.parent / "h")})
    async with Client(params) as client:
        enabled = await client.call_tool("toolsets", {"action": "enable", "names": ["all"]})  # a lean server
        assert not enabled.is_error, _text(enabled)
        listed = {t.name for t in (await client.list_tools()).tools}
        assert not listed & set(SEED_NAMES) and {"run_shell", "coding_execute_code"} <= listed

        ran = await client.call_tool("code_execute", {"code": "print(6 * 7)"})
        assert not ran.is_error, _text(ran)
        assert ran.structured_content is not None and ran.structured_content["stdout"].strip() == "42"

        review = await client.call_tool("code_review_file", {"path": "shop.py"})
        assert not review.is_error, _text(review)
        assert review.structured_content is not None
        assert any("os" in issue["message"] for issue in review.structured_content["issues"])  # unused import

        project = await client.call_tool("code_review_project", {})
        assert not project.is_error, _text(project)
        assert project.structured_content is not None and project.structured_content["files_analyzed"] >= 1

        debug = await client.call_tool("code_debug", {
            "code": "print(1 / 0)\n",
            "error": "Traceback (most recent call last):\n  File \"main.py\", line 1, in <module>\n"
                     "ZeroDivisionError: division by zero\n"})
        assert not debug.is_error, _text(debug)
        assert debug.structured_content is not None
        assert debug.structured_content["diagnosis"]["error_type"] == "ZeroDivisionError"

        powershell = await client.call_tool("run_powershell", {"script": "Write-Output 'hi'"})
        if shutil.which("pwsh") or shutil.which("powershell"):
            assert not powershell.is_error and "hi" in _text(powershell)
        else:
            assert powershell.is_error
            assert "not installed" in _text(powershell) and "run_shell" in _text(powershell)

        bad = await client.call_tool("code_review_file", {"path": "../outside.py"})
        assert bad.is_error and "outside" in _text(bad)
        wrong = await client.call_tool("code_execute", {"code": "print(1)", "language": "cobol"})
        assert wrong.is_error and "language" in _text(wrong)


def test_a_hidden_tool_is_callable_and_documented_but_not_listed() -> None:
    catalog = default_catalog()
    names = catalog.names()
    for name in SEED_NAMES:
        assert name in catalog and name not in names
        spec = catalog.get(name)
        assert spec is not None and spec.hidden
    docs = (Path(__file__).resolve().parents[1] / "docs" / "tools.md").read_text()
    assert all(f"### `{name}`" in docs for name in SEED_NAMES)


def test_a_hidden_tool_may_not_take_a_listed_name() -> None:
    @tool(toolset="t", read_only=True, name="same")
    def listed(ctx: ToolContext) -> Result[str]:
        return Result.success("listed")

    @tool(toolset="t", read_only=True, name="same", hidden=True)
    def hidden(ctx: ToolContext) -> Result[str]:
        return Result.success("hidden")

    with pytest.raises(ValueError, match="registered twice"):
        Catalog.from_functions([listed, hidden])


def test_a_disabled_toolset_takes_its_seed_names_with_it() -> None:
    catalog = default_catalog(["files"])
    assert all(name not in catalog for name in SEED_NAMES)


def _shape(result: Any) -> dict[str, Any]:
    """A failure's Codomyrmex shape: the JSON of its last text block (the first is the error's text)."""
    assert len(result.content) == 2, result.content
    return dict(json.loads(result.content[-1].text))


@pytest.mark.anyio
async def test_codomyrmex_failures_come_back_in_its_shapes(root: Path) -> None:
    """An unusable language is the seed's ``status: setup_error`` record, a missing file its
    ``{"success": false, "error": "Analysis failed: ..."}`` — as a second text block of JSON after codeward's
    error text, never as structured content (the TypeScript SDK validates structured content against the
    output schema even on an error result)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1", "CODEWARD_HOME": str(root.parent / "h")})
    async with Client(params) as client:
        enabled = await client.call_tool("toolsets", {"action": "enable", "names": ["coding"]})
        assert not enabled.is_error, _text(enabled)

        empty = await client.call_tool("coding_execute_code", {"language": "python", "code": "   \n"})
        assert empty.is_error and "code is empty" in _text(empty)
        assert empty.structured_content is None
        record = _shape(empty)
        assert record["status"] == "setup_error" and record["success"] is False
        assert record["error"].startswith("Execution failed: ") and "code is empty" in record["error"]
        assert record["error_message"] and {"stdout", "stderr", "exit_code", "execution_time"} <= set(record)

        unknown = await client.call_tool("code_execute", {"language": "cobol", "code": "DISPLAY 'HI'."})
        assert unknown.is_error
        assert _shape(unknown).get("status") == "setup_error", unknown.content

        for name, arguments, what in [
            ("coding_analyze_file", {"file_path": "missing.py"}, "Analysis failed: "),
            ("code_review_file", {"path": "missing.py"}, "Analysis failed: "),
            ("coding_analyze_project", {"path": "no-such-folder"}, "Project analysis failed: "),
            ("coding_check_quality_gates", {"path": "no-such-folder"}, "Quality gate check failed: "),
        ]:
            failed = await client.call_tool(name, arguments)
            assert failed.is_error, (name, _text(failed))
            shaped = _shape(failed)
            assert shaped.get("success") is False and str(shaped.get("error", "")).startswith(what), (name, shaped)
            assert "missing.py" in shaped["error"] or "no-such-folder" in shaped["error"]

        fine = await client.call_tool("coding_execute_code", {"language": "python", "code": "print(6 * 7)"})
        assert not fine.is_error and "success" not in (fine.structured_content or {})  # successes are unchanged
