"""A probe MCP server for the gateway's fidelity tests: everything a server can say, said once.

Built on the official SDK's low-level ``Server``, so every field goes on the wire as written:
tools with full output schemas (nested objects, ``$defs``, enums, descriptions, ``$schema``),
every annotation (the default-valued ones and ``title`` included), ``icons``, ``_meta`` and
``execution``; results with every content block type, each with annotations and ``_meta``, a
result ``_meta``, ``structuredContent`` on an error, empty content; resources (text and blob),
a template, prompts, completion, subscriptions, logging; and, during a call, progress, log
lines and each question a server may ask its client (form and URL elicitation, sampling, the
roots). The ``misbehave`` tool sends what a careless or hostile server might: malformed log and
progress notifications, a question with broken parameters.

    python tests/gateway_probe.py stdio
    python tests/gateway_probe.py http --port 4100
    python tests/gateway_probe.py sse --port 4100
"""

from __future__ import annotations

import argparse
import base64
import json
import warnings
from typing import Any

from codeward.serving.sdk_wire_models import defer_wire_models

defer_wire_models()  # the SDK's wire models built as they are used: a second less at start-up

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.server.context import ServerRequestContext  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                                     "1f15c4890000000d4944415478da63f8cf00000301010018dd8db000"
                                     "00000049454e44ae426082")).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt " + bytes(28)).decode()
ICONS = [{"src": "https://example.invalid/probe.png", "mimeType": "image/png", "sizes": ["16x16"]}]
ANNOTATIONS = {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2026-01-02T03:04:05Z"}
OUTPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "description": "What the probe reports.",
    "properties": {
        "kind": {"type": "string", "enum": ["probe", "other"], "description": "Always probe."},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        "nested": {"type": "object", "properties": {"depth": {"type": "integer", "minimum": 1}},
                   "required": ["depth"]},
    },
    "required": ["kind", "items"],
    "$defs": {"item": {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "number"}},
                       "required": ["name"], "additionalProperties": False}},
}
STRUCTURED = {"kind": "probe", "items": [{"name": "a", "size": 1.5}], "nested": {"depth": 2}}


def _tool(name: str, description: str, properties: dict[str, Any] | None = None, **extra: Any) -> types.Tool:
    schema = {"type": "object", "properties": properties or {}}
    return types.Tool.model_validate({"name": name, "description": description, "inputSchema": schema, **extra},
                                     by_name=False)


TOOLS = [
    _tool("every_content", "Return one block of every content type, each annotated.",
          title="Every content type", outputSchema=OUTPUT_SCHEMA, icons=ICONS, execution={"taskSupport": "forbidden"},
          annotations={"title": "Every content", "readOnlyHint": False, "destructiveHint": True,
                       "idempotentHint": False, "openWorldHint": True},
          _meta={"probe/tool": {"version": 3}}),
    _tool("several_texts", "Return three text blocks.", annotations={"readOnlyHint": True}),
    _tool("empty", "Return no content at all."),
    _tool("failing", "Fail as a tool, with structured content."),
    _tool("rpc_error", "Answer with a JSON-RPC error of code CODE.", {"code": {"type": "integer"}}),
    _tool("steps", "Report COUNT progress steps DELAY seconds apart, then answer.",
          {"count": {"type": "integer"}, "delay": {"type": "number"}}),
    _tool("logs", "Log one line at each level during the call, then answer."),
    _tool("ask", "Ask the client: KIND is form, url, sample, sample_tools or roots.",
          {"kind": {"type": "string", "enum": ["form", "url", "sample", "sample_tools", "roots"]}}),
    _tool("misbehave", "Send the client something broken (KIND: bad_log, bad_progress, bad_request), then "
          "answer.", {"kind": {"type": "string"}}),
    _tool("touch", "Announce that resource URI changed.", {"uri": {"type": "string"}}),
    _tool("finish_url", "Announce that the URL elicitation ID was completed.", {"id": {"type": "string"}}),
    _tool("log_later", "Answer, then log TEXT on the session a moment later (outside any call).",
          {"text": {"type": "string"}}),
]

RESOURCES = [
    types.Resource.model_validate({
        "uri": "probe://docs/readme.md", "name": "readme", "title": "The probe's readme", "mimeType": "text/markdown",
        "description": "Text resource.", "size": 18, "annotations": ANNOTATIONS, "icons": ICONS,
        "_meta": {"probe/resource": True}}, by_name=False),
    types.Resource.model_validate({"uri": "probe://bin/pixel.png", "name": "pixel", "mimeType": "image/png"},
                                  by_name=False),
    types.Resource.model_validate({"uri": "file:///srv/probe/notes.txt", "name": "notes", "mimeType": "text/plain"},
                                  by_name=False),
]
TEMPLATES = [types.ResourceTemplate.model_validate({
    "uriTemplate": "probe://items/{id}", "name": "item", "title": "An item", "mimeType": "application/json",
    "description": "One item by id.", "annotations": ANNOTATIONS, "_meta": {"probe/template": 1}}, by_name=False)]
