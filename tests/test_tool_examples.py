"""Every tool declares example calls, and no description offers a value a model could copy."""

from __future__ import annotations

import re
from typing import Any

import pytest

from codeward.kernel.catalog import Catalog, Result, tool
from codeward.kernel.context import ToolContext

FIXTURE_NOTE = "tests/fixtures/contract_project"

QUOTED = re.compile(r"'([^'\n]+)'")
NAME_LIKE = re.compile(r"^[A-Za-z_][\w-]*$|[A-Za-z_]\w*\s*(\.|::|/|:|@)\s*\w")
"""A quoted word that reads as a name (``parse``, ``Base``, ``proj-a1b2``) or a qualified one
(``Class.method``, ``Foo::bar``, ``path/to/file.py:name``, ``Foo@42``)."""
LITERAL_WORDS = {
    ".", "::", "..", "...", "def", "class", "async def", "regex", "*.py", "256m", "1g",
}
"""Quoted words a description may show: syntax, keywords and units, never a name from somebody's code."""


def test_every_tool_has_an_example_that_validates(catalog: Catalog) -> None:
    missing = [spec.name for spec in catalog if not spec.examples]
    assert not missing, f"tools without an example call (add @tool(examples=[...]), see {FIXTURE_NOTE}): {missing}"
    for spec in catalog:
        for example in spec.examples:
            spec.input_model.model_validate(example)


def test_an_example_that_does_not_match_the_signature_fails_at_declaration() -> None:
    def count_lines(ctx: ToolContext, path: str, limit: int = 10) -> Result[str]:
        return Result.success(path)

    with pytest.raises(TypeError, match=r"count_lines.*limit"):
        tool(toolset="files", read_only=True, examples=[{"path": "README.md", "limit": "ten"}])(count_lines)
    with pytest.raises(TypeError, match=r"count_lines.*unknown"):
        tool(toolset="files", read_only=True, examples=[{"path": "README.md", "unknown": 1}])(count_lines)
    with pytest.raises(TypeError, match="count_lines"):
        tool(toolset="files", read_only=True, examples=[{"path": object()}])(count_lines)


def _allowed_literals(schema: dict[str, Any]) -> set[str]:
    """The values a parameter's enum allows: quoting them in a description is exact, not an example."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.get("enum", []):
                found.add(str(value))
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(schema)
    return found


def test_descriptions_quote_no_example_names_a_model_could_copy(catalog: Catalog) -> None:
    """A 0.5B model sent the description's 'Class.method' and 'path/to/file.py:name' as arguments."""
    offenders: list[str] = []
    for spec in catalog:
        allowed = LITERAL_WORDS | _allowed_literals(spec.input_schema) | {"fail", "warn"}
        texts = [spec.description] + [str(prop.get("description", ""))
                                      for prop in spec.input_schema.get("properties", {}).values()]
        for text in texts:
            for quoted in QUOTED.findall(text.replace("'s ", "’s ")):
                if quoted not in allowed and NAME_LIKE.search(quoted):
                    offenders.append(f"{spec.name}: {quoted!r} in {text[:80]!r}")
    assert not offenders, "describe the form in words (or show it in @tool examples):\n" + "\n".join(offenders)


def test_the_description_check_catches_the_values_that_were_copied() -> None:
    for sample in ("Function: 'name', 'Class.method' or 'path/to/file.py:name'.", "Symbol: 'Foo::bar@42'.",
                   "An id, e.g. 'proj-a1b2'.", "Base class ('Base' or 'pkg.module.Base')."):
        assert all(NAME_LIKE.search(quoted) for quoted in QUOTED.findall(sample)), sample
    assert not any(NAME_LIKE.search(word) for word in ("*.py", "256m", "...", "async def", "::"))


def test_examples_reach_the_generated_docs(catalog: Catalog) -> None:
    import json

    from codeward.apps.docs import tools_markdown

    markdown = tools_markdown(catalog)
    for spec in catalog:
        section = markdown.split(f"### `{spec.name}`", 1)[1].split("\n### ", 1)[0]
        for example in spec.examples:
            assert json.dumps(example, ensure_ascii=False) in section, spec.name
