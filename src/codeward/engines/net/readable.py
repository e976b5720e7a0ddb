"""Turn a fetched body into text a model can read: HTML to Markdown, text as text, binary described.

HTML goes through readability (the main-content extraction of Firefox's reader view, as
``readability-lxml``) to drop navigation, ads and comment threads, then through ``markdownify``
so headings, lists, links, tables and code blocks keep their shape. Pages where extraction
finds too little (link hubs, single-widget pages) fall back to the whole body, cleaned.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

from codeward.engines.net.fetch import Fetched

MIN_MAIN_TEXT_CHARS = 200
"""Less main text than this and readability probably picked the wrong block: use the body."""
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({
    "application/json", "application/xml", "application/javascript", "application/x-javascript",
    "application/ecmascript", "application/x-yaml", "application/yaml", "application/toml",
    "application/x-sh", "application/sql", "application/graphql", "application/ld+json",
})
_BLANK_RUNS = re.compile(r"\n{3,}")
_LANGUAGE_CLASS = re.compile(r"(?:language|lang|highlight|brush)-([\w+#-]+)")


@dataclass(frozen=True)
class Readable:
    """The text form of a response: a title (may be empty), the text, and what kind it was."""

    title: str
    text: str
    kind: str
    """``"html"``, ``"text"`` or ``"binary"``."""


def readable(fetched: Fetched) -> Readable:
    """Dispatch on the media type (sniffing the body when the server did not say)."""
    media = fetched.content_type or _sniff(fetched.body)
    if media in HTML_TYPES:
        return html_to_markdown(fetched.body, fetched.url, fetched.charset)
    if _is_text(media):
        return Readable("", decode_text(fetched.body, fetched.charset), "text")
    return Readable("", describe_binary(fetched, media), "binary")


def html_to_markdown(html: bytes | str, url: str, charset: str | None = None) -> Readable:
    """Main content of an HTML page as Markdown, with absolute links."""
    from lxml.etree import ParserError  # type: ignore[import-untyped]
    from readability import Document  # type: ignore[import-untyped]
    from readability.readability import Unparseable  # type: ignore[import-untyped]

    source = decode_text(html, charset or _declared_charset(html)) if isinstance(html, bytes) else html
    if not source.strip():
        return Readable("", "", "html")
    try:
        document = Document(source, url=url)
        title = (document.short_title() or "").strip()
        main = to_markdown(document.summary(html_partial=True))
    except (Unparseable, ParserError, ValueError):
        title, main = "", ""
    if len(main) < MIN_MAIN_TEXT_CHARS:
        whole = to_markdown(_cleaned_body(source, url))
        if len(whole) > len(main):
            main = whole
    return Readable(title, main, "html")


def to_markdown(html: str) -> str:
    """HTML fragment to Markdown: ATX headings, ``-`` bullets, fenced code with its language."""
    from markdownify import markdownify

    text: str = markdownify(
        html,
        heading_style="ATX",
        bullets="-",
        strip=["img", "script", "style", "noscript", "iframe", "svg", "form", "button"],
        code_language_callback=_code_language,
        escape_underscores=False,
        escape_asterisks=False,
    )
    lines = [line.rstrip() for line in text.splitlines()]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def decode_text(body: bytes, charset: str | None) -> str:
    """Bytes to text with the declared charset, else UTF-8; undecodable bytes become U+FFFD."""
    for encoding in (charset, "utf-8"):
        if not encoding:
            continue
        try:
            return body.decode(encoding, errors="replace")
        except LookupError:
            continue
    return body.decode("utf-8", errors="replace")


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([-\w:.]+)""", re.IGNORECASE)


def _declared_charset(body: bytes) -> str | None:
    """The charset a page names in its first kilobytes (``<meta charset>``, http-equiv), as browsers read it."""
    if body.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    found = _META_CHARSET.search(body[:4096])
    return found.group(1).decode("ascii") if found else None


def describe_binary(fetched: Fetched, media: str) -> str:
    size = f"{len(fetched.body):,} bytes" + (" or more" if fetched.truncated else "")
    return (
        f"[binary content: {media or 'unknown type'}, {size}; not shown. fetch_url returns text, "
        f"HTML and other text formats only.]"
    )


def _is_text(media: str) -> bool:
    return media.startswith("text/") or media in TEXT_TYPES or media.endswith(("+json", "+xml"))


def _sniff(body: bytes) -> str:
    head = body[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "text/html"
    if b"\x00" in body[:8192]:
        return "application/octet-stream"
    try:
        body[:8192].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 8188:  # not just a character cut at the sample's end
            return "application/octet-stream"
    return "text/plain"


def _cleaned_body(source: bytes | str, url: str) -> str:
    import lxml.html  # type: ignore[import-untyped]
    from lxml.etree import ParserError, tostring

    try:
        root = lxml.html.document_fromstring(source)
    except (ParserError, ValueError):
        return ""
    root.make_links_absolute(url, handle_failures="ignore")
    for bad in root.xpath("//script|//style|//noscript|//template|//nav|//header|//footer|//aside"):
        bad.drop_tree()
    body = root.find("body")
    result: str = tostring(body if body is not None else root, encoding="unicode", method="html")
    return result


def _code_language(element: Any) -> str | None:
    for node in (element, *element.find_all("code")):
        for css_class in node.get("class") or ():
            found = _LANGUAGE_CLASS.match(css_class)
            if found:
                return found.group(1)
    return None
