"""fetch_url against a real HTTP server on 127.0.0.1 serving recorded pages."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from codeward.config.web import WebSettings
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from tests.fixtures.web.server import serve_fixtures

LOCAL = WebSettings(allow_hosts=("127.0.0.1",))
Call = Callable[..., ToolOutcome]


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[str, list[str]]]:
    with serve_fixtures() as served:
        yield served


@pytest.fixture
def base(site: tuple[str, list[str]], ctx: ToolContext) -> str:
    ctx.services = ctx.services.with_values(LOCAL)
    return site[0]


def test_news_article_becomes_markdown_of_the_story_only(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/article")
    assert not out.is_error, out.text
    text = out.text
    assert text.startswith("# City council approves river cleanup plan after decade of delays\n")
    assert f"URL: {base}/article" in text
    assert "voted eleven to two on Tuesday night" in text
    assert "## What the plan includes" in text
    assert "- Replanting 14 hectares of riverbank with native willow and sedge." in text
    assert "> The river has been treated as a drain for a century." in text
    assert "pending approval from the regional" in text
    for boilerplate in ("Accept all cookies", "Subscribe for $1", "Mega sale", "Refinance your mortgage",
                        "Most read", "riverwatcher77", "Join the discussion", "All rights reserved",
                        "gtag(", "ad-slot"):
        assert boilerplate not in text, boilerplate


def test_documentation_page_keeps_code_tables_and_absolute_links(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/docs/guide/retries.html")
    assert not out.is_error, out.text
    text = out.text
    assert text.startswith("# Retry policies - tidepool 2.4 documentation")
    assert "```\nfrom tidepool import Client, ExponentialBackoff\n" in text
    assert 'client = Client("https://api.example.com", retry=policy)\n```' in text
    assert "| base_delay | 0.25 | Seconds to wait before the first retry. |" in text
    assert f"[Idempotency keys]({base}/docs/guide/idempotency.html)" in text
    assert "`Retry-After`" in text
    for chrome in ("Search docs", "Changelog", "View page source", "Built with", "SphinxRtdTheme"):
        assert chrome not in text, chrome


def test_long_page_comes_in_parts_that_join_to_the_whole(call: Call, base: str) -> None:
    whole = call("fetch_url", url=f"{base}/long", max_length=90_000)
    assert not whole.is_error and "Paragraph 120" in whole.text and "start_index" not in whole.text
    content = whole.text.split("\n\n", 1)[1]
    pieces, start = [], 0
    while True:
        part = call("fetch_url", url=f"{base}/long", max_length=6000, start_index=start)
        assert not part.is_error, part.text
        body = part.text.split("\n\n", 1)[1]
        marker = body.rfind("\n[showing characters")
        if marker == -1:
            pieces.append(body.rsplit("\n[characters", 1)[0])
            assert "the end of the content" in body
            break
        assert f"start_index={start + 6000}" in body[marker:]
        pieces.append(body[:marker])
        start += 6000
    assert len(pieces) > 2
    assert "".join(pieces) == content


def test_start_index_past_the_end_is_refused(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/plain", start_index=10_000)
    assert out.is_error and out.errors[0].kind is ErrorKind.INVALID_INPUT
    assert "past the end of the content" in out.text and "start_index below" in out.text


def test_text_types_are_returned_as_text(call: Call, base: str) -> None:
    plain = call("fetch_url", url=f"{base}/plain")
    assert not plain.is_error and "line one\nline two: naïve café" in plain.text
    data = call("fetch_url", url=f"{base}/data.json")
    assert not data.is_error and '{"name": "tidepool", "version": "2.4"}' in data.text


def test_declared_charset_is_used(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/latin1")
    assert not out.is_error and "Café crème brûlée" in out.text


def test_a_charset_named_only_in_the_page_is_used(call: Call, base: str) -> None:
    """No charset in Content-Type: the page's ``<meta charset>`` decides, as in a browser."""
    out = call("fetch_url", url=f"{base}/meta-charset")
    assert not out.is_error and "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440" in out.text, out.text


