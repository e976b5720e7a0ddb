"""The upstreams' resources, resource templates, prompts and completions, served as one.

Everything passes as the upstream sent it, with one change: names are namespaced like tool
names — a prompt is ``alias__prompt`` (the same rule as tools, :mod:`codeward.gateway.names`),
a resource URI is ``scheme://alias/rest`` (:mod:`codeward.gateway.uris`) — and mapped back on
the way in. A read, a prompt or a completion runs as the client's request like a tool call: what
the upstream asks or reports meanwhile goes to that client, in its era. Listings are asked of
every upstream at once, each under its own start-up ``timeout``; one that fails or is slow is
left out of that listing (and logged), never holding up the others. A server's table can keep its
resources or prompts out (``resources = false``, ``prompts = false``).

Subscriptions are counted per URI: the upstream is subscribed while at least one client (a
handshake-era session, or a 2026-07-28 listen stream) watches the URI, and its updates go to
those that do.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from codeward.gateway.errors import UpstreamError, UpstreamRpcError
from codeward.gateway.names import ToolRef, assign_names
from codeward.gateway.pending import RoundExpired
from codeward.gateway.relay import Relay
from codeward.gateway.upstream import Upstream
from codeward.gateway.uris import expose_uri, upstream_uri
from codeward.kernel.client_link import ClientLink

logger = logging.getLogger("codeward.gateway")

T = TypeVar("T")
MAX_PAGES = 100

Relayed = Callable[[ClientLink | None, str, tuple[str, Callable[[], str]], Callable[[Relay | None], Awaitable[Any]]],
                   Awaitable[Any]]
"""The gateway's way to run one upstream request for a client (:meth:`Gateway.relayed`)."""


