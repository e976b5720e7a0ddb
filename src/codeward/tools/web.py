"""Web tools: fetch a page as readable Markdown, and search the web (DuckDuckGo's HTML results).

Both go through the SSRF guard of :mod:`codeward.engines.net.guard`; the limits, the allowlist of
internal hosts and the search endpoint come from the ``[web]`` table (``ctx.services.get(WebSettings)``)
(:class:`codeward.config.web.WebSettings`), safe defaults when absent.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from codeward.config.web import WebSettings
from codeward.engines.net.fetch import Fetched, guarded_get
from codeward.engines.net.readable import Readable, decode_text, readable
from codeward.engines.net.search import parse_results
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

DEFAULT_PAGE_CHARS = 20_000
MAX_PAGE_CHARS = 90_000
"""Below the catalog's output cap, so a page is never cut a second time."""
HTTP_ERROR_KINDS: dict[int, ErrorKind] = {401: ErrorKind.PERMISSION, 403: ErrorKind.PERMISSION,
                                          404: ErrorKind.NOT_FOUND, 410: ErrorKind.NOT_FOUND,
                                          408: ErrorKind.TIMEOUT, 429: ErrorKind.UNAVAILABLE}


@tool(toolset="web", read_only=True, open_world=True, title="Fetch a web page",
      examples=[{"url": "https://example.com/docs/guide/retries.html", "max_length": 4000}])
def fetch_url(
    ctx: ToolContext,
    url: str,
    max_length: Annotated[int, Field(ge=100, le=MAX_PAGE_CHARS)] = DEFAULT_PAGE_CHARS,
    start_index: Annotated[int, Field(ge=0)] = 0,
    raw: Annotated[bool, Field(description="HTML source, not Markdown.")] = False,
) -> Result[str]:
    """Fetch an http(s) URL: a page's main content as Markdown. A long page comes in parts: the result
    names the start_index that continues it."""
    settings = ctx.services.get(WebSettings)
    ctx.progress(0, 2, f"fetching {url}")
    got = guarded_get(url, settings, cancelled=ctx.cancelled)
    if not got.ok or got.data is None:
        return got.cast("")
    fetched = got.data
    if fetched.status >= 400:
        return _http_error(fetched)
    ctx.progress(1, 2, "extracting readable text")
    page = Readable("", decode_text(fetched.body, fetched.charset), "text") if raw else readable(fetched)
    return _paged(page, fetched, start_index, max_length)


class SearchResult(BaseModel):
    title: str
    url: str
    snippet: str


class SearchResults(BaseModel):
    query: str
    results: list[SearchResult]

    def render(self) -> str:
        if not self.results:
            return f"No results for {self.query!r}."
        blocks = [f"{n}. {r.title}\n   {r.url}\n   {r.snippet}".rstrip() for n, r in enumerate(self.results, 1)]
        return f"Results for {self.query!r}:\n\n" + "\n\n".join(blocks)


@tool(toolset="web", read_only=True, open_world=True, output=SearchResults, title="Search the web",
      examples=[{"query": "retry with exponential backoff", "max_results": 5}])
def web_search(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=500)],
    max_results: Annotated[int, Field(ge=1, le=10)] = 5,
) -> Result[SearchResults]:
    """Search the web (DuckDuckGo): title, URL and snippet of the top results."""
    empty = SearchResults(query=query, results=[])
    if not query.strip():
        return Result.fail(ErrorKind.INVALID_INPUT, "query is blank", "Give the words to search for.", data=empty)
    settings = ctx.services.get(WebSettings)
    endpoint = settings.search_endpoint
    ctx.progress(0, 1, f"searching for {query!r}")
    got = guarded_get(endpoint, settings, params={"q": query.strip()}, cancelled=ctx.cancelled)
    if not got.ok or got.data is None:
        error = got.errors[0]
        if error.kind is ErrorKind.PERMISSION:  # the guard's refusal already names the endpoint
            return got.cast(empty)
        return Result.fail(error.kind, f"the search provider {endpoint} is unreachable: {error.message}",
                           "Check this machine's network access, or configure another search endpoint "
                           "(web settings: search_endpoint).", data=empty)
    fetched = got.data
    if fetched.status >= 400:
        return Result.fail(ErrorKind.UNAVAILABLE,
                           f"the search provider {endpoint} answered HTTP {fetched.status} {fetched.reason}",
                           "Try again later, or configure another search endpoint.", data=empty)
    page = parse_results(fetched.body, fetched.url)
    if page.challenge:
        return Result.fail(ErrorKind.UNAVAILABLE,
                           f"the search provider {endpoint} answered with a bot check instead of results",
                           "Wait a minute before searching again, or configure another search endpoint.",
                           data=empty)
    hits = [SearchResult(title=h.title, url=h.url, snippet=h.snippet) for h in page.hits[:max_results]]
    ctx.progress(1, 1, f"{len(hits)} results")
    return Result.success(SearchResults(query=query, results=hits))


def _paged(page: Readable, fetched: Fetched, start: int, length: int) -> Result[str]:
    text = page.text
    total = len(text)
    if total and start >= total:
        return Result.fail(ErrorKind.INVALID_INPUT,
                           f"start_index {start} is past the end of the content ({total:,} characters)",
                           f"Use a start_index below {total}; start_index=0 reads from the beginning.", data="")
    header = [f"# {page.title}"] if page.title else []
    header.append(f"URL: {fetched.url}")
    if fetched.redirects:
        header.append(f"(reached after {len(fetched.redirects)} redirect(s))")
    chunk = text[start : start + length] if text else "(the page has no readable text)"
    notes: list[str] = []
    end = start + len(chunk) if text else 0
    if fetched.truncated:
        notes.append(f"[the response was larger than {len(fetched.body):,} bytes; only that much was read]")
    if end < total:
        notes.append(f"[showing characters {start:,}-{end:,} of {total:,}; call fetch_url with "
                     f"start_index={end} to read on]")
    elif start:
        notes.append(f"[characters {start:,}-{end:,} of {total:,}: the end of the content]")
    return Result.success("\n".join(header) + "\n\n" + chunk, *notes)


def _http_error(fetched: Fetched) -> Result[str]:
    kind = HTTP_ERROR_KINDS.get(fetched.status, ErrorKind.UNAVAILABLE if fetched.status >= 500
                                else ErrorKind.INVALID_INPUT)
    excerpt = " ".join(readable(fetched).text.split())[:300]
    detail = f": {excerpt}" if excerpt else ""
    hints = {
        ErrorKind.NOT_FOUND: "Check the URL; the page may have moved (search for it with web_search).",
        ErrorKind.PERMISSION: "The site refuses this request; the page may need a login.",
        ErrorKind.UNAVAILABLE: "The server has a problem or is rate-limiting; try again later.",
    }
    return Result.fail(kind, f"{fetched.url} answered HTTP {fetched.status} {fetched.reason}{detail}",
                       hints.get(kind, "Check the URL."), data="")
