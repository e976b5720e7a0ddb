"""A serving command has pydantic build the SDK's per-era wire models on first use.

The SDK validates every message against a generated model of its shape in the session's protocol
era; building all ~300 at import was a third of a server's start-up. Checked from the outside:
a ``python -m codeward serve`` process driven by the official client in both eras reports, at
exit, that the models its session used were built and most others never were; every wire model
built on first use has the same JSON schemas as one built at import; and where the deferral
cannot apply, nothing changes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp import Client

from tests.serve_probe import RUN_AS_PYTHON_M_CODEWARD, probed_serve

PROBE = textwrap.dedent("""
    import atexit, json, os, runpy, sys

    def report():
        from pydantic import BaseModel
        built = {}
        for name in ("mcp_types._v2025_11_25", "mcp_types._v2026_07_28"):
            module = sys.modules.get(name)
            for attr, value in vars(module or object()).items():
                if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == name:
                    built[f"{name}.{attr}"] = bool(value.__pydantic_complete__)
        with open(os.environ["PROBE_REPORT"], "w") as out:
            json.dump(built, out)

    atexit.register(report)
""") + RUN_AS_PYTHON_M_CODEWARD

SCHEMAS = textwrap.dedent("""
    import json, sys
    if sys.argv[1] == "deferred":
        from codeward.serving.sdk_wire_models import defer_wire_models
        assert defer_wire_models() is True
    import mcp  # noqa: F401  (the SDK as a server imports it)
    from pydantic import BaseModel
    import mcp_types._v2025_11_25 as v2025, mcp_types._v2026_07_28 as v2026
    out = {}
    complete = {f"{m.__name__}.{a}": bool(v.__pydantic_complete__) for m in (v2025, v2026) for a, v in vars(m).items()
                if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == m.__name__}
    for module in (v2025, v2026):
        for attr, value in sorted(vars(module).items()):
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__:
                out[f"{module.__name__}.{attr}"] = {
                    "complete_at_import": complete[f"{module.__name__}.{attr}"],
                    "validation": value.model_json_schema(mode="validation"),
                    "serialization": value.model_json_schema(mode="serialization"),
                }
    print(json.dumps(out, sort_keys=True))
""")


def _python(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_served_session_builds_only_the_wire_models_it_meets(tmp_path: Path, mode: str) -> None:
    params, report = probed_serve(tmp_path, PROBE)
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        listed = await client.list_tools()
        assert "read_file" in {tool.name for tool in listed.tools}
        read = await client.call_tool("read_file", {"path": "notes.txt"})
        assert not read.is_error and "alpha" in str(read.content)
        missing = await client.call_tool("read_file", {"path": "absent.txt"})
        assert missing.is_error  # an error answer goes through the same result model
    built = json.loads(report.read_text())
    prefix = "mcp_types._v2025_11_25." if mode == "legacy" else "mcp_types._v2026_07_28."  # auto: the newest era
    assert len(built) > 200, sorted(built)[:5]
    used = sorted(name for name in built if built[name])
    assert built[f"{prefix}CallToolRequest"] and built[f"{prefix}ListToolsRequest"], used
    unused = [name for name in ("CreateMessageRequest", "ElicitRequest", "GetPromptResult", "CompleteRequest")
              if not built[f"{prefix}{name}"]]
    assert unused == ["CreateMessageRequest", "ElicitRequest", "GetPromptResult", "CompleteRequest"], built
    assert sum(built.values()) < len(built) / 4, f"{sum(built.values())} of {len(built)} built"


def test_every_wire_model_built_on_first_use_has_the_schemas_it_has_built_at_import() -> None:
    eager = json.loads(_python(SCHEMAS, "eager"))
    deferred = json.loads(_python(SCHEMAS, "deferred"))
    assert eager.keys() == deferred.keys() and len(eager) > 200
    assert all(entry["complete_at_import"] for entry in eager.values())
    assert not any(entry["complete_at_import"] for entry in deferred.values())
    different = [name for name in eager
                 if (eager[name]["validation"], eager[name]["serialization"])
                 != (deferred[name]["validation"], deferred[name]["serialization"])]
    assert different == []


def test_nothing_changes_once_the_sdk_is_imported() -> None:
    code = textwrap.dedent("""
        import mcp  # noqa: F401
        import mcp_types._v2025_11_25 as v2025
        from codeward.serving.sdk_wire_models import defer_wire_models
        from mcp_types._wire_base import WireModel
        assert defer_wire_models() is False
        assert not WireModel.model_config.get("defer_build")
        assert v2025.CallToolRequest.__pydantic_complete__
        print("unchanged")
    """)
    assert _python(code).strip() == "unchanged"


def test_an_sdk_without_the_expected_base_is_left_alone() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["mcp_types._wire_base"] = None  # a release that moved or renamed the base
        from codeward.serving.sdk_wire_models import defer_wire_models
        assert defer_wire_models() is False
        print("left alone")
    """)
    assert _python(code).strip() == "left alone"