class UpstreamContent:
    """Resources, templates, prompts and completions of the gateway's upstreams (see the module docstring)."""

    def __init__(self, upstreams: Callable[[], Mapping[str, Upstream]], relayed: Relayed, *,
                 name_limit: int = 128) -> None:
        self._upstreams = upstreams
        self._relayed = relayed
        self._name_limit = name_limit
        self._prompts: dict[str, ToolRef] = {}
        self._listed: dict[str, set[str]] = {}
        """An upstream's own resource URI → the aliases that listed it (for reads by that URI)."""
        self._watchers: dict[str, int] = {}

    # -- which upstreams ---------------------------------------------------------------------

    def _serving(self, feature: str) -> dict[str, Upstream]:
        chosen: dict[str, Upstream] = {}
        for alias, upstream in self._upstreams().items():
            if feature in ("resources", "prompts") and not getattr(upstream.config, feature):
                continue
            if upstream.offers(feature):
                chosen[alias] = upstream
        return chosen

    def offers(self, feature: str) -> bool:
        """Whether any upstream serves ``feature`` now (``resources``, ``prompts``, ``completions``, ``logging``)."""
        return bool(self._serving(feature))

    # -- resources ---------------------------------------------------------------------------

    async def list_resources(self) -> list[dict[str, Any]]:
        pages = await self._gather("resources", "resources/list", "resources")
        listed: dict[str, set[str]] = {}
        out: list[dict[str, Any]] = []
        for alias, resource in pages:
            uri = resource.get("uri")
            exposed = expose_uri(alias, uri) if isinstance(uri, str) else None
            if exposed is None:
                logger.debug("gateway: resource %r of server %r has no scheme; not served", uri, alias)
                continue
            listed.setdefault(str(uri), set()).add(alias)
            out.append({**resource, "uri": exposed})
        self._listed = listed
        return out

    async def list_templates(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for alias, template in await self._gather("resources", "resources/templates/list", "resourceTemplates"):
            pattern = template.get("uriTemplate")
            exposed = expose_uri(alias, pattern) if isinstance(pattern, str) else None
            if exposed is None:
                logger.debug("gateway: template %r of server %r does not start with a scheme; not served", pattern,
                             alias)
                continue
            out.append({**template, "uriTemplate": exposed})
        return out

    def owns_uri(self, uri: str) -> bool:
        return self._route_uri(uri) is not None

    def _route_uri(self, uri: str) -> tuple[str, str] | None:
        """(alias, the upstream's URI) for a URI a client sent: a mapped one, or one exactly one upstream listed."""
        serving = self._serving("resources")
        routed = upstream_uri(uri, serving)
        if routed is not None:
            return routed
        owners = [alias for alias in self._listed.get(uri, ()) if alias in serving]
        return (owners[0], uri) if len(owners) == 1 else None

    async def read_resource(self, uri: str, link: ClientLink | None) -> dict[str, Any]:
        routed = self._route_uri(uri)
        if routed is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {uri!r}; list resources to see them")
        alias, original = routed
        upstream = self._upstreams()[alias]
        result: dict[str, Any] = await self._run(link, f"resource {uri}", ("resources/read", f"{alias}\0{original}"),
                                                 lambda relay: upstream.request("resources/read", {"uri": original},
                                                                                relay=relay, idempotent=True,
                                                                                what=f"resource {original!r}"))
        contents = result.get("contents")
        if isinstance(contents, list):
            result = {**result, "contents": [_exposed_content(alias, item) for item in contents]}
        return result

    async def watch(self, uri: str) -> bool:
        """A client watches ``uri``: the upstream is subscribed on the first; False when it is not an upstream's."""
        routed = self._route_uri(uri)
        if routed is None:
            return False
        alias, original = routed
        self._watchers[uri] = self._watchers.get(uri, 0) + 1
        if self._watchers[uri] == 1:
            try:
                await self._upstreams()[alias].request("resources/subscribe", {"uri": original}, idempotent=True,
                                                        timeout=self._upstreams()[alias].config.timeout)
            except UpstreamError as error:
                self._watchers[uri] -= 1
                raise as_rpc_error(error) from error
        return True

    async def unwatch(self, uri: str) -> bool:
        """A client stopped watching ``uri``: the upstream is unsubscribed after the last."""
        routed = self._route_uri(uri)
        if routed is None or uri not in self._watchers:
            return routed is not None
        self._watchers[uri] -= 1
        if self._watchers[uri] <= 0:
            del self._watchers[uri]
            alias, original = routed
            upstream = self._upstreams().get(alias)
            if upstream is not None:
                try:
                    await upstream.request("resources/unsubscribe", {"uri": original}, idempotent=True,
                                           timeout=upstream.config.timeout)
                except UpstreamError as error:
                    logger.info("gateway: unsubscribing %s from server %r failed: %s", original, alias, error)
        return True

    # -- prompts -----------------------------------------------------------------------------

    async def list_prompts(self, reserved: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        pages = await self._gather("prompts", "prompts/list", "prompts")
        refs = [ToolRef(alias, str(prompt.get("name", ""))) for alias, prompt in pages]
        names = assign_names(refs, limit=self._name_limit, reserved=reserved)
        by_ref = {ref: name for name, ref in names.items()}
        self._prompts = names
        return [{**prompt, "name": by_ref[ToolRef(alias, str(prompt.get("name", "")))]} for alias, prompt in pages]

    def owns_prompt(self, name: str) -> bool:
        return self._route_prompt(name) is not None

    def _route_prompt(self, name: str) -> ToolRef | None:
        ref = self._prompts.get(name)
        if ref is None:  # not listed yet: the plain alias__name
            alias, sep, prompt = name.partition("__")
            ref = ToolRef(alias, prompt) if sep and prompt else None
        return ref if ref is not None and ref.alias in self._serving("prompts") else None

    async def get_prompt(self, name: str, arguments: Mapping[str, Any] | None,
                         link: ClientLink | None) -> dict[str, Any]:
        ref = self._route_prompt(name)
        if ref is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {name!r}; list prompts to see them")
        upstream = self._upstreams()[ref.alias]
        params: dict[str, Any] = {"name": ref.tool, **({"arguments": dict(arguments)} if arguments else {})}
        result: dict[str, Any] = await self._run(
            link, name, ("prompts/get", f"{ref.alias}\0{ref.tool}\0{sorted((arguments or {}).items())}"),
            lambda relay: upstream.request("prompts/get", params, relay=relay, idempotent=True,
                                           what=f"prompt {ref.tool!r}"))
        return result

    # -- completion and logging ----------------------------------------------------------------

    async def complete(self, ref: Mapping[str, Any], params: Mapping[str, Any],
                       link: ClientLink | None) -> dict[str, Any] | None:
        """A ``completion/complete`` for an upstream's prompt or template, passed on; None when it is not one."""
        kind = ref.get("type")
        if kind == "ref/prompt":
            prompt = self._route_prompt(str(ref.get("name", "")))
            if prompt is None:
                return None
            alias, upstream_ref = prompt.alias, {**ref, "name": prompt.tool}
        elif kind == "ref/resource":
            routed = upstream_uri(str(ref.get("uri", "")), self._serving("resources"))
            if routed is None:
                return None
            alias, upstream_ref = routed[0], {**ref, "uri": routed[1]}
        else:
            return None
        upstream = self._upstreams()[alias]
        if not upstream.offers("completions"):
            return {"completion": {"values": []}}
        sent = {**params, "ref": upstream_ref}
        result: dict[str, Any] = await self._run(link, "completion", ("completion/complete", f"{alias}\0{sent}"),
                                                 lambda relay: upstream.request("completion/complete", sent,
                                                                                relay=relay, idempotent=True))
        return result

    async def set_level(self, level: str) -> None:
        """``logging/setLevel``, passed to every upstream that logs (best effort: a refusal is logged)."""
        async def one(alias: str, upstream: Upstream) -> None:
            try:
                await upstream.request("logging/setLevel", {"level": level}, idempotent=True,
                                       timeout=upstream.config.timeout)
            except UpstreamError as error:
                logger.info("gateway: server %r did not take log level %s: %s", alias, level, error)

        async with anyio.create_task_group() as tg:
            for alias, upstream in self._serving("logging").items():
                tg.start_soon(one, alias, upstream)

    # -- plumbing ------------------------------------------------------------------------------

    async def _run(self, link: ClientLink | None, label: str, target: tuple[str, str],
                   run: Callable[[Relay | None], Awaitable[T]]) -> T:
        try:
            result: T = await self._relayed(link, label, (target[0], lambda: target[1]), run)
            return result
        except RoundExpired:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"this answer continues a request for {label} that is no longer waiting here "
                           "(it ended, was abandoned, or ran on another replica of the gateway); send it again") \
                from None
        except UpstreamError as error:
            raise as_rpc_error(error) from error

    async def _gather(self, feature: str, method: str, key: str) -> list[tuple[str, dict[str, Any]]]:
        """Every page of ``method`` from every upstream serving ``feature``, at once, in configuration order."""
        serving = self._serving(feature)
        found: dict[str, list[dict[str, Any]]] = {}

        async def one(alias: str, upstream: Upstream) -> None:
            items: list[dict[str, Any]] = []
            cursor: str | None = None
            try:
                for _ in range(MAX_PAGES):
                    page = await upstream.request(method, {"cursor": cursor} if cursor else None, idempotent=True,
                                                  timeout=upstream.config.timeout)
                    items.extend(item for item in page.get(key) or () if isinstance(item, dict))
                    cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
                    if not cursor:
                        break
            except UpstreamError as error:
                logger.warning("gateway: %s of server %r failed, so it is left out: %s", method, alias, error)
                return
            found[alias] = items

        async with anyio.create_task_group() as tg:
            for alias, upstream in serving.items():
                tg.start_soon(one, alias, upstream)
        return [(alias, item) for alias in serving for item in found.get(alias, ())]


def as_rpc_error(error: UpstreamError) -> MCPError:
    """An upstream failure as the JSON-RPC error a client gets: the upstream's own error passed as it is,
    any other failure as an internal error whose message says what happened."""
    if isinstance(error, UpstreamRpcError):
        return MCPError(code=error.code, message=error.rpc_message, data=error.data)
    return MCPError(code=types.INTERNAL_ERROR, message=error.info().render())


def _exposed_content(alias: str, item: Any) -> Any:
    if isinstance(item, dict) and isinstance(item.get("uri"), str):
        exposed = expose_uri(alias, item["uri"])
        return {**item, "uri": exposed} if exposed is not None else item
    return item
