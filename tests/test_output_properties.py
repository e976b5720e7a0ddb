"""Property checks: what a tool can return always fits the output schema clients are sent.

Two properties, checked with hypothesis:

* every value an output model can hold, serialized as the server sends it, validates against
  the model's wire schema (``tools/list``) and its full schema — so no field the model allows
  (``null``, an enum's string, a nested object) is refused by a validating client;
* every tool with an output model, called on the example project with generated arguments
  (its examples, varied: other files, other names, bad values, other programs), returns
  structured content that validates against its wire schema.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import jsonschema
import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from codeward.kernel.catalog import Catalog, ToolSpec
from codeward.kernel.context import ToolContext
from codeward.kernel.wire_schema import wire_output_schema
from codeward.kernel.workspace import Workspace
from codeward.tools import default_catalog
from tests.contract_support import FIXTURE_PROJECT, contract_world

JSON_SCALARS = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=12) | st.floats(
    allow_nan=False, allow_infinity=False, width=32)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=8), inner, max_size=3), max_leaves=6)
OUTPUT_TOOLS = sorted(spec.name for spec in default_catalog() if spec.output_model is not None)


def on_the_wire(structured: Mapping[str, Any]) -> Any:
    """Structured content as a client receives it: through the SDK's result model and JSON."""
    result = mcp_types.CallToolResult(content=[], structured_content=dict(structured))
    return json.loads(result.model_dump_json(by_alias=True))["structuredContent"]


def validators(spec: ToolSpec) -> tuple[jsonschema.Draft202012Validator, jsonschema.Draft202012Validator]:
    wire = wire_output_schema(spec.output_schema)
    assert wire is not None and spec.output_schema is not None
    return jsonschema.Draft202012Validator(wire), jsonschema.Draft202012Validator(spec.output_schema)


# -- values of an annotation ------------------------------------------------------------------


