"""The SSRF battery: every way a URL could reach an internal address is refused, before connecting.

Refused targets are never contacted: the guard answers from the URL and name resolution alone.
The only server involved runs on 127.0.0.1 and must see no request for a refused URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from codeward.config.web import WebSettings
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from tests.fixtures.web.server import serve_fixtures

Call = Callable[..., ToolOutcome]
FAKE_DNS = {
    "intranet.corp.test": ["10.20.30.40"],
    "loopy.example.test": ["127.0.0.1"],
    "metadata.google.internal": ["169.254.169.254"],
    "mixed.example.test": ["93.184.216.34", "192.168.0.10"],
    "v6loop.example.test": ["::1"],
}


def fake_dns(host: str, port: int) -> list[str]:
    """Names that resolve to internal addresses, as a split-horizon or hostile DNS would answer."""
    return FAKE_DNS[host]


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[str, list[str]]]:
    with serve_fixtures() as served:
        yield served


@pytest.fixture
def port(site: tuple[str, list[str]]) -> int:
    site[1].clear()
    return int(site[0].rsplit(":", 1)[1])


def assert_refused(out: ToolOutcome, *fragments: str) -> None:
    assert out.is_error, out.text
    assert out.errors[0].kind is ErrorKind.PERMISSION, out.text
    for fragment in fragments:
        assert fragment in out.text, out.text
    assert "allow_hosts" in out.text  # the hint names the way out for intended internal hosts


@pytest.mark.parametrize(("host", "reason"), [
    ("127.0.0.1", "127.0.0.1 is a loopback address"),
    ("127.8.9.10", "127.8.9.10 is a loopback address"),
    ("[::1]", "::1 is a loopback address"),
    ("10.0.0.1", "10.0.0.1 is a private address"),
    ("10.255.255.254", "is a private address"),
    ("172.16.0.1", "172.16.0.1 is a private address"),
    ("172.31.255.1", "is a private address"),
    ("192.168.1.1", "192.168.1.1 is a private address"),
    ("169.254.169.254", "169.254.169.254 is a cloud metadata address"),
    ("169.254.10.10", "is a link-local address"),
    ("[fd00:ec2::254]", "fd00:ec2::254 is a cloud metadata address"),
    ("[fe80::1]", "is a link-local address"),
    ("[fc00::5]", "is a private address"),
    ("100.64.0.7", "is a carrier-grade NAT (shared) address"),
    ("0.0.0.0", "is an unspecified address"),
    ("[::]", "is an unspecified address"),
    ("224.0.0.251", "is a multicast address"),
    ("240.0.0.1", "is a reserved address"),
    ("[::ffff:7f00:1]", "loopback (IPv4 127.0.0.1 inside IPv6)"),
    ("[64:ff9b::a00:1]", "private (IPv4 10.0.0.1 inside IPv6)"),
])
def test_internal_addresses_are_refused(call: Call, port: int, host: str, reason: str) -> None:
    assert_refused(call("fetch_url", url=f"http://{host}:{port}/article"), reason)


@pytest.mark.parametrize(("host", "meaning"), [
    ("2130706433", "127.0.0.1"),  # decimal
    ("0x7f000001", "127.0.0.1"),  # hex
    ("017700000001", "127.0.0.1"),  # octal
    ("0x7f.0.0.1", "127.0.0.1"),  # mixed
    ("127.1", "127.0.0.1"),  # shortened
    ("0177.0.0.1", "127.0.0.1"),  # octal first byte
    ("3232235777", "192.168.1.1"),
    ("2852039166", "169.254.169.254"),
])
def test_numeric_ip_notations_are_refused(call: Call, site: tuple[str, list[str]], port: int,
                                          host: str, meaning: str) -> None:
    assert_refused(call("fetch_url", url=f"http://{host}:{port}/article"), f"that means {meaning}")
    assert site[1] == []


def test_names_resolving_to_loopback_are_refused(call: Call, site: tuple[str, list[str]], port: int,
                                                 ctx: ToolContext) -> None:
    assert_refused(call("fetch_url", url=f"http://localhost:{port}/article"),
                   "localhost resolves to 127.0.0.1, which is a loopback address")
    assert_refused(call("fetch_url", url=f"http://LocalHost.:{port}/article"), "loopback")
    ctx.services = ctx.services.with_values(WebSettings(resolver=fake_dns))
    assert_refused(call("fetch_url", url=f"http://loopy.example.test:{port}/article"),
                   "loopy.example.test resolves to 127.0.0.1, which is a loopback address")
    assert_refused(call("fetch_url", url=f"http://v6loop.example.test:{port}/"), "::1, which is a loopback")
    assert site[1] == []


@pytest.mark.parametrize(("host", "reason"), [
    ("intranet.corp.test", "resolves to 10.20.30.40, which is a private address"),
    ("metadata.google.internal", "resolves to 169.254.169.254, which is a cloud metadata address"),
    ("mixed.example.test", "resolves to 192.168.0.10, which is a private address"),
])
def test_names_resolving_to_internal_addresses_are_refused(call: Call, ctx: ToolContext,
                                                           host: str, reason: str) -> None:
    ctx.services = ctx.services.with_values(WebSettings(resolver=fake_dns))
    assert_refused(call("fetch_url", url=f"http://{host}/computeMetadata/v1/"), reason)


@pytest.mark.parametrize(("target", "reason"), [
    ("http://10.0.0.1/admin", "10.0.0.1 is a private address"),
    ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "cloud metadata"),
    ("http://[::1]:{port}/article", "::1 is a loopback address"),
    ("http://2130706433:{port}/article", "that means 127.0.0.1"),
    ("http://192.168.0.1/", "192.168.0.1 is a private address"),
])
def test_redirect_to_an_internal_address_is_refused(call: Call, site: tuple[str, list[str]], port: int,
                                                    ctx: ToolContext, target: str, reason: str) -> None:
    ctx.services = ctx.services.with_values(WebSettings(allow_hosts=("127.0.0.1",)))
    location = target.format(port=port)
    out = call("fetch_url", url=f"http://127.0.0.1:{port}/redirect?to={location}")
    assert_refused(out, reason)
    assert site[1] == [f"/redirect?to={location}"]  # the allowed hop was made; the refused one never


def test_allowlist_lets_named_internal_hosts_through(call: Call, site: tuple[str, list[str]], port: int,
                                                     ctx: ToolContext) -> None:
    ctx.services = ctx.services.with_values(WebSettings(allow_hosts=("localhost",)))
    out = call("fetch_url", url=f"http://localhost:{port}/plain")
    assert not out.is_error and "line one" in out.text
    assert_refused(call("fetch_url", url=f"http://127.0.0.1:{port}/plain"), "loopback")
    ctx.services = ctx.services.with_values(WebSettings(allow_hosts=("127.0.0.0/8",)))
    out = call("fetch_url", url=f"http://127.0.0.1:{port}/plain")
    assert not out.is_error and "line one" in out.text
    assert_refused(call("fetch_url", url=f"http://2130706433:{port}/plain"), "that means 127.0.0.1")
    assert site[1] == ["/plain", "/plain"]


def test_search_endpoint_is_guarded_too(call: Call, site: tuple[str, list[str]], port: int,
                                        ctx: ToolContext) -> None:
    ctx.services = ctx.services.with_values(WebSettings(search_endpoint=f"http://127.0.0.1:{port}/html/"))
    out = call("web_search", query="python asyncio timeout")
    assert_refused(out, "127.0.0.1 is a loopback address")
    assert site[1] == []
