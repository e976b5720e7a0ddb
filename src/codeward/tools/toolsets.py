"""The discovery tools of the lean listing: ``toolsets`` (list, describe, enable) and ``call_tool``.

A lean server (the default: :mod:`codeward.kernel.lean_listing`) lists the core tools and these two; every
other tool is reached through them. ``toolsets`` is read-only: enabling a toolset changes what this
session lists, never a file. ``call_tool`` runs another tool, so it carries the hints of the worst
tool it may run; the server's chain turns it into a call of that tool before approval, audit and
metrics see it (:class:`codeward.kernel.lean_listing.CallThrough`), so this function only runs where no
such chain is (and says so).
"""

from __future__ import annotations

import difflib
import json
from typing import Annotated, Any, Literal

from pydantic import Field

from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.lean_listing import LeanListing, listing_tokens
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.session_toolsets import SessionToolsets
from codeward.tools import DISCOVERY_TOOLSET, EVERY_TOOLSET

Action = Literal["list", "describe", "enable", "disable"]


@tool(toolset=DISCOVERY_TOOLSET, read_only=True, title="Find and enable toolsets",
      examples=[{}, {"action": "describe", "names": ["git", "git_log"]}, {"action": "enable", "names": ["git"]}])
def toolsets(
    ctx: ToolContext,
    action: Action = "list",
    names: Annotated[list[str], Field(description="Toolset names (the word all: every one); describe takes tool "
                                                  "names too.")] = [],  # noqa: B006 (pydantic copies defaults)
) -> Result[str]:
    """More tools than you see: list shows every toolset and its tools; describe explains them (a tool's
    arguments too); enable adds a toolset's tools to your tool list for this session (disable removes them).
    call_tool runs any tool without enabling it."""
    listing = ctx.services.find(LeanListing)
    if listing is None:
        return Result.success("Every tool of this server is listed already: there is nothing to enable.")
    session = ctx.call.toolsets
    enabled = session.enabled if session is not None else frozenset()
    if action == "list":
        return Result.success(_overview(listing, enabled))
    if not names:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{action} needs names: the toolsets (or tools) to {action}",
                           f'e.g. {{"action": "{action}", "names": ["{listing.toolsets[0].name}"]}}; '
                           "action list shows them.", data="")
    if action == "describe":
        return _describe(listing, names)
    wanted = [t.name for t in listing.toolsets] if EVERY_TOOLSET in names else list(dict.fromkeys(names))
    unknown = listing.unknown(wanted)
    if unknown:
        tools = [name for name in unknown if listing.toolset_of(name) is not None]
        hint = (f"{', '.join(tools)} {'is a tool' if len(tools) == 1 else 'are tools'}: call_tool runs "
                "one without enabling its toolset. " if tools else "")
        choices = [t.name for t in listing.toolsets if t.name != DISCOVERY_TOOLSET]
        close = [match for name in unknown for match in difflib.get_close_matches(name, choices, n=1, cutoff=0.6)]
        guess = f"Did you mean {', '.join(close)}? " if close and not tools else ""
        return Result.fail(ErrorKind.NOT_FOUND, f"no toolset named {', '.join(map(repr, unknown))}",
                           f"{hint}{guess}Toolsets: {', '.join(choices)}.", data="")
    return _change(listing, session, wanted, enable=action == "enable")


@tool(toolset=DISCOVERY_TOOLSET, destructive=True, open_world=True, title="Call any tool",
      examples=[{"name": "git_log", "arguments": {"limit": 3}}])
def call_tool(
    ctx: ToolContext,
    name: Annotated[str, Field(description="The tool, as toolsets names it.")],
    arguments: dict[str, Any] = {},  # noqa: B006 (pydantic copies defaults)
) -> Result[str]:
    """Run any tool by name, listed or not, with its arguments (toolsets describe shows them): for a tool
    you need once, or when your tool list does not change after enabling a toolset."""
    return Result.fail(ErrorKind.UNAVAILABLE, f"call_tool cannot run {name} here: it needs a codeward server's "
                       "chain (serve, gateway, the agent), which runs the named tool in its place",
                       f"Call {name} directly.", data="")


def _overview(listing: LeanListing, enabled: frozenset[str]) -> str:
    infos = {info.name: info for info in listing.infos()}
    extra = sorted((listing.listed | enabled) - {DISCOVERY_TOOLSET})
    lines = [f"Listed: the core tools{', ' + ', '.join(extra) if extra else ''}. enable lists a toolset for "
             "this session; call_tool runs any tool now."]
    for toolset in listing.toolsets:
        hidden = [name for name in toolset.tools if not listing.shows(name, enabled)]
        if hidden:
            tokens = listing_tokens(infos[name] for name in hidden if name in infos)
            lines.append(f"- {toolset.name} ({_count(len(hidden))}, ~{tokens:,} tokens): {toolset.summary} "
                         f"{', '.join(hidden)}")
    if len(lines) == 1:
        lines.append("Every toolset is listed.")
    return "\n".join(lines)


def _count(tools: int) -> str:
    return f"{tools} tool{'s' if tools != 1 else ''}"


def _describe(listing: LeanListing, names: list[str]) -> Result[str]:
    infos = {info.name: info for info in listing.infos()}
    parts: list[str] = []
    missing: list[str] = []
    for name in dict.fromkeys(names):
        toolset = listing.toolset(name)
        if toolset is not None:
            parts.append(f"{toolset.name}: {toolset.summary}\n" + "\n".join(
                f"- {tool}: {infos[tool].description.splitlines()[0]}" for tool in toolset.tools if tool in infos))
        elif name in infos:
            info = infos[name]
            schema = json.dumps(info.input_schema, separators=(",", ":"), ensure_ascii=False)
            parts.append(f"{name} (toolset {listing.toolset_of(name)}): {info.description}\narguments: {schema}")
        else:
            missing.append(name)
    if missing:
        return Result.fail(ErrorKind.NOT_FOUND, f"no toolset or tool named {', '.join(map(repr, missing))}",
                           "action list shows every toolset and its tools.", data="")
    return Result.success("\n\n".join(parts))


def _change(listing: LeanListing, session: SessionToolsets | None, wanted: list[str], *, enable: bool) -> Result[str]:
    verb = "enable" if enable else "disable"
    if session is None or not session.can_change:
        why = ("this connection names no session (2026-07-28 over HTTP keeps nothing between requests)"
               if session is not None else "this call comes from no session")
        first = next((tool for t in listing.toolsets if t.name == wanted[0] for tool in t.tools
                      if tool not in listing.core), "<tool>")
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot {verb} toolsets: {why}",
                           f'Run their tools with call_tool, e.g. {{"name": "{first}", "arguments": {{...}}}} '
                           "(toolsets describe shows the arguments).", data="")
    changed = session.enable(wanted) if enable else session.disable(wanted)
    same = [name for name in wanted if name not in changed]
    lines: list[str] = []
    for name in changed:
        toolset = listing.toolset(name)
        assert toolset is not None
        lines.append(f"{verb}d {name}: {', '.join(toolset.tools)}")
    if same:
        lines.append(f"already {'enabled' if enable else 'not enabled'}: {', '.join(same)}")
    if changed:
        lines.append("Your tool list changed (the client was told to list again). If your tools did not change, "
                     "call_tool runs them." if enable else "Your tool list changed (the client was told).")
    return Result.success("\n".join(lines))
