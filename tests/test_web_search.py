"""web_search against a local server that answers like html.duckduckgo.com/html/ (recorded pages)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from codeward.config.web import WebSettings
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from tests.fixtures.web.server import serve_fixtures

Call = Callable[..., ToolOutcome]
EXPECTED_TOP = [
    ("Coroutines and Tasks — Python 3.12.3 documentation", "https://docs.python.org/3/library/asyncio-task.html"),
    ("How to Use asyncio.timeout() in Python - Super Fast Python", "https://superfastpython.com/asyncio-timeout/"),
    ("python - asyncio.wait_for vs asyncio.timeout - Stack Overflow",
     "https://stackoverflow.com/questions/63583822/asyncio-wait-for-vs-timeout"),
    ("Python's asyncio: A Hands-On Walkthrough – Real Python", "https://realpython.com/async-io-python/"),
    ("PEP 789 – Preventing task-cancellation bugs by limiting yield in async generators",
     "https://peps.python.org/pep-0789/"),
]


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[str, list[str]]]:
    with serve_fixtures() as served:
        yield served


@pytest.fixture
def engine(site: tuple[str, list[str]], ctx: ToolContext) -> list[str]:
    """Point web_search at the local results server; returns the server's request log."""
    web = WebSettings(allow_hosts=("127.0.0.1",), search_endpoint=f"{site[0]}/html/")
    ctx.services = ctx.services.with_values(web)
    site[1].clear()
    return site[1]


def test_top_five_results_with_title_url_and_snippet(call: Call, engine: list[str]) -> None:
    out = call("web_search", query="python asyncio timeout")
    assert not out.is_error, out.text
    assert engine == ["/html/?q=python+asyncio+timeout"]
    assert out.structured is not None
    results = out.structured["results"]
    assert [(r["title"], r["url"]) for r in results] == EXPECTED_TOP
    assert results[0]["snippet"].startswith("This section outlines high-level asyncio APIs")
    assert results[2]["snippet"].endswith("wraps exactly one awaitable & returns its result.")
    assert "Python Hosting" not in out.text  # the ad is not a result
    assert out.text.startswith("Results for 'python asyncio timeout':\n\n1. Coroutines and Tasks")
    assert "\n   https://superfastpython.com/asyncio-timeout/\n" in out.text


def test_more_results_and_direct_links(call: Call, engine: list[str]) -> None:
    out = call("web_search", query="python asyncio timeout", max_results=10)
    assert not out.is_error and out.structured is not None
    urls = [r["url"] for r in out.structured["results"]]
    assert len(urls) == 10 and len(set(urls)) == 10
    assert urls[6] == "https://docs.python.org/3/library/asyncio-exceptions.html"  # not wrapped by DDG
    assert all("duckduckgo.com" not in u for u in urls)


def test_no_results_is_an_answer_not_an_error(call: Call, engine: list[str]) -> None:
    out = call("web_search", query="qwxzvbnmlkjhgf")
    assert not out.is_error and out.text == "No results for 'qwxzvbnmlkjhgf'."
    assert out.structured == {"query": "qwxzvbnmlkjhgf", "results": []}


def test_bot_check_page_is_a_clear_error(call: Call, engine: list[str]) -> None:
    out = call("web_search", query="bot check please")
    assert out.is_error and out.errors[0].kind is ErrorKind.UNAVAILABLE
    assert "answered with a bot check instead of results" in out.text and "Hint:" in out.text


def test_unreachable_provider_is_a_clear_error(call: Call, ctx: ToolContext) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/html/"
    ctx.services = ctx.services.with_values(WebSettings(allow_hosts=("127.0.0.1",), search_endpoint=endpoint))
    out = call("web_search", query="anything")
    assert out.is_error and out.errors[0].kind is ErrorKind.UNAVAILABLE
    assert f"the search provider {endpoint} is unreachable: cannot connect" in out.text
    assert "search_endpoint" in out.text


def test_provider_http_error_is_reported(call: Call, site: tuple[str, list[str]], ctx: ToolContext) -> None:
    web = WebSettings(allow_hosts=("127.0.0.1",), search_endpoint=f"{site[0]}/status/503")
    ctx.services = ctx.services.with_values(web)
    out = call("web_search", query="anything")
    assert out.is_error and out.errors[0].kind is ErrorKind.UNAVAILABLE
    assert "answered HTTP 503" in out.text


@pytest.mark.parametrize(("arguments", "fragment"), [
    ({"query": "   "}, "query is blank"),
    ({"query": ""}, "argument 'query'"),
    ({"query": "x" * 501}, "argument 'query'"),
    ({"query": "ok", "max_results": 0}, "argument 'max_results'"),
    ({"query": "ok", "max_results": 11}, "argument 'max_results'"),
    ({}, "missing required argument 'query'"),
])
def test_bad_arguments(call: Call, engine: list[str], arguments: dict[str, object], fragment: str) -> None:
    out = call("web_search", **arguments)
    assert out.is_error and fragment in out.text
    assert engine == []
