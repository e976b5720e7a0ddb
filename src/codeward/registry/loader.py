"""One file → one :class:`Item`: metadata parsed, problems listed, signature checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeward.registry.documents import first_paragraph, read_document
from codeward.registry.items import Item, Kind, Problem, Space
from codeward.registry.metadata import read_tool_source, third_party_imports
from codeward.registry.signing import check_signature
from codeward.registry.validation import check_document, check_name, check_tool

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
    signature = check_signature(data, markdown=markdown)
    meta: dict[str, Any] = {"signature": signature.status.value, "signed_at": signature.signed_at}
    if kind is Kind.TOOL:
        source = read_tool_source(text)
        tool_problems, schema = check_tool(source, display)
        problems += tool_problems
        values = source.values
        local = _local_modules(path)
        deps = values.get("__dependencies__")
        meta.update({
            "tool_type": values.get("__tool_type__"),
            "executor_id": values.get("__executor_id__"),
            "config": values.get("CONFIG") if isinstance(values.get("CONFIG"), dict) else {},
            "config_schema": schema,
            "dependencies": list(deps) if isinstance(deps, list | tuple) else None,
            "imports": third_party_imports(source.imports, local),
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


def _local_modules(path: Path) -> frozenset[str]:
    """Modules a tool can import from beside it or from the shared ``lib`` folders."""
    names: set[str] = set()
    folders = [path.parent, *[p / "lib" for p in path.parents if p.name == "tools"]]
    for folder in folders:
        try:
            for entry in folder.iterdir():
                if entry.suffix == ".py" or (entry.is_dir() and (entry / "__init__.py").exists()):
                    names.add(entry.stem)
        except OSError:
            continue
    return frozenset(names)


def _jsonable(value: Any) -> Any:
    """Literal values as JSON-compatible data (tuples become lists, odd keys strings)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)