PROMPTS = [types.Prompt.model_validate({
    "name": "review", "title": "Review a file", "description": "Review FILE in LANGUAGE.", "icons": ICONS,
    "_meta": {"probe/prompt": "x"},
    "arguments": [{"name": "file", "description": "The file.", "required": True},
                  {"name": "language", "title": "Language", "required": False}]}, by_name=False)]
LANGUAGES = ["python", "perl", "php", "go"]


def _annotated(block: dict[str, Any], n: int) -> dict[str, Any]:
    return {**block, "annotations": ANNOTATIONS, "_meta": {"probe/block": n}}


def every_content() -> dict[str, Any]:
    return {
        "content": [
            _annotated({"type": "text", "text": "first text"}, 1),
            _annotated({"type": "text", "text": "second text"}, 2),
            _annotated({"type": "image", "data": PNG, "mimeType": "image/png"}, 3),
            _annotated({"type": "audio", "data": WAV, "mimeType": "audio/wav"}, 4),
            _annotated({"type": "resource_link", "uri": "probe://docs/readme.md", "name": "readme",
                        "title": "The readme", "description": "Linked.", "mimeType": "text/markdown", "size": 18,
                        "icons": ICONS}, 5),
            _annotated({"type": "resource", "resource": {"uri": "probe://docs/readme.md", "mimeType": "text/markdown",
                                                         "text": "# probe\n", "_meta": {"probe/contents": "t"}}}, 6),
            _annotated({"type": "resource", "resource": {"uri": "probe://bin/pixel.png", "mimeType": "image/png",
                                                         "blob": PNG}}, 7),
        ],
        "structuredContent": STRUCTURED,
        "isError": False,
        "_meta": {"probe/result": {"ok": True}},
    }


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
    args = params.arguments or {}
    name = params.name
    if name == "every_content":
        return every_content()
    if name == "several_texts":
        return {"content": [{"type": "text", "text": f"part {n}"} for n in (1, 2, 3)]}
    if name == "empty":
        return {"content": []}
    if name == "failing":
        return {"content": [{"type": "text", "text": "it failed"}], "isError": True,
                "structuredContent": {"reason": "broken", "code": 7}}
    if name == "rpc_error":
        raise MCPError(code=int(args.get("code", -32001)), message="the probe refuses", data={"why": "probe"})
    if name == "steps":
        count = int(args.get("count", 5))
        for step in range(1, count + 1):
            await ctx.session.report_progress(step, count, f"step {step}")
            if args.get("delay"):
                await anyio.sleep(float(args["delay"]))
        return {"content": [{"type": "text", "text": f"{count} steps"}]}
    if name == "logs":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for level in ("debug", "info", "warning", "error"):
                await ctx.session.send_log_message(level, {"said": level}, logger="probe",  # type: ignore[arg-type]
                                                   related_request_id=ctx.request_id)
        return {"content": [{"type": "text", "text": "logged"}]}
    if name == "ask":
        return await ask(ctx, str(args.get("kind", "form")))
    if name == "misbehave":
        return await misbehave(ctx, str(args.get("kind", "")))
    if name == "finish_url":
        await ctx.session.send_elicit_complete(str(args.get("id", "probe-1")))
        return {"content": [{"type": "text", "text": "finished"}]}
    if name == "log_later":
        connection = ctx.session._connection  # the session's own channel, not the call's

        async def later() -> None:
            await anyio.sleep(0.2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await connection.log("warning", str(args.get("text", "later")), "probe")

        ctx.lifespan_context.start_soon(later)
        return {"content": [{"type": "text", "text": "will log"}]}
    if name == "touch":
        await ctx.session.send_resource_updated(str(args.get("uri", RESOURCES[0].uri)))
        return {"content": [{"type": "text", "text": "touched"}]}
    raise MCPError(code=types.METHOD_NOT_FOUND, message=f"no tool {name}")


async def ask(ctx: ServerRequestContext[Any, Any], kind: str) -> dict[str, Any]:
    """One question to the client; the answer (or the client's error) as the result."""
    related = ctx.request_id
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "form":
                answer: Any = await ctx.session.elicit_form(
                    "Pick a colour", {"type": "object", "properties": {
                        "colour": {"type": "string", "enum": ["red", "blue"]},
                        "size": {"type": "integer", "default": 3}}, "required": ["colour"]},
                    related_request_id=related)
            elif kind == "url":
                answer = await ctx.session.elicit_url("Sign in", "https://example.invalid/login", "probe-1",
                                                      related_request_id=related)
            elif kind in ("sample", "sample_tools"):
                tools = ([types.Tool.model_validate({"name": "lookup", "inputSchema": {"type": "object"}})]
                         if kind == "sample_tools" else None)
                answer = await ctx.session.create_message(
                    messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Hi?"))],
                    max_tokens=20, system_prompt="Be brief.", temperature=0.5,
                    model_preferences=types.ModelPreferences(hints=[types.ModelHint(name="small")]), tools=tools,
                    related_request_id=related)
            else:
                answer = await ctx.session.list_roots()
    except MCPError as exc:
        return {"content": [{"type": "text", "text": f"client error {exc.error.code}: {exc.error.message}"}],
                "isError": True}
    dumped = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    dumped.pop("resultType", None)
    return {"content": [{"type": "text", "text": json.dumps(dumped, sort_keys=True)}]}


async def misbehave(ctx: ServerRequestContext[Any, Any], kind: str) -> dict[str, Any]:
    outbound = ctx.session._request_outbound  # raw frames: the SDK's typed API cannot send broken ones
    if kind == "bad_log":
        await outbound.notify("notifications/message", {"level": "deafening", "data": "?"})
        await outbound.notify("notifications/message", {"data": "no level"})
    elif kind == "bad_progress":
        await outbound.notify("notifications/progress", {"progressToken": "nobody-asked", "progress": 1})
        await outbound.notify("notifications/progress", {"progressToken": None, "progress": "half"})
    elif kind == "bad_request":
        try:
            await outbound.send_raw_request("elicitation/create", {"requestedSchema": "not a schema"}, None)
        except MCPError as exc:
            return {"content": [{"type": "text", "text": f"client error {exc.error.code}"}]}
    return {"content": [{"type": "text", "text": f"misbehaved: {kind}"}]}


async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)