def values_of(annotation: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Python values (JSON-able once dumped) of a type as pydantic models declare them."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is Any or annotation is object:
        return JSON_VALUES
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_dicts(annotation, depth + 1)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return st.sampled_from(list(annotation))
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (Union, types.UnionType):
        return st.one_of(*(values_of(arg, depth) for arg in args))
    if annotation is type(None):
        return st.none()
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        if depth > 3:  # recursive models (a call tree) end in empty lists
            return st.just([])
        return st.lists(values_of(args[0], depth) if args else JSON_VALUES, max_size=3)
    if origin is dict or annotation is dict:
        if depth > 3:
            return st.just({})
        value = values_of(args[1], depth) if len(args) == 2 else JSON_VALUES
        return st.dictionaries(st.text(max_size=10), value, max_size=3)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(-5, 10**6)
    if annotation is float:
        return st.floats(-1e6, 1e6, allow_nan=False) | st.integers(0, 100)
    if annotation is str:
        return st.text(max_size=30)
    return JSON_VALUES


def model_dicts(model: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for a model: every required field, any subset of the optional ones."""
    required = {name: values_of(field.annotation, depth) for name, field in model.model_fields.items()
                if field.is_required()}
    optional = {name: values_of(field.annotation, depth) for name, field in model.model_fields.items()
                if not field.is_required()}
    return st.fixed_dictionaries(required, optional=optional)


def instances(model: type[BaseModel]) -> st.SearchStrategy[BaseModel]:
    """Valid instances of a model (generated values its own validation refuses are dropped)."""

    def build(values: dict[str, Any]) -> BaseModel | None:
        try:
            return model.model_validate(values)
        except ValidationError:
            return None

    return model_dicts(model).map(build).filter(lambda made: made is not None)  # type: ignore[return-value]


@pytest.mark.parametrize("name", OUTPUT_TOOLS)
def test_every_value_of_an_output_model_fits_its_schemas(name: str, catalog: Catalog) -> None:
    spec = catalog.get(name)
    assert spec is not None and spec.output_model is not None
    wire, full = validators(spec)

    @settings(max_examples=50, deadline=None, database=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                                    HealthCheck.too_slow])
    @given(instances(spec.output_model))
    def check(instance: BaseModel) -> None:
        sent = on_the_wire(instance.model_dump(mode="json"))
        refused = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in wire.iter_errors(sent)]
        refused += [f"(full) {'/'.join(map(str, e.absolute_path))}: {e.message}" for e in full.iter_errors(sent)]
        assert not refused, f"{name}: {refused[:5]}"

    check()


# -- tools called with generated arguments ----------------------------------------------------

PROJECT_PATHS = sorted(str(p.relative_to(FIXTURE_PROJECT)) for p in FIXTURE_PROJECT.rglob("*")
                       if "__pycache__" not in p.parts)
PATHS = st.sampled_from([*PROJECT_PATHS, ".", "src", "missing.py", "../outside.py", "", ".beads/issues.jsonl"])
NAMES = st.sampled_from(["Item", "Item.total_price", "Item.restock", "Perishable", "Perishable.expired", "TAX_RATE",
                         "Store", "Store.stock_value", "LOW_STOCK", "summary", "discard_expired", "format_price",
                         "ring_push", "ring", "Matrix", "geometry::Matrix::at", "Matrix::transposed", "Cart",
                         "Cart.total", "formatTotal", "total_*", "*", "Nope", "Item.nope", "1bad", "a b"]) | st.text(
    max_size=12)
PROGRAMS: list[dict[str, Any]] = [
    {"language": "python", "code": "print('hello')"},
    {"language": "python", "code": "import sys\nprint('warn', file=sys.stderr)\nsys.exit(3)"},
    {"language": "python", "code": "raise ValueError('no stock')"},
    {"language": "python", "code": "def broken(:\n    pass"},
    {"language": "python", "code": "print(input())", "stdin": "apples\n"},
    {"language": "python", "code": "print('x' * 300_000)"},
    {"language": "python", "code": "import time\ntime.sleep(5)", "timeout": 1},
    {"language": "python", "code": "x = 42", "session_id": "s"},
    {"language": "python", "code": "print(x)", "session_id": "s"},
    {"language": "bash", "code": "echo $((6 * 7)); ls /nonexistent"},
    {"language": "c", "code": "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 6 * 7); return 0; }"},
    {"language": "c", "code": "int main(void) { return missing; }"},
    {"language": "javascript", "code": "console.log([1, 2, 3].map((n) => n * 2).join(','))"},
]
ARGUMENT_POOLS: dict[str, st.SearchStrategy[Any]] = {
    "name": NAMES, "class_name": NAMES, "target": NAMES, "bead_id": st.sampled_from(["inv-3g9k", "inv-none", ""]),
    "query": st.text(min_size=1, max_size=30), "kind": st.sampled_from(["", "class", "function", "method", "x"]),
    "output_path": st.sampled_from(["reports/out.md", "reports/out.html", "../escape.md", ".git/config"]),
    "image": st.none() | st.sampled_from(["python:3.11-slim", "absent:latest"]),
}
HISTORY: dict[str, tuple[str, dict[str, Any]]] = {
    "undo": ("write_file", {"path": "notes/undo-me.txt", "content": "a change for undo to take back\n",
                            "overwrite": True}),
    "git_commit": ("write_file", {"path": "src/inventory/store.py", "content": "LOW_STOCK = 2\n", "overwrite": True}),
}
"""Tools whose answer is about earlier calls: the call each generated one follows (else every undo is refused,
and a commit has nothing to take)."""
SLOW_TOOLS = {"coding_check_quality_gates": 2, "code_list_languages": 1, "coding_analyze_project": 3,
              "coding_analyze_file": 4, "coding_monitor_execution": 5, "coding_run_in_docker": 5}


def argument_values(name: str, field: FieldInfo) -> st.SearchStrategy[Any]:
    if name in ARGUMENT_POOLS:
        return ARGUMENT_POOLS[name]
    if name.endswith("path"):
        return PATHS
    annotation = field.annotation
    if annotation is int or (get_origin(annotation) in (Union, types.UnionType) and int in get_args(annotation)):
        bounds = [m for m in field.metadata if hasattr(m, "ge") or hasattr(m, "le")]
        low = next((m.ge for m in bounds if hasattr(m, "ge")), -3)
        high = next((m.le for m in bounds if hasattr(m, "le")), 200)
        return st.integers(low, min(high, low + 200))
    return values_of(annotation)


def arguments(spec: ToolSpec) -> st.SearchStrategy[dict[str, Any]]:
    """An example, with any of its arguments replaced and any optional ones added."""
    fields = spec.input_model.model_fields
    if {"language", "code"} <= set(fields):
        base = st.sampled_from([*spec.examples, *PROGRAMS]) if "source_code" not in fields else st.sampled_from(
            list(spec.examples))
    else:
        base = st.sampled_from(list(spec.examples))

    def vary(example: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        code_like = {"language", "code", "source_code", "stdin", "stdout", "stderr"}
        changed = {key: st.just(value) | argument_values(key, fields[key]) if key not in code_like else st.just(value)
                   for key, value in example.items() if key in fields}
        extra = {key: argument_values(key, field) for key, field in fields.items()
                 if key not in example and key not in code_like}
        return st.fixed_dictionaries(changed, optional=extra)

    return base.flatmap(vary)


@pytest.mark.parametrize("name", OUTPUT_TOOLS)
def test_results_for_generated_arguments_fit_the_wire_schema(name: str, catalog: Catalog, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from codeward.config import load_config
    from codeward.serving.stack import services_for

    spec = catalog.get(name)
    assert spec is not None and spec.examples
    wire, _full = validators(spec)
    seen = {"structured": 0, "errors": 0}
    with contract_world(tmp_path) as world:
        for key in ("DOCKER_HOST", "CODEWARD_USER_AI_DIR"):
            monkeypatch.setenv(key, world.env[key])
        config = load_config(str(world.project / "codeward.toml"))
        ctx = ToolContext(Workspace.create([world.project]), settings=config.settings, services=services_for(config))

        @settings(max_examples=SLOW_TOOLS.get(name, 25), deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
        @given(arguments(spec))
        def check(generated: dict[str, Any]) -> None:
            if name in HISTORY:
                before, before_arguments = HISTORY[name]
                prepared = catalog.call(before, before_arguments, ctx)
                assert not prepared.is_error, prepared.text
            called = ctx.child(call=replace(ctx.call, approved=True)) if spec.ask_always else ctx  # a person said yes
            outcome = catalog.call(name, world.arguments(catalog, name, generated), called)
            if outcome.structured is None or outcome.is_error:  # a failure's shape is sent as text, not structured
                assert outcome.is_error, f"{name} answered without structured content: {outcome.text[:300]}"
                seen["errors"] += 1
                return
            seen["structured"] += 1
            sent = on_the_wire(outcome.structured)
            refused = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in wire.iter_errors(sent)]
            assert not refused, f"{name}({generated}): {refused[:5]}"

        check()
    assert seen["structured"] >= 1, f"no call of {name} returned a result to check ({seen['errors']} errors)"
