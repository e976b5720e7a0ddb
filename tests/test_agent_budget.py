"""The catalog the agent offers fits the model's context: ``codeward ask`` against a real HTTP
server speaking the OpenAI protocol, which states its context size the way llama.cpp does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codeward.apps.agent.budget import CatalogPlan, group_tools, plan_catalog, schema_tokens
from codeward.engines.llm.window import ContextWindow
from codeward.kernel.surface import CatalogSurface
from codeward.tools import CORE_TOOLS, default_catalog, served_catalog, toolset_choice
from codeward.tools.meta import meta_catalog
from tests.fake_openai import FakeOpenAI, llama_props, text, tool_calls

ALL_TOOLS = len(served_catalog(toolset_choice(None)))
META_TOOLS = {"registry_search", "registry_load", "registry_execute", "registry_help"}


def ask(root: Path, base_url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_MODEL": "fake-model", **(env or {})}
    return subprocess.run([sys.executable, "-m", "codeward", "ask", *args], cwd=root, env=environ,
                          capture_output=True, text=True, timeout=120)


def offered(fake: FakeOpenAI, index: int = 0) -> set[str]:
    return {t["function"]["name"] for t in fake.requests[index].get("tools", [])}


def toolsets_of(names: set[str]) -> set[str]:
    catalog = served_catalog(toolset_choice(None))
    return {spec.toolset for spec in catalog if spec.name in names}


def test_a_large_context_gets_the_full_catalog(root: Path) -> None:
    with FakeOpenAI([text("ok")], props=llama_props(131_072)) as fake:
        done = ask(root, fake.base_url, "what does src/app.py export?")
    assert done.returncode == 0, done.stderr
    assert len(offered(fake)) == ALL_TOOLS
    assert "/props" in fake.gets and "trimmed" not in done.stderr and "meta mode" not in done.stderr


def test_a_16k_context_gets_the_core_and_the_relevant_toolsets(root: Path) -> None:
    with FakeOpenAI([text("ok")], props=llama_props(16_384)) as fake:
        done = ask(root, fake.base_url, "what does src/app.py export?")
    assert done.returncode == 0, done.stderr
    names = offered(fake)
    python = {spec.name for spec in default_catalog() if spec.toolset == "python"}
    assert names == set(CORE_TOOLS) | python, "the lean core (discovery tools too) and the relevant toolset"
    assert "[codeward] trimmed to core, python:" in done.stderr
    assert "16,384-token context (server /props)" in done.stderr


def test_a_6k_context_gets_the_core_toolset_alone(root: Path) -> None:
    with FakeOpenAI([text("ok")], props=llama_props(6_144)) as fake:
        done = ask(root, fake.base_url, "what does src/app.py export?")
    assert done.returncode == 0, done.stderr
    assert offered(fake) == set(CORE_TOOLS)


def test_the_model_enables_a_toolset_and_its_tools_are_offered_from_the_next_round(root: Path) -> None:
    """The lean default in the agent: the core is offered, the model enables a toolset with ``toolsets``,
    the next request offers it (past the trimmed plan: the model asked), and the new tool runs."""
    (root / "app.py").write_text("def total(items):\n    return sum(items)\n")
    replies = [tool_calls(("toolsets", '{"action": "enable", "names": ["python"]}')),
               tool_calls(("py_check_syntax", '{"path": "app.py"}')), text("The syntax is fine.")]
    with FakeOpenAI(replies, props=llama_props(6_144)) as fake:
        done = ask(root, fake.base_url, "hello")
    assert done.returncode == 0, done.stderr
    python = {spec.name for spec in default_catalog() if spec.toolset == "python"}
    assert offered(fake, 0) == set(CORE_TOOLS), "6k: the core alone"
    assert offered(fake, 1) == set(CORE_TOOLS) | python and offered(fake, 2) == offered(fake, 1)
    assert "│ enabled python: " in done.stderr and "┌ py_check_syntax" in done.stderr
    assert "│ ERROR" not in done.stderr.split("┌ py_check_syntax", 1)[1], done.stderr


def test_a_tiny_context_gets_meta_mode_and_meta_calls_still_reach_every_tool(root: Path) -> None:
    (root / "notes.txt").write_text("The secret word is PELICAN.\n")
    call = tool_calls(("registry_execute", '{"name": "read_file", "params": {"path": "notes.txt"}}'))
    with FakeOpenAI([call, text("PELICAN")], props=llama_props(3_072)) as fake:
        done = ask(root, fake.base_url, "what is the secret word in notes.txt?")
    assert done.returncode == 0, done.stderr
    assert offered(fake) == offered(fake, 1) == META_TOOLS
    assert "meta mode" in done.stderr
    assert "PELICAN" in fake.messages(1)[-1]["content"]


def test_meta_mode_keeps_approval_for_what_it_calls(root: Path) -> None:
    write = tool_calls(("registry_execute", '{"name": "write_file", "params": {"path": "x.txt", "content": "hi"}}'))
    with FakeOpenAI([write, text("I could not.")], props=llama_props(131_072)) as fake:
        done = ask(root, fake.base_url, "write x.txt", "--meta")
    assert done.returncode == 0, done.stderr
    assert offered(fake) == META_TOOLS and "chosen with --meta" in done.stderr
    assert not (root / "x.txt").exists()
    assert "was not approved, so it did not run" in fake.messages(1)[-1]["content"]
    assert "denied write_file" in done.stderr


def test_the_context_size_from_v1_models_metadata(root: Path) -> None:
    listing = {"object": "list", "data": [{"id": "fake-model", "object": "model", "meta": {"n_ctx": 3_072}}]}
    with FakeOpenAI([text("ok")], models=listing) as fake:
        done = ask(root, fake.base_url, "hello")
    assert done.returncode == 0, done.stderr
    assert offered(fake) == META_TOOLS and "(server /v1/models)" in done.stderr


def test_a_profile_states_the_context_size(root: Path) -> None:
    with FakeOpenAI([text("ok")], props=llama_props(131_072)) as fake:
        (root / "codeward.toml").write_text(
            f'[model]\ndefault = "small"\n[model.profiles.small]\nbase_url = "{fake.base_url}"\n'
            'model = "m"\ncontext_tokens = 6144\n')
        done = ask(root, fake.base_url, "hello")
    assert done.returncode == 0, done.stderr
    assert offered(fake) == set(CORE_TOOLS)
    assert "profile 'small' context_tokens" in done.stderr
    assert fake.gets == [], "a stated size is not asked of the server"


def test_a_server_that_says_nothing_gets_the_default_window(root: Path) -> None:
    with FakeOpenAI([text("ok")]) as fake:
        done = ask(root, fake.base_url, "hello")
    assert done.returncode == 0, done.stderr
    assert len(offered(fake)) == ALL_TOOLS, "32,768 tokens by default: the whole catalog fits"
    assert set(fake.gets) == {"/props", "/v1/models"}


def test_toolsets_flag_offers_exactly_those(root: Path) -> None:
    with FakeOpenAI([text("ok")], props=llama_props(131_072)) as fake:
        done = ask(root, fake.base_url, "hello", "--toolsets", "files,web", "--toolsets", "shell")
    assert done.returncode == 0, done.stderr
    assert toolsets_of(offered(fake)) == {"files", "web", "shell"}


def test_an_unknown_toolset_is_one_clear_error_and_no_request(root: Path) -> None:
    with FakeOpenAI([text("ok")]) as fake:
        done = ask(root, fake.base_url, "hello", "--toolsets", "files,pyhton")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no toolset named 'pyhton'" in done.stderr and "python" in done.stderr
    assert fake.requests == []


def test_meta_and_toolsets_together_are_refused(root: Path) -> None:
    done = ask(root, "http://127.0.0.1:9/v1", "hello", "--meta", "--toolsets", "files")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def test_a_request_over_the_context_says_how_to_fit(root: Path) -> None:
    from tests.fake_openai import Reply

    refusal = ('{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing '
               'it", "type": "exceed_context_size_error", "n_prompt_tokens": 11668, "n_ctx": 4096}}')
    with FakeOpenAI([Reply(status=400, body=refusal)], props=llama_props(131_072)) as fake:
        done = ask(root, fake.base_url, "hello")
    assert done.returncode == 1 and "exceeds the available context size" in done.stderr
    assert "--meta or --toolsets" in done.stderr and "--ctx" in done.stderr


# -- the plan itself, for stated sizes ---------------------------------------------------------


def plan(window: int, question: str, used: int = 300, reply: int = 1024, **choice: Any) -> CatalogPlan:
    catalog = served_catalog(toolset_choice(None))
    groups = group_tools(CatalogSurface(catalog).tool_infos(),  # grouped as a lean stack groups them
                         lambda name: "core" if name in CORE_TOOLS else spec.toolset if (spec := catalog.get(name))
                         else None)
    meta = schema_tokens(CatalogSurface(meta_catalog()).tool_infos())
    return plan_catalog(groups, meta, ContextWindow(window, "stated"), used, reply, question, **choice)


@pytest.mark.parametrize(("window", "question", "form", "toolsets"), [
    (131_072, "anything", "full", None),
    (32_768, "anything", "full", None),
    (16_384, "search the web for the httpx docs", "trimmed", ("core", "web")),
    (16_384, "find every reference to parse_config", "trimmed", ("core", "python")),
    (16_384, "find where parse_config is defined", "trimmed", ("core",)),  # find_symbol, a core tool
    (16_384, "Read notes.txt and tell me the secret word.", "trimmed", ("core",)),  # not process_read
    (16_384, "read the log of the dev server", "trimmed", ("core", "git", "shell")),
    (16_384, "list the open issues", "trimmed", ("core", "beads")),
    (16_384, "fix the crash in main.c", "trimmed", ("core", "cpp")),
    (6_144, "find where parse_config is defined", "trimmed", ("core",)),
    (4_096, "find where parse_config is defined", "meta", None),
    (2_048, "anything", "meta", None),
])
def test_the_plan_for_a_stated_context(window: int, question: str, form: str,
                                       toolsets: tuple[str, ...] | None) -> None:
    chosen = plan(window, question)
    assert chosen.form == form, chosen.summary()
    if toolsets is not None:
        assert chosen.toolsets == toolsets, chosen.summary()
    assert chosen.schema_tokens + 300 + 1024 <= window or form == "meta"


def test_a_long_conversation_moves_the_plan_towards_meta() -> None:
    forms = [plan(16_384, "find where parse_config is defined", used=used).form for used in (300, 7_500, 11_500)]
    assert forms == ["trimmed", "trimmed", "meta"]
    assert plan(16_384, "x", used=300).toolsets == ("core",)
