"""Reading DuckDuckGo's HTML results page (html.duckduckgo.com/html/) with a real HTML parser.

Each organic result is a ``div.result`` holding an ``a.result__a`` (title and link), an
``a.result__url`` (the shown address) and an ``a.result__snippet``; ads carry ``result--ad``
and are skipped. Links usually point at DuckDuckGo's redirector ``//duckduckgo.com/l/?uddg=<url>``,
which :func:`unwrap_link` turns back into the destination.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class ResultsPage:
    """What the page held: results, and whether it was a bot check instead."""

    hits: tuple[SearchHit, ...]
    challenge: bool = False
    """DuckDuckGo answered with its "are you a human" page rather than results."""


def parse_results(html: bytes | str, page_url: str) -> ResultsPage:
    """The organic results of a results page, in page order (ads left out)."""
    import lxml.html  # type: ignore[import-untyped]
    from lxml.etree import ParserError  # type: ignore[import-untyped]

    try:
        root = lxml.html.document_fromstring(html)
    except (ParserError, ValueError):
        return ResultsPage(())
    hits: list[SearchHit] = []
    for block in root.cssselect("div.result"):
        if "result--ad" in (block.get("class") or "").split():
            continue
        anchors = block.cssselect("a.result__a")
        if not anchors:
            continue
        anchor = anchors[0]
        url = unwrap_link(anchor.get("href") or "", page_url)
        if not url.startswith(("http://", "https://")):
            continue
        snippets = block.cssselect(".result__snippet")
        hits.append(SearchHit(
            title=_text(anchor),
            url=url,
            snippet=_text(snippets[0]) if snippets else "",
        ))
    challenge = not hits and bool(root.cssselect("#challenge-form, .anomaly-modal__modal"))
    return ResultsPage(tuple(hits), challenge)


def unwrap_link(href: str, page_url: str) -> str:
    """The destination of a result link: ``//duckduckgo.com/l/?uddg=...`` → the ``uddg`` URL."""
    absolute = urljoin(page_url, href.strip())
    parts = urlsplit(absolute)
    if parts.path.rstrip("/") == "/l":
        target = parse_qs(parts.query).get("uddg")
        if target:
            return target[0]
    return absolute


def _text(element: Any) -> str:
    return _SPACES.sub(" ", str(element.text_content())).strip()
