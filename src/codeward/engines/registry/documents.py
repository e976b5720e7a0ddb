"""Directives and knowledge: Markdown files with an optional YAML front matter block.

::

    ---
    description: Review a change for security problems
    category: review
    version: 1.0.0
    arguments:
      - name: path
        description: The file to review
        required: true
    ---
    Review {{path}} for injection, path traversal and secrets...

Directive arguments fill ``{{name}}`` placeholders when the directive is used as an MCP prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from codeward.engines.registry.signing import split_signature

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")


@dataclass(frozen=True)
class Document:
    """A parsed Markdown item: its front matter fields and its body."""

    fields: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    error: str = ""
    """Why the front matter could not be read (``""`` when it could, or when there is none)."""
    front_matter_lines: int = 0


def read_document(text: str) -> Document:
    """Split the front matter from the body and parse it (safely: ``yaml.safe_load``)."""
    import yaml

    _signature, rest = split_signature(text.encode("utf-8", "surrogatepass"), markdown=True)
    text = rest.decode("utf-8", "surrogatepass").lstrip("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return Document(body=text)
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            block = "\n".join(lines[1:end])
            body = "\n".join(lines[end + 1 :]).lstrip("\n")
            try:
                loaded = yaml.safe_load(block) if block.strip() else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" at line {mark.line + 2}" if mark is not None else ""
                return Document(body=body, error=f"front matter is not valid YAML{where}: "
                                f"{getattr(exc, 'problem', None) or exc}", front_matter_lines=end + 1)
            if not isinstance(loaded, dict):
                return Document(body=body, error="front matter must be a mapping of 'key: value' lines",
                                front_matter_lines=end + 1)
            return Document({str(k): v for k, v in loaded.items()}, body, "", end + 1)
    return Document(body=text, error="front matter starts with '---' but has no closing '---' line")


def first_paragraph(body: str) -> str:
    """The first paragraph of Markdown text that is not a heading (a fallback description)."""
    for block in re.split(r"\n\s*\n", body.strip()):
        lines = [line for line in block.splitlines() if not line.lstrip().startswith("#")]
        text = " ".join(line.strip() for line in lines).strip()
        if text:
            return text
    heading = next((line.lstrip("# ").strip() for line in body.splitlines() if line.startswith("#")), "")
    return heading


def fill_placeholders(body: str, values: dict[str, str]) -> str:
    """Replace ``{{name}}`` with the given values; unknown placeholders stay as written."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), body)
