"""Tool listings as lean as they can be without losing meaning: every listed token costs context.

A model reads every tool's schema on every request, so what goes on the wire is compacted:

* optional arguments (``anyOf: [X, null]`` with ``default: null``) become plain ``X``, not required
  (``anyOf: [X, Y, null]``: ``anyOf: [X, Y]``);
* what says nothing a model needs is left out of input schemas: ``additionalProperties`` (the server
  refuses an unknown argument, naming the nearest known one), an empty default (``""``, ``[]``, ``{}``,
  ``false``: the same as leaving the argument out), a length bound of :data:`GUARD_BOUND` or more (a
  guard against runaway input no sensible call reaches; the server still enforces it) and a ``type``
  that a ``const`` or an ``enum`` of strings already says;
* annotation hints are sent only where they differ from the protocol's defaults
  (``readOnlyHint=false``, ``destructiveHint=true``, ``idempotentHint=false``, ``openWorldHint=true``)
  and mean something (destructive and idempotent hints only for tools that write; every tool that
  writes states ``destructiveHint`` outright, it is the one hint approval prompts lean on);
* output schemas keep their top-level shape (property names and types, ``required``) and drop
  the nested detail. What stays is exact: a field that may be ``null`` says so
  (``"type": ["string", "null"]``), a ``$ref`` is followed to the type it names, and a field
  whose type cannot be said in one word is left unconstrained — validating clients (the
  official Python and TypeScript SDKs) reject a result that breaks its schema, so a lean schema
  may only ever be looser than the model, never stricter.
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
GUARD_BOUND = 100
"""``maxLength``/``maxItems`` at least this large guard the server; they are not sent."""
EMPTY_DEFAULTS: tuple[object, ...] = ("", [], {}, False)


def lean_input_schema(schema: Any) -> Any:
    """:func:`simplify_optionals`, then without the keywords that say nothing a model needs (recursively)."""
    return _without_noise(simplify_optionals(schema))


def _without_noise(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_without_noise(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "additionalProperties" and isinstance(value, bool):
            continue
        if key in ("maxLength", "maxItems") and isinstance(value, int) and value >= GUARD_BOUND:
            continue
        if key == "default" and any(value == empty and type(value) is type(empty) for empty in EMPTY_DEFAULTS):
            continue
        if key == "type" and _implied_type(schema) == value:
            continue
        out[key] = value if key in ("default", "const", "enum", "examples") else _without_noise(value)
    return out


def simplify_optionals(schema: Any) -> Any:
    """``{"anyOf": [X, {"type": "null"}], "default": null}`` → ``X`` (recursively)."""
    if isinstance(schema, list):
        return [simplify_optionals(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {k: simplify_optionals(v) for k, v in schema.items()}
    alternatives = schema.get("anyOf")
    if (isinstance(alternatives, list) and len(alternatives) >= 2 and NULL in alternatives
            and "default" in schema and schema["default"] is None):
        others = [a for a in alternatives if a != NULL]
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
        return {**others[0], **rest} if len(others) == 1 else {"anyOf": others, **rest}
    return schema


def _implied_type(schema: dict[str, Any]) -> str | None:
    """The JSON type a ``const`` or an ``enum`` of strings already fixes, if any."""
    if "const" in schema:
        return _json_kind(schema["const"])
    values = schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return "string"
    return None


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
    defs: Mapping[str, Any] = schema.get("$defs") or {}
    properties = {name: _top_type(prop, defs) for name, prop in (schema.get("properties") or {}).items()}
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


def _top_type(prop: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """``{"type": ...}`` naming every JSON type the property may hold, or ``{}`` when that is unclear."""
    kinds = _kinds(prop, defs, depth=0)
    if not kinds:
        return {}
    ordered = sorted(_widened(kinds), key=lambda kind: (kind == "null", kind))
    return {"type": ordered[0] if len(ordered) == 1 else ordered}


def _kinds(prop: Any, defs: Mapping[str, Any], depth: int) -> set[str]:
    """The JSON types a schema allows; empty means "any" (unknown keywords, deep references)."""
    if not isinstance(prop, Mapping) or depth > 8:
        return set()
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1]) if ref.startswith("#/$defs/") else None
        return _kinds(target, defs, depth + 1)
    declared = prop.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list) and declared and all(isinstance(k, str) for k in declared):
        return set(declared)
    alternatives = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        found = [_kinds(alt, defs, depth + 1) for alt in alternatives]
        return set().union(*found) if all(found) else set()
    if "enum" in prop and isinstance(prop["enum"], list):
        return {_json_kind(value) for value in prop["enum"]}
    if "const" in prop:
        return {_json_kind(prop["const"])}
    return set()


def _widened(kinds: set[str]) -> set[str]:
    """An integer is also a number in JSON: a ``number`` field must accept ``3``, and says so once."""
    return kinds - {"integer"} if "number" in kinds else kinds


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
