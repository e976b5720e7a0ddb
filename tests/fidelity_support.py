"""The world of the gateway fidelity tests: six upstreams, the same conversation held with each
directly and through ``codeward gateway``, and the documented differences that may separate them.

The upstreams are server-everything (npm, 2026.8.31) and the probe server (``tests/gateway_probe.py``),
each over stdio, streamable HTTP and SSE: aliases ``every-stdio``... ``probe-sse``. server-everything
lists 13 tools to a client that declares nothing, and 4 more by the client's capabilities —
``get-roots-list`` (roots), ``trigger-elicitation-request`` (elicitation), ``trigger-url-elicitation``
(URL elicitation), ``trigger-sampling-request`` (sampling) — so the 17 seen through the gateway say
that it declared them all. A *conversation*
(:func:`converse`) is the list of features one client asks of one upstream — its tool listing,
calls returning every kind of result, progress, log lines, the questions the upstream asks back,
resources, templates, prompts, completions — each answer kept as the JSON the server sent.
:func:`through_gateway` undoes what ``docs/gateway.md`` says the gateway changes, and nothing else:
the ``alias__`` prefix of tool and prompt names, the ``scheme://alias/`` of resource URIs, the
``alias__`` of an upstream's logger; in the 2026-07-28 era, what that protocol version says of
any result (the SDK's own per-version shape: fields the version does not know dropped, the
fields it requires added, the ``serverInfo`` stamp in ``_meta``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError
from mcp_types import methods
from pydantic import TypeAdapter, ValidationError

from codeward.gateway.uris import upstream_uri
from tests.conftest import node_tool
from tests.process_support import background, free_port

EVERYTHING = node_tool("mcp-server-everything")
PROBE = str(Path(__file__).resolve().parent / "gateway_probe.py")
KINDS = ("every", "probe")
TRANSPORTS = ("stdio", "http", "sse")
ALIASES = tuple(f"{kind}-{transport}" for kind in KINDS for transport in TRANSPORTS)
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
STAMP = "io.modelcontextprotocol/serverInfo"
ENVELOPE = ("resultType", "ttlMs", "cacheScope")

FORM_ANSWER = {"colour": "red", "size": 3}
"""What the test client answers to a form: every field, so a gateway filling defaults (SEP-1034) changes nothing."""
EVERY_FORM = {"name": "Ada", "check": True, "firstLine": "Call me Ishmael.", "email": "ada@example.invalid",
              "homepage": "https://example.invalid", "birthdate": "1815-12-10", "integer": 7, "number": 2.5,
              "untitledSingleSelectEnum": "Joey", "untitledMultipleSelectEnum": ["Piano"],
              "titledSingleSelectEnum": "hero-2", "titledMultipleSelectEnum": ["fish-3"], "legacyTitledEnum": "pet-2"}


@dataclass
class Upstreams:
    """The six upstreams: the HTTP and SSE ones running, each one's gateway table and direct transport."""

    urls: dict[str, str]

    def table(self, alias: str) -> dict[str, Any]:
        """The upstream's ``[mcp.servers.ALIAS]`` table."""
        kind, transport = alias.split("-")
        if transport == "stdio":
            command = [EVERYTHING or "mcp-server-everything", "stdio"] if kind == "every" else [sys.executable, PROBE,
                                                                                                  "stdio"]
            return {"command": command[0], "args": command[1:], "timeout": 30}
        return {"url": self.urls[alias], "timeout": 30}

    def direct(self, alias: str) -> Any:
        """What a client connects to for this upstream without the gateway."""
        table = self.table(alias)
        if "command" in table:
            return StdioServerParameters(command=table["command"], args=table["args"])
        return sse_client(table["url"]) if alias.endswith("-sse") else table["url"]

    def gateway_config(self, folder: Path, **mcp: Any) -> Path:
        """A gateway configuration serving all six (no native tools)."""
        lines = ["[mcp]", "native = false", "startup_wait = 60"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in mcp.items()]
        for alias in ALIASES:
            lines.append(f"\n[mcp.servers.{alias}]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in self.table(alias).items()]
        path = folder / "gateway.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


@contextmanager
def running_upstreams() -> Iterator[Upstreams]:
    """server-everything and the probe over streamable HTTP and SSE, for as long as the block runs."""
    assert EVERYTHING is not None
    urls: dict[str, str] = {}
    with ExitStack() as stack:
        for alias in ALIASES:
            kind, transport = alias.split("-")
            if transport == "stdio":
                continue
            port = free_port()
            if kind == "every":
                command = [EVERYTHING, "streamableHttp" if transport == "http" else "sse"]
                stack.enter_context(background(command, port, env={"PORT": str(port)}))
            else:
                stack.enter_context(background([sys.executable, PROBE, transport, "--port", str(port)], port))
            urls[alias] = f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
        yield Upstreams(urls)


# -- the client side ---------------------------------------------------------------------------


@dataclass
class Heard:
    """What a client heard besides answers: progress and log lines, in order."""

    progress: list[float] = field(default_factory=list)
    logs: list[tuple[str, str | None, Any]] = field(default_factory=list)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((str(params.level), params.logger, params.data))


async def answer_sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
    asked = params.messages[0].content
    text = asked.text if isinstance(asked, types.TextContent) else "?"
    return types.CreateMessageResult(role="assistant", model="test-model", stop_reason="endTurn",
                                     content=types.TextContent(type="text", text=f"sampled: {text}"))


async def answer_elicitation(context: Any, params: types.ElicitRequestParams) -> Any:
    if isinstance(params, types.ElicitRequestURLParams):
        return types.ElicitResult(action="accept")
    properties = set(params.requested_schema.get("properties", {}))
    return types.ElicitResult(action="accept", content=EVERY_FORM if "name" in properties else FORM_ANSWER)


async def answer_roots(context: Any) -> Any:
    return types.ListRootsResult(roots=[types.Root(uri="file:///home/user/project", name="project")])


def client(target: Any, mode: str, heard: Heard | None = None, **callbacks: Any) -> Client:
    """An official SDK client able to answer every question (unless ``callbacks`` replace the answers)."""
    answers: dict[str, Any] = {"sampling_callback": answer_sampling, "elicitation_callback": answer_elicitation,
                               "list_roots_callback": answer_roots, **callbacks}
    answers = {key: value for key, value in answers.items() if value is not None}
    sampling = types.SamplingCapability(tools=types.SamplingToolsCapability()) if "sampling_callback" in answers \
        else None
    return Client(target, mode=mode, read_timeout_seconds=60, log_level="debug" if mode != "legacy" else None,
                  logging_callback=heard.on_log if heard is not None else None, sampling_capabilities=sampling,
                  **answers)


async def raw(client: Client, request: Any) -> dict[str, Any]:
    """A request's answer as the JSON the server sent (the SDK checks it against the protocol version)."""
    answer: dict[str, Any] = await client.session.send_request(request, RAW)  # type: ignore[type-var]
    return answer


def call(name: str, arguments: Mapping[str, Any] | None = None) -> types.CallToolRequest:
    return types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=dict(arguments or {})))


