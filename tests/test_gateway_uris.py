"""Upstream resource URIs served as ``scheme://alias/rest`` and mapped back, whatever the URI."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeward.gateway.uris import expose_uri, upstream_uri

ALIASES = st.from_regex(r"[a-zA-Z0-9-]{1,12}(_[a-zA-Z0-9-]{1,6})?", fullmatch=True)
SCHEMES = st.from_regex(r"[a-zA-Z][a-zA-Z0-9+.-]{0,8}", fullmatch=True)


def test_the_documented_examples() -> None:
    assert expose_uri("every", "demo://resource/static/document/1") == "demo://every/resource/static/document/1"
    assert expose_uri("fs", "file:///home/me/notes.md") == "file://fs//home/me/notes.md"
    assert expose_uri("books", "urn:isbn:0451450523") == "urn:books/isbn:0451450523"
    assert expose_uri("every", "demo://resource/dynamic/text/{id}") == "demo://every/resource/dynamic/text/{id}"
    assert upstream_uri("file://fs//home/me/notes.md", {"fs"}) == ("fs", "file:///home/me/notes.md")


def test_what_is_not_an_upstreams_uri_stays_unclaimed() -> None:
    assert expose_uri("a", "no scheme here") is None
    assert expose_uri("a", "{scheme}://templated") is None
    assert upstream_uri("file:///home/me/codeward.toml", {"fs", "home"}) is None  # codeward's own files
    assert upstream_uri("demo://other/x", {"every"}) is None  # an alias no server has
    assert upstream_uri("demo://every", {"every"}) is None  # nothing after the alias


@settings(max_examples=80, deadline=None)
@given(ALIASES, SCHEMES, st.booleans(), st.text(max_size=40))
def test_every_uri_maps_back_to_itself(alias: str, scheme: str, slashes: bool, rest: str) -> None:
    uri = f"{scheme}:{'//' if slashes else ''}{rest}"
    exposed = expose_uri(alias, uri)
    assert exposed is not None
    assert upstream_uri(exposed, {alias, "other"}) == (alias, uri)
