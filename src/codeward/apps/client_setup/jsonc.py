"""One member set in a JSON-with-comments document, every other byte of the text kept.

VS Code's ``mcp.json`` is JSONC (comments, trailing commas) and Cursor and Claude Code accept hand
edits of the same kind. The document is read by ``json-five`` (``json5``), whose model knows where
each value sits in the text; the new member is spliced in there (the old value's text replaced, or a
member added after the last one, in the object's own indentation), so comments, key order, spacing
and trailing commas elsewhere stay as the person wrote them. The result is parsed again and compared
with the intended document before anyone writes it: a splice that would mean anything else is
refused, never written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import json5
from json5.loader import ModelLoader
from json5.model import JSONObject, JSONText, Node


class JsoncError(ValueError):
    """The text is not a JSON(C) object, or the member cannot be set where asked; nothing is written."""


@dataclass(frozen=True)
class Document:
    """A parsed JSON(C) text: the text itself, its plain value and json-five's positioned model."""

    text: str
    value: dict[str, Any]
    model: JSONText


def parse(text: str) -> Document:
    """The text as a document; :class:`JsoncError` (with line and column) when it is not a JSON(C) object."""
    try:
        model = json5.loads(text, loader=ModelLoader())
        value = json5.loads(text)
    except Exception as exc:  # json5 raises its own decode error (a ValueError) and sly's token errors
        raise JsoncError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if not isinstance(value, dict) or not isinstance(model.value, JSONObject):
        raise JsoncError(f"holds a JSON {_kind(value)}, not an object")
    return Document(text, value, model)


def has_comments(text: str) -> bool:
    """Whether the text holds a ``//`` or ``/* */`` comment outside strings (a JSON parser refuses it)."""
    return bool(re.search(r'//|/\*', _strings_blanked(text)))


def set_member(document: Document, path: Sequence[str], value: Any) -> str:
    """The document's text with ``value`` at ``path`` (objects made where missing), all else unchanged."""
    if not path:
        raise JsoncError("no member to set")
    node: JSONObject = document.model.value  # type: ignore[assignment]
    depth = 0
    while True:
        found = _member(node, path[depth])
        if found is None:
            break
        if depth == len(path) - 1:
            text = _replace(document.text, found, value)
            return _checked(document, path, value, text)
        if not isinstance(found, JSONObject):
            where = ".".join(path[: depth + 1])
            raise JsoncError(f"{where!r} is a JSON {_kind(_plain(document, path[: depth + 1]))}, expected an object")
        node = found
        depth += 1
    nested: Any = value
    for key in reversed(path[depth + 1:]):
        nested = {key: nested}
    text = _insert(document.text, node, path[depth], nested)
    return _checked(document, path, value, text)


def _member(node: JSONObject, key: str) -> Node | None:
    for pair_key, pair_value in zip(node.keys, node.values, strict=True):
        name = getattr(pair_key, "characters", None)
        if name is None:
            name = getattr(pair_key, "name", None)
        if name == key:
            return pair_value  # type: ignore[no-any-return]
    return None


def _offset(text: str, line: int, column: int) -> int:
    """The index in ``text`` of a json-five position (1-based line, 0-based column)."""
    index = 0
    for _ in range(line - 1):
        index = text.index("\n", index) + 1
    return index + column


def _span(text: str, node: Node) -> tuple[int, int]:
    """Where ``node`` starts and ends in ``text`` (json-five positions every node it parsed)."""
    assert node.lineno is not None and node.col_offset is not None
    assert node.end_lineno is not None and node.end_col_offset is not None
    return _offset(text, node.lineno, node.col_offset), _offset(text, node.end_lineno, node.end_col_offset)


def _line_indent(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    return re.match(r"[ \t]*", text[start:]).group(0)  # type: ignore[union-attr]


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _unit(text: str) -> str:
    """The file's indentation step (two spaces when it has none)."""
    found = re.search(r"^([ \t]+)\S", text, re.M)
    return found.group(1) if found else "  "


def _render(value: Any, indent: str, unit: str, newline: str) -> str:
    """``value`` as JSON in the file's indentation, its first line placed after a key at ``indent``."""
    step: int | str = len(unit) if unit.strip(" ") == "" else unit
    lines = json.dumps(value, indent=step, ensure_ascii=False).split("\n")
    return newline.join([lines[0], *(indent + line for line in lines[1:])])


def _replace(text: str, node: Node, value: Any) -> str:
    start, end = _span(text, node)
    rendered = _render(value, _line_indent(text, start), _unit(text), _newline(text))
    return text[:start] + rendered + text[end:]


def _insert(text: str, node: JSONObject, key: str, value: Any) -> str:
    """``"key": value`` as the object's last member, laid out like its other members (a comment at the
    end of the last member's line stays on that line)."""
    newline, unit = _newline(text), _unit(text)
    start, end = _span(text, node)
    close = end - 1  # the object's closing brace
    if not node.values:
        outer = _line_indent(text, start)
        indent = outer + unit
        member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, indent, unit, newline)}"
        before = text[:close].rstrip(" \t")
        lead = "" if before.endswith("\n") else newline
        return before + lead + indent + member + newline + outer + text[close:]
    first_key = _span(text, node.key_value_pairs[0].key)[0]
    last_end = _span(text, node.values[-1])[1]
    trailing = node.trailing_comma is not None
    after = text.index(",", last_end, close) + 1 if trailing else last_end
    if "\n" not in text[start:first_key]:  # members on the object's first line: add this one inline
        member = f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}"
        return text[:after] + (" " if trailing else ", ") + member + ("," if trailing else "") + text[after:]
    indent = _line_indent(text, first_key)
    member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, indent, unit, newline)}"
    line_end = text.find("\n", after)
    rest = text[after:line_end if line_end != -1 else close]
    if line_end != -1 and line_end < close and (not rest.strip() or rest.strip().startswith("//")):
        at = line_end - 1 if text[line_end - 1] == "\r" else line_end
    else:
        at = after
    comma = "" if trailing else ","
    text = text[:last_end] + comma + text[last_end:]
    at += len(comma)
    return text[:at] + newline + indent + member + ("," if trailing else "") + text[at:]


def _checked(document: Document, path: Sequence[str], value: Any, text: str) -> str:
    """``text`` when it parses to the document with ``value`` at ``path``, else :class:`JsoncError`."""
    expected = json.loads(json.dumps(document.value))
    node = expected
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    try:
        got = json5.loads(text)
    except Exception:
        got = None
    if got != expected:
        raise JsoncError("could not set the member without changing something else; add it by hand")
    return text


def _plain(document: Document, path: Sequence[str]) -> Any:
    node: Any = document.value
    for key in path:
        node = node[key]
    return node


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _strings_blanked(text: str) -> str:
    """``text`` with the insides of its double-quoted strings blanked (a ``//`` in a URL is no comment)."""
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