async def read_resource(ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams) -> Any:
    uri = str(params.uri)
    if uri == "probe://bin/pixel.png":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]}
    if uri.startswith("probe://items/"):
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": json.dumps({"id": uri[14:]}),
                              "_meta": {"probe/item": True}}], "_meta": {"probe/read": 1}}
    if uri in ("probe://docs/readme.md", "file:///srv/probe/notes.txt"):
        return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": "# probe\nhello\n"}]}
    raise MCPError(code=-32002, message=f"no resource {uri}", data={"uri": uri})


async def list_prompts(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams) -> Any:
    if params.name != "review":
        raise MCPError(code=types.INVALID_PARAMS, message=f"no prompt {params.name}")
    args = params.arguments or {}
    return {"description": "A review.", "_meta": {"probe/got": 1}, "messages": [
        {"role": "user", "content": {"type": "text", "text": f"Review {args.get('file')} in {args.get('language')}",
                                     "annotations": ANNOTATIONS}},
        {"role": "assistant", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "probe://docs/readme.md",
                                                                      "text": "# probe\n"}}},
    ]}


async def complete(ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams) -> Any:
    prefix = params.argument.value
    if isinstance(params.ref, types.PromptReference) and params.argument.name == "language":
        values = [name for name in LANGUAGES if name.startswith(prefix)]
    elif isinstance(params.ref, types.ResourceTemplateReference):
        values = [f"{prefix}{n}" for n in range(3)]
    else:
        values = []
    return {"completion": {"values": values, "total": len(values), "hasMore": False}}


async def subscribe(ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> Any:
    return {}


async def set_level(ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams) -> Any:
    return {}


def build() -> Server[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Server(
            "gateway-probe", version="1.0", lifespan=_Background, on_list_tools=list_tools, on_call_tool=call_tool,
            on_list_resources=list_resources, on_list_resource_templates=list_templates,
            on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt,
            on_completion=complete, on_subscribe_resource=subscribe, on_unsubscribe_resource=subscribe,
            on_set_logging_level=set_level,
        )


class _Background:
    """The server's lifespan: a task group for work that outlives a call (``log_later``)."""

    def __init__(self, server: Any) -> None:
        self._group = anyio.create_task_group()

    async def __aenter__(self) -> Any:
        return await self._group.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._group.cancel_scope.cancel()
        return await self._group.__aexit__(*exc)


def _sse_app(server: Server[Any]) -> Any:
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    sse = SseServerTransport("/messages/")

    async def handle(request: Any) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    return Starlette(routes=[Route("/sse", endpoint=handle), Mount("/messages/", app=sse.handle_post_message)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    server = build()
    if args.mode == "stdio":
        from mcp.server.stdio import stdio_server

        async def serve() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(serve)
        return
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = _sse_app(server) if args.mode == "sse" else server.streamable_http_app(transport_security=security)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