# -- conversations -----------------------------------------------------------------------------

EVERY_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"message": "hello"}),
    ("get-sum", {"a": 2, "b": 40}),
    ("get-tiny-image", {}),
    ("get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("get-resource-links", {"count": 3}),
    ("get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
    ("get-structured-content", {"location": "Chicago"}),
]
PROBE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("every_content", {}), ("several_texts", {}), ("empty", {}), ("failing", {}),
]
EVERY_ASKS: list[tuple[str, dict[str, Any]]] = [
    ("trigger-elicitation-request", {}),
    ("trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 20}),
    ("get-roots-list", {}),
    ("trigger-url-elicitation", {"url": "https://example.invalid/a", "elicitationId": "e-1"}),
]
PROBE_ASKS: list[tuple[str, dict[str, Any]]] = [
    ("ask", {"kind": kind}) for kind in ("form", "url", "sample", "sample_tools", "roots")
]
READS = {"every": ["demo://resource/static/document/architecture.md", "demo://resource/dynamic/text/2"],
         "probe": ["probe://docs/readme.md", "probe://bin/pixel.png", "probe://items/7", "file:///srv/probe/notes.txt"]}
PROMPTS = {"every": [("simple-prompt", {}), ("args-prompt", {"city": "Paris", "state": "Texas"}),
                     ("resource-prompt", {"resourceType": "Text", "resourceId": "1"})],
           "probe": [("review", {"file": "a.py", "language": "python"})]}
COMPLETIONS = {"every": [({"type": "ref/prompt", "name": "completable-prompt"}, {"name": "department", "value": "E"}),
                         ({"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
                          {"name": "resourceId", "value": "1"})],
               "probe": [({"type": "ref/prompt", "name": "review"}, {"name": "language", "value": "p"}),
                         ({"type": "ref/resource", "uri": "probe://items/{id}"}, {"name": "id", "value": "x"})]}
PROGRESS = {"every": ("trigger-long-running-operation", {"duration": 0.1, "steps": 4}),
            "probe": ("steps", {"count": 13})}
PROGRESS_RUNS = 2
"""Each progress call is made this often: the last notification used to be lost most of the time."""


async def converse(session: Client, kind: str, heard: Heard, name: Callable[[str], str] = str,
                   uri: Callable[[str], str] = str, *, full: bool = True) -> dict[str, Any]:
    """Every feature of one upstream asked through ``session``; ``name``/``uri`` give what the client must
    send for an upstream's own tool or prompt name and resource URI (the gateway's forms of them).

    The cheap features (listings, plain calls) always; with ``full`` also the questions asked back,
    progress, log lines, reads, prompts and completions."""
    seen: dict[str, Any] = {}
    listed = await raw(session, types.ListToolsRequest())
    seen["tools/list"] = {**listed, "tools": sorted(listed["tools"], key=lambda tool: tool["name"])}
    for tool, arguments in EVERY_CALLS if kind == "every" else PROBE_CALLS:
        seen[f"call {tool}"] = await raw(session, call(name(tool), arguments))
    for method, key in (("resources/list", "resources"), ("resources/templates/list", "resourceTemplates"),
                        ("prompts/list", "prompts")):
        request = types.ListResourcesRequest() if key == "resources" else \
            types.ListResourceTemplatesRequest() if key == "resourceTemplates" else types.ListPromptsRequest()
        seen[method] = await raw(session, request)
    if full:
        seen.update(await _converse_further(session, kind, heard, name, uri))
    return seen


async def _converse_further(session: Client, kind: str, heard: Heard, name: Callable[[str], str],
                            uri: Callable[[str], str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for tool, arguments in EVERY_ASKS if kind == "every" else PROBE_ASKS:
        result = await session.call_tool(name(tool), arguments)
        seen[f"ask {tool} {arguments}"] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    tool, arguments = PROGRESS[kind]
    for run in range(PROGRESS_RUNS):
        heard.progress.clear()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            heard.progress.append(progress)

        await session.call_tool(name(tool), arguments, progress_callback=on_progress)
        seen[f"progress {run}"] = list(heard.progress)  # what arrived before the answer
    if kind == "probe":
        heard.logs.clear()
        await session.call_tool(name("logs"), {})
        seen["logs"] = list(heard.logs)
    for resource in READS[kind]:
        seen[f"read {resource}"] = await raw(session, types.ReadResourceRequest(
            params=types.ReadResourceRequestParams(uri=uri(resource))))
    for prompt, arguments in PROMPTS[kind]:
        seen[f"prompt {prompt}"] = await raw(session, types.GetPromptRequest(
            params=types.GetPromptRequestParams(name=name(prompt), arguments=arguments)))
    for ref, argument in COMPLETIONS[kind]:
        sent = {**ref, **({"name": name(ref["name"])} if "name" in ref else {"uri": uri(ref["uri"])})}
        seen[f"complete {ref} {argument}"] = await raw(session, types.CompleteRequest(
            params=types.CompleteRequestParams.model_validate({"ref": sent, "argument": argument})))
    tool, arguments = REFUSALS[kind]
    seen[f"refusal {tool}"] = await _refusal(session, name(tool), arguments)
    return seen


REFUSALS = {"every": ("trigger-url-elicitation", {"url": "https://example.invalid/b", "errorPath": True}),
            "probe": ("rpc_error", {"code": -32001})}
"""A call each upstream answers with a JSON-RPC error: ``-32042`` (URL elicitation required, which a client
acts on) and ``-32001`` (an upstream's own, which a gateway once took for its own timeout)."""


async def _refusal(session: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A call answered with a JSON-RPC error: the error (without server-everything's fresh elicitation ids);
    answered with a result, the result."""
    try:
        result = await session.call_tool(tool, arguments)
    except MCPError as exc:
        return {"code": exc.error.code, "message": exc.error.message, "data": _without_ids(exc.error.data)}
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def _without_ids(data: Any) -> Any:
    if isinstance(data, dict):
        return {key: _without_ids(value) for key, value in data.items() if key != "elicitationId"}
    if isinstance(data, list):
        return [_without_ids(item) for item in data]
    return data


# -- the documented differences ------------------------------------------------------------------


def through_gateway(seen: dict[str, Any], alias: str) -> dict[str, Any]:
    """A conversation held through the gateway, with its renaming undone (names, URIs, loggers) and
    only the items of upstream ``alias`` kept in the merged listings."""
    prefix = f"{alias}__"
    out = dict(seen)
    out["tools/list"] = {**seen["tools/list"], "tools": sorted(
        ({**tool, "name": tool["name"][len(prefix):]} for tool in seen["tools/list"]["tools"]
         if tool["name"].startswith(prefix)), key=lambda tool: tool["name"])}
    out["prompts/list"] = {**seen["prompts/list"], "prompts": [
        {**prompt, "name": prompt["name"][len(prefix):]} for prompt in seen["prompts/list"]["prompts"]
        if prompt["name"].startswith(prefix)]}
    for key, field_name in (("resources/list", "resources"), ("resources/templates/list", "resourceTemplates")):
        uri_key = "uri" if field_name == "resources" else "uriTemplate"
        out[key] = {**seen[key], field_name: [
            {**item, uri_key: own} for item in seen[key][field_name]
            if (own := own_uri(item[uri_key], alias)) is not None]}
    for key, value in seen.items():
        if key.startswith("read ") and isinstance(value.get("contents"), list):
            out[key] = {**value, "contents": [{**item, "uri": own_uri(item["uri"], alias) or item["uri"]}
                                              for item in value["contents"]]}
    if "refusal rpc_error" in seen:  # an upstream's JSON-RPC error reaches the model as a tool error naming it
        out["refusal rpc_error"] = rpc_error_of(seen["refusal rpc_error"], alias)
    if "logs" in seen:
        out["logs"] = [(level, logger[len(prefix):] if logger and logger.startswith(prefix) else
                        None if logger == alias else logger, data) for level, logger, data in seen["logs"]]
    return out


_RPC_ERROR = re.compile(r"^ERROR \(\w+\): server '(?P<alias>[\w-]+)': JSON-RPC error (?P<code>-?\d+): "
                        r"(?P<message>.*?)(?: \(data: (?P<data>.*)\))?$")


def rpc_error_of(answer: dict[str, Any], alias: str) -> dict[str, Any]:
    """The JSON-RPC error behind the gateway's tool error for it (``docs/gateway.md``, failures told apart):
    the upstream's own code and message, said by the right server (else the answer unchanged)."""
    text = answer.get("content", [{}])[0].get("text", "") if answer.get("isError") else ""
    found = _RPC_ERROR.match(text.splitlines()[0]) if text else None
    if found is None or found["alias"] != alias:
        return answer
    data = json.loads(found["data"]) if found["data"] is not None else None
    return {"code": int(found["code"]), "message": found["message"], "data": data}


def own_uri(uri: str, alias: str) -> str | None:
    """The upstream's own URI behind a URI the gateway serves for ``alias`` (None: another upstream's)."""
    routed = upstream_uri(uri, {alias})
    return routed[1] if routed is not None else None


_METHODS = {"tools/list": "tools/list", "resources/list": "resources/list",
            "resources/templates/list": "resources/templates/list", "prompts/list": "prompts/list",
            "call": "tools/call", "read": "resources/read", "prompt": "prompts/get", "complete": "completion/complete"}


def in_era(seen: dict[str, Any], era: str) -> dict[str, Any]:
    """A handshake-era conversation as protocol version ``era`` shapes each answer, without the envelope
    fields that version adds to every result (``resultType``, cache hints, the ``serverInfo`` stamp)."""
    out: dict[str, Any] = {}
    for key, value in seen.items():
        method = _METHODS.get(key) or _METHODS.get(key.split(" ", 1)[0])
        if method is not None and isinstance(value, dict):
            value = _shaped(method, era, value)
        elif key.startswith("ask ") and isinstance(value, dict):
            value = _bare(value)
        out[key] = value
    return out


def _shaped(method: str, era: str, answer: dict[str, Any]) -> dict[str, Any]:
    filled = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", **answer}
    try:
        shaped = methods.serialize_server_result(method, era, filled)
    except ValidationError:
        shaped = methods.serialize_server_result(method, era, {"resultType": "complete", **answer})
    return _bare(shaped)


def _bare(answer: dict[str, Any]) -> dict[str, Any]:
    bare = {key: value for key, value in answer.items() if key not in ENVELOPE}
    meta = bare.get("_meta")
    if isinstance(meta, dict):
        rest = {key: value for key, value in meta.items() if key != STAMP}
        if rest:
            bare["_meta"] = rest
        else:
            bare.pop("_meta")
    return bare


_CLOCK = re.compile(r"created at \d{1,2}:\d\d:\d\d [AP]M")
"""server-everything's dynamic resources say when they were made: the one thing two askings may not share."""


def _unclocked(value: Any) -> Any:
    return json.loads(_CLOCK.sub("created at <time>", json.dumps(value, sort_keys=True)))


def differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """Each feature asked through the gateway whose answer differs from the direct one (both shortened)."""
    found = []
    for key in got:
        if _unclocked(expected.get(key)) != _unclocked(got.get(key)):
            found.append(f"{key}:\n    direct:  {json.dumps(expected.get(key), sort_keys=True)[:600]}\n"
                         f"    gateway: {json.dumps(got.get(key), sort_keys=True)[:600]}")
    return sorted(found)


async def wait_for(condition: Callable[[], bool], seconds: float = 15) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.02)
