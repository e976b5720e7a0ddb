"""One file → one :class:`Item`: metadata parsed, problems listed, signature checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeward.engines.registry.documents import first_paragraph, read_document
from codeward.engines.registry.items import Item, Kind, Problem, Space
from codeward.engines.registry.metadata import read_tool_source
from codeward.engines.registry.signing import Header, LegacyLine, SignatureLine, split_signature
from codeward.engines.registry.validation import check_document, check_name, check_tool

MAX_INDEXED_CHARS = 200_000
RESERVED_NAMES = frozenset({"subprocess", "http_client", "python_runtime"})


def load_item(path: Path, kind: Kind, space: Space, display: str, data: bytes | None = None) -> Item:
    """Parse an item file (``data`` when already read). Unreadable files become items with a problem."""
    name = path.stem
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            problem = Problem(display, "file", f"cannot be read: {exc.strerror}", "check the file's permissions")
            return Item(kind, name, space, path, problems=(problem,))
    text = data.decode("utf-8", "replace")
    problems = check_name(name, display, RESERVED_NAMES if kind is Kind.TOOL else frozenset())
    markdown = kind is not Kind.TOOL
    header, _body = split_signature(data, markdown=markdown)
    meta: dict[str, Any] = {"signature": _signature_state(header), "signed_at": header.signed_at if header else "",
                            "signed_by": header.key_id if isinstance(header, SignatureLine) else ""}
    if kind is Kind.TOOL:
        source = read_tool_source(text)
        tool_problems, schema = check_tool(source, display)
        problems += tool_problems
        values = source.values
        deps = values.get("__dependencies__")
        meta.update({
            "tool_type": values.get("__tool_type__"),
            "executor_id": values.get("__executor_id__"),
            "config": values.get("CONFIG") if isinstance(values.get("CONFIG"), dict) else {},
            "config_schema": schema,
            "dependencies": list(deps) if isinstance(deps, list | tuple) else None,
            "env": _strings(values.get("__env__")),
            "network": _strings(values.get("__network__")),
            "has_main": source.has_main,
        })
        version, category = values.get("__version__"), values.get("__category__")
        return Item(kind, name, space, path, source.description, str(category or ""), str(version or ""),
                    text[:MAX_INDEXED_CHARS], _jsonable(meta), tuple(problems))
    document = read_document(text)
    problems += check_document(document.fields, document.error, display, directive=kind is Kind.DIRECTIVE)
    fields = document.fields
    description = fields.get("description") if isinstance(fields.get("description"), str) else ""
    meta.update({
        "title": fields.get("title") if isinstance(fields.get("title"), str) else "",
        "arguments": [a for a in fields.get("arguments", []) or [] if isinstance(a, dict)]
        if isinstance(fields.get("arguments", []), list) else [],
        "tags": [str(t) for t in fields.get("tags", [])] if isinstance(fields.get("tags"), list) else [],
    })
    return Item(kind, name, space, path, str(description or first_paragraph(document.body)),
                str(fields.get("category") or ""), str(fields.get("version") or ""),
                document.body[:MAX_INDEXED_CHARS], _jsonable(meta), tuple(problems))


def _signature_state(header: Header | None) -> str:
    """What the first line says: ``signed`` (trust and closure are checked before a run), ``legacy``
    (an unkeyed content hash, never trusted) or ``unsigned``."""
    if header is None:
        return "unsigned"
    return "legacy" if isinstance(header, LegacyLine) else "signed"


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def _jsonable(value: Any) -> Any:
    """Literal values as JSON-compatible data (tuples become lists, odd keys strings)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)
