"""The ``http_client`` primitive: the request an api tool's CONFIG describes, through the SSRF guard.

CONFIG keys (merged along the chain): ``method``, ``url`` (``{param}`` placeholders, relative
to ``base_url``), ``headers`` (``${ENV_VAR}`` expanded, ``{param}`` filled), ``query``,
``timeout``; ``${VAR}`` in headers only for variables the chain declares in ``__env__``.
Parameters not used by a placeholder go to the query string (GET, HEAD, DELETE,
OPTIONS) or to a JSON body (POST, PUT, PATCH). The destination is vetted by the same guard as
``fetch_url`` — public addresses only unless the web settings allow a host — and the request
is sent to the vetted address, so DNS cannot change in between. Redirects are returned, not
followed: a tool that wants the next hop calls it, vetted again.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urljoin

from codeward.config.web import WebSettings
from codeward.engines.net.guard import vet_url
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
CHUNK = 65_536
MAX_ERROR_BODY = 2_000


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    reason: str
    content_type: str
    body: Any
    """Parsed JSON when the response is JSON, else text."""
    truncated: bool
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "content_type": self.content_type,
                "body": self.body, "truncated": self.truncated}


def run_http(name: str, params: dict[str, Any], config: dict[str, Any], ctx: ToolContext,
             timeout: float, *, variables: tuple[str, ...] = ()) -> Result[HttpAnswer | None]:
    """Send the request; a 4xx/5xx answer is an error that shows the status and the body.

    ``${VAR}`` in headers is filled from the host's environment only for the ``variables`` the
    chain declares (``__env__``); any other reference is left empty."""
    import httpx2

    settings = ctx.services.get(WebSettings)
    method = str(config.get("method", "GET")).upper()
    used: set[str] = set()
    missing: list[str] = []

    def fill(template: str, url_part: bool) -> str:
        def one(match: re.Match[str]) -> str:
            key = match.group(1)
            if key not in params:
                missing.append(key)
                return match.group(0)
            used.add(key)
            value = str(params[key])
            return quote(value, safe="") if url_part else value

        return PLACEHOLDER.sub(one, template)

    url = fill(str(config.get("url", "")), True)
    base = config.get("base_url")
    if isinstance(base, str) and base:
        url = urljoin(base.rstrip("/") + "/", url.lstrip("/")) if not re.match(r"^[a-z]+://", url) else url
    headers = {str(k): fill(_declared_env(str(v), variables), False) for k, v in (config.get("headers") or {}).items()}
    query = {str(k): fill(str(v), False) for k, v in (config.get("query") or {}).items()}
    if missing:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{name} needs the parameter(s) {', '.join(sorted(set(missing)))}",
                           f"Pass them in params; see registry_help(name={name!r}).", data=None)
    rest = {k: v for k, v in params.items() if k not in used}
    body: Any = None
    if method in BODY_METHODS:
        body = rest
    else:
        query.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in rest.items()})
    vetted = vet_url(url, settings)
    if not vetted.ok or vetted.data is None:
        return vetted.cast(None)
    target = vetted.data
    started = time.monotonic()
    deadline = started + timeout
    try:
        parsed = httpx2.URL(url)
        pinned = parsed.copy_with(host=str(target.address))
        client = httpx2.Client(timeout=httpx2.Timeout(timeout, connect=min(timeout, settings.connect_timeout)),
                               follow_redirects=False, trust_env=False,
                               headers={"User-Agent": settings.user_agent})
        with client:
            request = client.build_request(
                method, pinned, params=query or None, json=body,
                headers={"Host": parsed.netloc.decode("ascii"), **headers},
                extensions={"sni_hostname": target.host} if target.scheme == "https" else {})
            response = client.send(request, stream=True)
            try:
                data, truncated = _read(response, settings.max_bytes, deadline, ctx)
            finally:
                response.close()
    except TimeoutError:
        return Result.fail(ErrorKind.TIMEOUT, f"{method} {url} took longer than {timeout:g} s",
                           'The server is slow; set CONFIG = {"timeout": seconds} or pass timeout.', data=None)
    except httpx2.TimeoutException as exc:
        return Result.fail(ErrorKind.TIMEOUT, f"{method} {url} did not answer in time ({type(exc).__name__})",
                           "The server is slow or unreachable; try again or raise the timeout.", data=None)
    except httpx2.ConnectError as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot connect to {target.host} port {target.port}: {exc}",
                           "Check the tool's URL; the server may be down.", data=None)
    except (httpx2.HTTPError, httpx2.StreamError, httpx2.InvalidURL) as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"{method} {url} failed: {type(exc).__name__}: {exc}",
                           "Check the tool's CONFIG (url, headers) and the server.", data=None)
    answer = _answer(response, data, truncated, time.monotonic() - started)
    if answer.status >= 400:
        shown = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
        return Result.fail(ErrorKind.UNAVAILABLE, f"{method} {url} answered {answer.status} {answer.reason}: "
                           f"{shown[:MAX_ERROR_BODY]}", "Check the parameters and the tool's CONFIG.", data=answer)
    return Result.success(answer)


def _declared_env(value: str, variables: tuple[str, ...]) -> str:
    return ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1), "") if m.group(1) in variables else "", value)


def _read(response: Any, limit: int, deadline: float, ctx: ToolContext) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes(CHUNK):
        if time.monotonic() > deadline or ctx.cancelled.is_set():
            raise TimeoutError
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def _answer(response: Any, data: bytes, truncated: bool, seconds: float) -> HttpAnswer:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    text = data.decode(response.encoding or "utf-8", "replace")
    body: Any = text
    if content_type == "application/json" or content_type.endswith("+json"):
        try:
            body = json.loads(text)
        except ValueError:
            body = text
    return HttpAnswer(response.status_code, response.reason_phrase, content_type, body, truncated, seconds)
