"""The four registry meta-tools: search, load, execute and help.

They cover the items of ``.ai/`` (project) and ``~/.ai/`` (user) — and, when the server
provides its tool list (always in meta mode, see :class:`codeward.tools.meta.Meta`),
every tool the server serves, so a client that lists only these four can still find and call
everything.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from codeward.approval.consent import ask_person
from codeward.engines.registry.describe import Hit, item_help, item_hit, overview, render_hits, served_help, served_hit
from codeward.engines.registry.execute import run_tool
from codeward.engines.registry.items import Kind, Space
from codeward.engines.registry.served import ServedTools
from codeward.engines.registry.service import Registry, describe_covered
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

Name = Annotated[str, Field(description="As registry_search shows it.")]
KindArg = Annotated[Literal["tool", "directive", "knowledge"] | None,
                    Field(description="When several kinds share the name.")]
SpaceArg = Annotated[Literal["project", "user", "hub"] | None,
                     Field(description="project: .ai/, user: ~/.ai/; default: project first.")]


@tool(toolset="registry", read_only=True, title="Search tools, directives and knowledge",
      examples=[{"query": "stock rules"}], aliases=("search",))
def registry_search(
    ctx: ToolContext,
    query: Annotated[str, Field(description="'': everything.")] = "",
    kind: Literal["all", "tool", "directive", "knowledge"] = "all",
    source: Annotated[Literal["all", "project", "user", "hub", "served"],
                      Field(description="served: this server's tools.")] = "all",
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
) -> Result[str]:
    """Search tools (this server's and the .ai/ registry's), directives and knowledge by words, best first."""
    registry = Registry.for_context(ctx)
    wanted_kind = None if kind == "all" else Kind(kind)
    hits: list[Hit] = []
    total = 0
    if source != "served":
        space = Space(source) if source in ("project", "user", "hub") else None
        with registry.index() as index:
            total = len(index.names())
            hits += [item_hit(registry, item, score) for item, score in index.search(query, wanted_kind, space, limit)]
    served = ctx.services.find(ServedTools)
    if served is not None and source in ("all", "served") and wanted_kind in (None, Kind.TOOL):
        total += len(served.infos())
        hits += [served_hit(served, info, score) for info, score in served.search(query, limit)]
    hits.sort(key=lambda hit: (hit.name.lower() != query.strip().lower(), hit.score))
    return Result.success(render_hits(query, hits[:limit], total))


@tool(toolset="registry", destructive=True, title="Read or copy a registry item",
      examples=[{"name": "stock_rules"}], aliases=("load",))
def registry_load(
    ctx: ToolContext,
    name: Name,
    kind: KindArg = None,
    source: SpaceArg = None,
    destination: Annotated[Literal["project", "user", "hub"] | None,
                           Field(description="Copy it there (hub: publish).")] = None,
    overwrite: bool = False,
) -> Result[str]:
    """A registry item's text and metadata; with destination, a copy into another space (only items signed
    by a key the user trusts go to user or hub)."""
    registry = Registry.for_context(ctx)
    loaded = registry.load(name, Kind(kind) if kind else None, Space(source) if source else None,
                           Space(destination) if destination else None, overwrite)
    if not loaded.ok or loaded.data is None:
        return loaded.cast("")
    item = loaded.data.item
    shown = registry.spaces.display(item.path, item.space) if item.path else item.name
    head = f"Copied to {loaded.data.copied_to}.\n" if loaded.data.copied_to else ""
    problems = "".join(f"\nProblem: {p.render()}" for p in item.problems)
    meta = {k: v for k, v in item.meta.items() if v not in (None, "", [], {})}
    return Result.success(f"{head}{item.kind.value} {item.name} ({item.space.value}: {shown})\nmetadata: {meta}"
                          f"{problems}\n\n{loaded.data.text}")


@tool(toolset="registry", destructive=True, open_world=True, title="Run or sign a tool",
      examples=[{"name": "read_file", "params": {"path": "notes/todo.md"}}], aliases=("execute",))
def registry_execute(
    ctx: ToolContext,
    name: Name,
    action: Annotated[Literal["run", "sign"], Field(description="sign: ask the user to sign the item.")] = "run",
    params: Annotated[dict[str, Any] | None, Field(description="The tool's arguments (registry_help).")] = None,
    dry_run: bool = False,
    source: SpaceArg = None,
    timeout: Annotated[float | None, Field(gt=0, description="Seconds.")] = None,
) -> Result[Any]:
    """Run a tool by name: one this server serves, or a registry tool signed by a key the user trusts (in
    the sandbox). Or ask the user to sign an item."""
    served = ctx.services.find(ServedTools)
    if action == "sign":
        if source is None and served is not None and served.has(name) and not _is_item(ctx, name):
            return Result.fail(ErrorKind.INVALID_INPUT, f"{name} is served by this server, not a registry item; "
                               "only .ai/ items are signed", "Run it with action=\"run\".", data="")
        return _sign(ctx, name, source)
    if source is None and served is not None and served.has(name):
        return call_served(served, name, params, dry_run, ctx)
    ran = run_tool(Registry.for_context(ctx), name, params, ctx, space=Space(source) if source else None,
                   dry_run=dry_run, timeout=timeout, consent=ask_person)
    if not ran.ok or ran.data is None:
        return ran.cast("")
    return Result(data=ran.data.render(), notes=list(ran.notes))


@tool(toolset="registry", read_only=True, title="Explain a tool or the registry",
      examples=[{"name": "py_get_definition"}], aliases=("help",))
def registry_help(
    ctx: ToolContext,
    name: Annotated[str | None, Field(description="None: an overview.")] = None,
    kind: KindArg = None,
) -> Result[str]:
    """How to call one tool or use one item (its arguments), or an overview of everything available."""
    registry = Registry.for_context(ctx)
    served = ctx.services.find(ServedTools)
    if not name:
        return Result.success(overview(registry, served))
    if served is not None and kind in (None, "tool"):
        info = served.info(name)
        if info is not None:
            return Result.success(served_help(served, info))
    found = registry.find(name, Kind(kind) if kind else None)
    if not found.ok or found.data is None:
        if served is not None:
            import difflib

            close = difflib.get_close_matches(name, [i.name for i in served.infos()], n=3, cutoff=0.6)
            if close:
                return Result.fail(ErrorKind.NOT_FOUND, f"no tool or item named {name!r}",
                                   f"Did you mean {', '.join(close)}?", data="")
        return found.cast("")
    return Result.success(item_help(registry, found.data))


def call_served(served: ServedTools, name: str, params: dict[str, Any] | None, dry_run: bool,
                ctx: ToolContext) -> Result[Any]:
    """A served tool through registry_execute: checked against its schema, then called."""
    if params is not None and not isinstance(params, dict):
        return Result.fail(ErrorKind.INVALID_INPUT, "params must be a JSON object", data="")
    if dry_run:
        return Result.success(dry_run_served(served, name, params or {}))
    outcome = served.call(name, params or {}, ctx)
    if outcome.is_error:
        return Result(data="", errors=list(outcome.errors)) if outcome.errors else \
            Result.fail(ErrorKind.INTERNAL, outcome.text, data="")
    return Result.success(outcome.text)


def dry_run_served(served: ServedTools, name: str, params: dict[str, Any]) -> str:
    import jsonschema

    info = served.info(name)
    if info is None:
        return f"dry run: {name} would be called with {params}; its schema is not listed, so nothing was checked."
    errors = sorted(jsonschema.Draft202012Validator(info.input_schema).iter_errors(params), key=str)
    if errors:
        listed = "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or 'params'}: {e.message}" for e in errors[:5])
        return f"dry run: {name} would refuse these params: {listed}"
    return f"dry run: {name} would be called with {params}; the params match its schema. Nothing was run."


def _sign(ctx: ToolContext, name: str, source: str | None) -> Result[Any]:
    """Sign an item — only once a person approved it: they typed the call, approved it at a prompt,
    or say yes now to the question naming everything the signature will cover."""
    registry = Registry.for_context(ctx)
    space = Space(source) if source else None
    found = registry.find(name, None, space)
    if not found.ok or found.data is None:
        return found.cast("")
    read = registry.fresh(found.data)
    if not read.ok or read.data is None:
        return read.cast("")
    item, data = read.data
    if item.path is None:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{name} is built in; it needs no signature", data="")
    covered = describe_covered(registry.covered(item, data))
    shown = registry.spaces.display(item.path, item.space)
    key = registry.keys.own()
    who = f"your key {key.shown()}" if key is not None else "a new key made for you now"
    question = (f"codeward: sign {item.kind.value} {item.name} ({shown}) with {who}? A signed item runs without "
                "further review, until anything it covers changes. It covers: " + "; ".join(covered) + ".")
    asked = ask_person(ctx, question, what=f"signing {item.name}", command=f"codeward sign {item.name}")
    if not asked.ok:
        return asked.cast("")
    signed = registry.sign(name, ctx, None, space)
    if not signed.ok or signed.data is None:
        return signed.cast("")
    made = f"\nA signing key was made for you: {signed.data.key_created} (keep it private)." \
        if signed.data.key_created else ""
    return Result.success(f"Signed {signed.data.display} with {signed.data.key}:\n{signed.data.line}\nIt covers: "
                          + "; ".join(signed.data.covered) + ". It runs while all of that stays exactly as it is "
                          f"now; any change needs a new signature.{made}")


def _is_item(ctx: ToolContext, name: str) -> bool:
    found = Registry.for_context(ctx).find(name)
    return found.ok
