"""The one model client's package: what it depends on, and how it learns a context window."""

from __future__ import annotations

import ast
from pathlib import Path

import anyio
import pytest

import codeward.engines.llm
from codeward.config.model_profile import ModelProfile
from codeward.engines.llm.window import DEFAULT_CONTEXT_TOKENS, discover_window, listed_context
from tests.fake_openai import FakeOpenAI, llama_props


def test_the_model_client_imports_nothing_else_of_codeward() -> None:
    """Beyond what a profile says (a plain pydantic model the configuration validates)."""
    folder = Path(codeward.engines.llm.__file__).parent
    for module in folder.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith("codeward") or name.startswith("codeward.engines.llm") \
                    or name == "codeward.config.model_profile", f"{module.name}: {name}"


@pytest.mark.parametrize(("listing", "expected"), [
    ({"data": [{"id": "m", "meta": {"n_ctx": 8192, "n_ctx_train": 32768}}]}, 8192),  # llama.cpp
    ({"data": [{"id": "other", "max_model_len": 4096}, {"id": "m", "max_model_len": 65536}]}, 65536),  # vLLM
    ({"data": [{"id": "x/y", "context_length": 200000}, {"id": "m", "context_length": 131072}]}, 131072),  # OpenRouter
    ({"data": [{"id": "served-name", "aliases": ["m"], "meta": {"n_ctx": 2048}}]}, 2048),
    ({"data": [{"id": "only-one", "context_length": 9000}]}, 9000),
    ({"data": [{"id": "a", "context_length": 1}, {"id": "b", "context_length": 2}]}, None),
    ({"data": [{"id": "m", "owned_by": "openai"}]}, None),
    ({"data": "nonsense"}, None),
    ([], None),
])
def test_the_context_from_a_model_listing(listing: object, expected: int | None) -> None:
    assert listed_context(listing, "m") == expected


def test_a_server_is_asked_once_and_an_unreachable_one_gets_the_default() -> None:
    async def probe(base_url: str, context_tokens: int | None = None) -> tuple[int, str]:
        profile = ModelProfile(name="p", base_url=base_url, model="m", context_tokens=context_tokens)
        window = await discover_window(profile)
        return window.tokens, window.source

    with FakeOpenAI(props=llama_props(12_288)) as fake:
        assert anyio.run(probe, fake.base_url) == (12_288, "server /props")
        assert anyio.run(probe, fake.base_url, 1000) == (1000, "profile 'p' context_tokens")
    assert fake.gets == ["/props"]
    tokens, source = anyio.run(probe, "http://127.0.0.1:9/v1")
    assert tokens == DEFAULT_CONTEXT_TOKENS and source.startswith("default (the server did not say")
