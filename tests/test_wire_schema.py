"""Output schemas on the wire: lean, and never stricter than what the tools return."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from pydantic import BaseModel

from codeward.kernel.catalog import Catalog
from codeward.kernel.wire_schema import wire_output_schema

pytestmark = pytest.mark.anyio


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    value: int = 0


class Sample(BaseModel):
    name: str
    note: str | None = None
    count: int = 0
    ratio: float = 0.0
    either: int | float = 0
    colour: Colour = Colour.RED
    maybe_colour: Colour | None = None
    mode: Literal["a", "b"] = "a"
    inner: Inner = Inner()
    maybe_inner: Inner | None = None
    items: list[str] = []
    anything: Any = None
    mapping: dict[str, int] = {}


def _wire(model: type[BaseModel]) -> dict[str, Any]:
    schema = wire_output_schema(model.model_json_schema())
    assert schema is not None
    return schema


def test_nullable_fields_stay_nullable_and_references_are_followed() -> None:
    properties = _wire(Sample)["properties"]
    assert properties["name"] == {"type": "string"}
    assert properties["note"] == {"type": ["string", "null"]}
    assert properties["either"] == {"type": "number"}  # an integer is a number: one word says both
    assert properties["colour"] == {"type": "string"}  # a $ref to an enum is a string, not an object
    assert properties["maybe_colour"] == {"type": ["string", "null"]}
    assert properties["mode"] == {"type": "string"}
    assert properties["inner"] == {"type": "object"}
    assert properties["maybe_inner"] == {"type": ["object", "null"]}
    assert properties["items"] == {"type": "array"}
    assert properties["anything"] == {}  # unknown: unconstrained, never guessed
    assert properties["mapping"] == {"type": "object"}
    assert _wire(Sample)["required"] == ["name"]


def test_every_value_the_model_can_hold_validates_against_the_wire_schema() -> None:
    schema = _wire(Sample)
    filled = Sample(name="n", note="x", count=3, ratio=1.5, either=2, colour=Colour.BLUE, maybe_colour=Colour.RED,
                    mode="b", inner=Inner(value=1), maybe_inner=Inner(), items=["a"], anything={"k": [1]},
                    mapping={"a": 1})
    for instance in (Sample(name="n"), filled, Sample(name="", either=2.5, anything=None)):
        jsonschema.validate(instance.model_dump(mode="json"), schema)


def test_unknown_or_foreign_keywords_leave_a_property_unconstrained() -> None:
    upstream = {"type": "object", "properties": {
        "a": {"allOf": [{"type": "string"}]},
        "b": {"$ref": "https://example.invalid/schema"},
        "c": {"oneOf": [{"type": "string"}, {"type": "null"}]},
        "d": {"anyOf": [{"type": "string"}, {"not": {}}]},
        "e": {"type": ["integer", "null"]},
        "f": {"enum": [1, "x", None]},
    }}
    properties = wire_output_schema(upstream)["properties"]  # type: ignore[index]
    assert properties == {"a": {}, "b": {}, "c": {"type": ["string", "null"]}, "d": {},
                          "e": {"type": ["integer", "null"]}, "f": {"type": ["integer", "string", "null"]}}


def test_every_catalog_output_schema_keeps_null_where_the_model_allows_it(catalog: Catalog) -> None:
    """No wire schema may refuse ``null`` for a field whose model accepts it."""
    checked = 0
    for spec in catalog:
        if spec.output_model is None:
            continue
        wire = wire_output_schema(spec.output_schema)
        assert wire is not None
        for name, field in spec.output_model.model_fields.items():
            if field.is_required():
                continue
            if field.default is None:
                kinds = wire["properties"][field.alias or name].get("type")
                assert kinds is None or "null" in kinds, f"{spec.name}.{name}: {kinds}"
                checked += 1
    assert checked >= 10


async def test_tools_with_nullable_fields_are_accepted_by_the_validating_python_client(root: Path) -> None:
    """The calls the official client used to reject ("None is not of type 'string'")."""
    (root / "ok.py").write_text("def add(a, b):\n    return a + b\n")
    server = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "serve", str(root)],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    calls: list[tuple[str, dict[str, Any]]] = [
        ("py_check_syntax", {"path": "ok.py"}),
        ("coding_execute_code", {"code": "print(6 * 7)", "language": "python"}),
        ("coding_monitor_execution", {"code": "print(1)", "language": "python"}),
        ("coding_analyze_file", {"file_path": "ok.py"}),
        ("coding_analyze_project", {"path": "."}),
        ("coding_debug_code", {"source_code": "print(1 / 0)", "stdout": "", "exit_code": 1, "language": "python",
                               "stderr": "Traceback (most recent call last):\n  File \"main.py\", line 1, in <module>\n"
                                         "ZeroDivisionError: division by zero\n"}),
    ]
    async with Client(server) as client:
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)  # raises when the result breaks its schema
            assert not result.is_error, (name, result.content)
            assert result.structured_content is not None, name
    assert (root / "ok.py").read_text() == "def add(a, b):\n    return a + b\n"