@pytest.mark.parametrize("path", ["/image.png", "/untyped"])
def test_binary_content_is_described_not_dumped(call: Call, base: str, path: str) -> None:
    out = call("fetch_url", url=f"{base}{path}")
    assert not out.is_error, out.text
    assert "[binary content:" in out.text and "2,064 bytes" in out.text
    assert "PNG" not in out.text and "IHDR" not in out.text
    if path == "/image.png":
        assert "image/png" in out.text


def test_raw_returns_the_html_source(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/article", raw=True)
    assert not out.is_error and '<div class="cookie-banner" id="cookie-consent">' in out.text


def test_redirects_within_allowed_hosts_are_followed(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/redirect?to=/redirect%3Fto%3D/article%26code%3D301")
    assert not out.is_error, out.text
    assert f"URL: {base}/article" in out.text and "(reached after 2 redirect(s))" in out.text
    assert "voted eleven to two" in out.text


def test_redirect_loop_stops_at_the_limit(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/loop")
    assert out.is_error and out.errors[0].kind is ErrorKind.UNAVAILABLE
    assert "redirected more than 5 times" in out.text


@pytest.mark.parametrize(("code", "kind"), [(404, ErrorKind.NOT_FOUND), (403, ErrorKind.PERMISSION),
                                            (500, ErrorKind.UNAVAILABLE)])
def test_http_errors_are_errors_with_the_status(call: Call, base: str, code: int, kind: ErrorKind) -> None:
    out = call("fetch_url", url=f"{base}/status/{code}")
    assert out.is_error and out.errors[0].kind is kind
    assert f"answered HTTP {code}" in out.text and f"Error {code}" in out.text


def test_size_cap_cuts_the_body_and_says_so(call: Call, base: str, ctx: ToolContext) -> None:
    ctx.services = ctx.services.with_values(LOCAL.model_copy(update={"max_bytes": 100_000}))
    out = call("fetch_url", url=f"{base}/huge", max_length=1000)
    assert not out.is_error, out.text
    assert "only that much was read" in out.text and "of 100,000" in out.text


def test_slow_server_times_out(call: Call, base: str, ctx: ToolContext) -> None:
    ctx.services = ctx.services.with_values(LOCAL.model_copy(update={"read_timeout": 0.2}))
    out = call("fetch_url", url=f"{base}/slow?seconds=1.5")
    assert out.is_error and out.errors[0].kind is ErrorKind.TIMEOUT
    assert "did not answer in time" in out.text


def test_closed_port_is_unavailable(call: Call, base: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = call("fetch_url", url=f"http://127.0.0.1:{port}/")
    assert out.is_error and out.errors[0].kind is ErrorKind.UNAVAILABLE
    assert f"cannot connect to 127.0.0.1 (127.0.0.1) port {port}" in out.text


def test_connection_goes_to_the_vetted_address_with_the_original_host(
    call: Call, site: tuple[str, list[str]], ctx: ToolContext
) -> None:
    base = site[0]
    port = base.rsplit(":", 1)[1]
    ctx.services = ctx.services.with_values(LOCAL.model_copy(update={"resolver": lambda host, _port: ["127.0.0.1"]}))
    out = call("fetch_url", url=f"http://docs.example.test:{port}/echo-host")
    assert not out.is_error, out.text
    assert f"Host header: docs.example.test:{port}" in out.text


@pytest.mark.parametrize(("url", "fragment"), [
    ("not a url", "is not an absolute URL"),
    ("ftp://example.com/file.txt", "is a ftp: URL"),
    ("file:///etc/passwd", "is a file: URL"),
    ("http://user:secret@example.com/", "embeds credentials"),
    ("http:///path-only", "has no host name"),
    ("http://exa mple.com/", "not a valid URL"),
])
def test_bad_urls_are_refused_with_a_hint(call: Call, base: str, url: str, fragment: str) -> None:
    out = call("fetch_url", url=url)
    assert out.is_error and out.errors[0].kind is ErrorKind.INVALID_INPUT
    assert fragment in out.text and "Hint:" in out.text


def test_argument_validation(call: Call, base: str) -> None:
    out = call("fetch_url", url=f"{base}/plain", max_length=5)
    assert out.is_error and "max_length" in out.text
    out = call("fetch_url", url=f"{base}/plain", start_index=-1)
    assert out.is_error and "start_index" in out.text
    out = call("fetch_url")
    assert out.is_error and "missing required argument 'url'" in out.text
