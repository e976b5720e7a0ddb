"""Tool listings as lean as they can be without losing meaning: every listed token costs context.

A model reads every tool's schema on every request, so what goes on the wire is compacted:

* optional arguments (``anyOf: [X, null]`` with ``default: null``) become plain ``X``, not required;
* annotation hints are sent only where they differ from the protocol's defaults
  (``readOnlyHint=false``, ``destructiveHint=true``, ``idempotentHint=false``, ``openWorldHint=true``)
  and mean something (destructive and idempotent hints only for tools that write; every tool that
  writes states ``destructiveHint`` outright, it is the one hint approval prompts lean on);
* output schemas keep their top-level shape (property names and types, ``required``) and drop
  the nested detail — results still conform, and the full shape is in ``docs/tools.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HINT_DEFAULTS: Mapping[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}
NULL = {"type": "null"}


def simplify_optionals(schema: Any) -> Any:
    """``{"anyOf": [X, {"type": "null"}], "default": null}`` → ``X`` (recursively)."""
    if isinstance(schema, list):
        return [simplify_optionals(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {k: simplify_optionals(v) for k, v in schema.items()}
    alternatives = schema.get("anyOf")
    if (isinstance(alternatives, list) and len(alternatives) == 2 and NULL in alternatives
            and "default" in schema and schema["default"] is None):
        other = next(a for a in alternatives if a != NULL)
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
        return {**other, **rest}
    return schema


def wire_hints(annotations: Mapping[str, Any] | None) -> dict[str, bool]:
    """Only the hints that differ from the defaults (a read-only tool needs no destructive hint)."""
    hints = {k: bool(v) for k, v in (annotations or {}).items() if k in HINT_DEFAULTS and v is not None}
    if hints.get("readOnlyHint"):  # the other two hints only mean something for tools that write
        hints.pop("destructiveHint", None)
        hints.pop("idempotentHint", None)
    kept = {k: v for k, v in hints.items() if HINT_DEFAULTS[k] != v}
    if "destructiveHint" in hints and not hints.get("readOnlyHint"):
        kept["destructiveHint"] = hints["destructiveHint"]  # said outright for every tool that writes
    return kept


def wire_output_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The top level of an output schema: property names and types, and what is required."""
    if not schema:
        return None
    properties = {name: _top_type(prop) for name, prop in (schema.get("properties") or {}).items()}
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


def _top_type(prop: Mapping[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        return {"type": "object"}
    if "type" in prop:
        return {"type": prop["type"]}
    kinds = [a.get("type") if "$ref" not in a else "object" for a in prop.get("anyOf", [])]
    kinds = [k for k in kinds if k]
    if len(kinds) == 1:
        return {"type": kinds[0]}
    return {"type": kinds} if kinds else {}
