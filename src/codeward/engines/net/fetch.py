"""A guarded HTTP GET: every hop vetted, connected to the vetted address, bounded in time and size.

Redirects are followed here, one hop at a time, so that each new location goes through the SSRF
guard before any connection is made. The request for a hop is sent to the IP address the guard
approved, with the original ``Host`` header and TLS server name (SNI), so certificates are still
checked against the host name and a second DNS answer never comes into play.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codeward.config.web import WebSettings
from codeward.engines.net.guard import Target, vet_url
from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:
    import httpx2

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CHUNK_BYTES = 65_536


@dataclass(frozen=True)
class Fetched:
    """A response body and what is needed to interpret it."""

    url: str
    status: int
    reason: str
    content_type: str
    """Media type in lower case without parameters (``text/html``); ``""`` when not given."""
    charset: str | None
    body: bytes
    truncated: bool = False
    """The body was longer than the size cap and was cut."""
    redirects: tuple[str, ...] = field(default_factory=tuple)


def guarded_get(
    url: str,
    settings: WebSettings,
    *,
    params: Mapping[str, str] | None = None,
    cancelled: threading.Event | None = None,
) -> Result[Fetched | None]:
    """GET ``url`` (plus query ``params``) through the SSRF guard, following redirects by hand."""
    import httpx2

    try:
        current = httpx2.URL(url)
        if params:
            current = current.copy_merge_params(dict(params))
    except (httpx2.InvalidURL, TypeError):
        return vet_url(url, settings).cast(None)  # the guard explains what is wrong with it
    deadline = time.monotonic() + settings.total_timeout
    redirects: list[str] = []
    with ExitStack() as stack:
        client: httpx2.Client | None = None
        for _hop in range(settings.max_redirects + 1):
            vetted = vet_url(str(current), settings)
            if not vetted.ok or vetted.data is None:
                return vetted.cast(None)
            if client is None:  # made only once a destination passed the guard
                client = stack.enter_context(_client(settings))
            outcome = _send(client, current, vetted.data, settings, deadline, cancelled)
            if not outcome.ok:
                return outcome.cast(None)
            response, body, truncated = outcome.data
            location = response.headers.get("location")
            if response.status_code in REDIRECT_STATUSES and location:
                try:
                    current = current.join(location)
                except httpx2.InvalidURL as exc:
                    return Result.fail(ErrorKind.UNAVAILABLE,
                                       f"{current} redirects to an invalid location {location!r}: {exc}")
                redirects.append(str(current))
                continue
            return Result.success(_fetched(current, response, body, truncated, redirects))
    return Result.fail(ErrorKind.UNAVAILABLE,
                       f"{url} redirected more than {settings.max_redirects} times (last: {current})",
                       "The site may be in a redirect loop; try the final URL directly.")


def _client(settings: WebSettings) -> httpx2.Client:
    import httpx2

    timeout = httpx2.Timeout(settings.read_timeout, connect=settings.connect_timeout)
    return httpx2.Client(
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,  # a proxy from the environment would connect on our behalf, unvetted
        limits=httpx2.Limits(max_keepalive_connections=0),
        headers={"User-Agent": settings.user_agent, "Accept": "text/html,text/*;q=0.9,*/*;q=0.5"},
    )


def _send(
    client: httpx2.Client,
    url: httpx2.URL,
    target: Target,
    settings: WebSettings,
    deadline: float,
    cancelled: threading.Event | None,
) -> Result[tuple[httpx2.Response, bytes, bool]]:
    """One request to the vetted address; reads at most ``max_bytes`` of the body."""
    import httpx2

    empty: tuple[httpx2.Response, bytes, bool] = (httpx2.Response(599), b"", False)
    pinned = url.copy_with(host=str(target.address))
    headers = {"Host": url.netloc.decode("ascii")}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    request = client.build_request("GET", pinned, headers=headers, extensions=extensions)
    shown = str(url)
    try:
        response = client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            truncated = False
            for chunk in response.iter_bytes(CHUNK_BYTES):
                if cancelled is not None and cancelled.is_set():
                    return Result.fail(ErrorKind.TIMEOUT, f"fetching {shown} was cancelled", data=empty)
                if time.monotonic() > deadline:
                    return Result.fail(ErrorKind.TIMEOUT,
                                       f"fetching {shown} took longer than {settings.total_timeout:g} s",
                                       "The server is slow; try again later or fetch a smaller page.", data=empty)
                chunks.append(chunk)
                size += len(chunk)
                if size >= settings.max_bytes:
                    truncated = True
                    break
            body = b"".join(chunks)[: settings.max_bytes]
        finally:
            response.close()
    except httpx2.TimeoutException as exc:
        return Result.fail(ErrorKind.TIMEOUT, f"{shown} did not answer in time ({type(exc).__name__})",
                           "The server is slow or unreachable; try again later.", data=empty)
    except httpx2.ConnectError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE,
                           f"cannot connect to {target.host} ({target.address}) port {target.port}: {exc}",
                           "Check the URL; the server may be down or unreachable from here.", data=empty)
    except (httpx2.HTTPError, httpx2.StreamError) as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"fetching {shown} failed: {type(exc).__name__}: {exc}",
                           "Try again; if it keeps failing, the server is sending a broken response.", data=empty)
    return Result.success((response, body, truncated))


def _fetched(url: httpx2.URL, response: httpx2.Response, body: bytes, truncated: bool,
             redirects: list[str]) -> Fetched:
    header = response.headers.get("content-type", "")
    media, _, rest = header.partition(";")
    charset = None
    for part in rest.split(";"):
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip("\"' ").lower()
    return Fetched(
        url=str(url),
        status=response.status_code,
        reason=response.reason_phrase,
        content_type=media.strip().lower(),
        charset=charset,
        body=body,
        truncated=truncated,
        redirects=tuple(redirects),
    )
