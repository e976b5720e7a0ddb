"""The lean listing: a client's model is shown the core tools; every other toolset is one call away.

Every request a client sends its model carries the whole tool listing, so by default a server
lists only the tools a coding agent uses every minute (``[server] toolsets`` unset, or naming
``"core"``) and the two discovery tools: ``toolsets`` (list the toolsets, describe one, enable
it for this session: the client is told ``notifications/tools/list_changed`` and lists again)
and ``call_tool`` (run any tool now, for clients that never list again).

Two objects carry it:

* :class:`LeanListing` — what one server (or agent) lists: the toolsets and their tools under the
  names this surface gives them (``cw__read_file`` on a gateway), the core tools, the toolsets
  listed from the start. Tools it does not know (a gateway's upstream tools) are always listed.
* :class:`~codeward.kernel.session_toolsets.SessionToolsets` — the toolsets one session enabled. A
  session is one client: the stdio process, an HTTP session, an agent conversation. A 2026-07-28
  request over HTTP names no session, so its listing cannot change (its ``can_change`` is
  false) and ``call_tool`` is its way.

A tool left out of a listing is still callable by its name, through the same chain.
:class:`CallThrough` is the middleware that turns ``call_tool`` into a plain call of the named tool
at the outermost layer, so approval, audit and metrics see that tool exactly as a direct call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codeward.kernel.chain import Middleware, ToolCall
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorInfo, ErrorKind
from codeward.kernel.surface import ToolInfo, ToolSurface

CHARS_PER_TOKEN = 4
"""The estimate a listing's cost is given in (a banner, the ``toolsets`` tool): characters over four."""
DISCOVERY_TOOL = "toolsets"
CALL_TOOL = "call_tool"


@dataclass(frozen=True)
class Toolset:
    """One toolset as a listing shows it: its name, what it is for, its tools (as this surface names them)."""

    name: str
    summary: str
    tools: tuple[str, ...]


@dataclass(frozen=True)
class LeanListing:
    """What a lean server lists, for any session: the core tools, the toolsets listed from the start,
    and every toolset a session enabled."""

    toolsets: tuple[Toolset, ...]
    core: frozenset[str]
    """Tool names listed in every session (the discovery tools among them)."""
    listed: frozenset[str] = frozenset()
    """Toolsets listed from the start, besides the core (``[server] toolsets = ["core", "python"]``)."""
    prefix: str = ""
    """What this surface puts before a tool's own name (``cw__`` for a gateway's native tools)."""
    infos: Callable[[], Sequence[ToolInfo]] = field(default=lambda: (), compare=False, repr=False)
    """Every tool of the surface, listed or not (what ``describe`` and the token estimates read)."""
    _toolset_of: Mapping[str, str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_toolset_of", {tool: t.name for t in self.toolsets for tool in t.tools})

    @property
    def discovery_tool(self) -> str:
        return self.prefix + DISCOVERY_TOOL

    @property
    def call_tool(self) -> str:
        return self.prefix + CALL_TOOL

    def toolset(self, name: str) -> Toolset | None:
        return next((t for t in self.toolsets if t.name == name), None)

    def toolset_of(self, tool: str) -> str | None:
        """The toolset of one of this surface's own tools; None for a tool it does not know (an upstream's)."""
        return self._toolset_of.get(tool)

    def shows(self, tool: str, enabled: Collection[str] = ()) -> bool:
        """Whether a session that enabled ``enabled`` lists ``tool``."""
        toolset = self._toolset_of.get(tool)
        return toolset is None or tool in self.core or toolset in self.listed or toolset in enabled

    def shown(self, infos: Iterable[ToolInfo], enabled: Collection[str] = ()) -> list[ToolInfo]:
        return [info for info in infos if self.shows(info.name, enabled)]

    def listed_toolsets(self, enabled: Collection[str] = ()) -> list[str]:
        """The toolsets whose every tool a session with ``enabled`` lists."""
        return [t.name for t in self.toolsets if t.name in self.listed or t.name in enabled
                or all(tool in self.core for tool in t.tools)]

    def unknown(self, names: Iterable[str]) -> list[str]:
        return [name for name in names if self.toolset(name) is None]


def listing_tokens(infos: Iterable[ToolInfo]) -> int:
    """Estimated tokens of a listing's name, description and input schema per tool (what a client
    forwards to its model), at :data:`CHARS_PER_TOKEN`."""
    text = json.dumps([{"name": i.name, "description": i.description, "inputSchema": i.input_schema}
                       for i in infos], separators=(",", ":"), ensure_ascii=False)
    return -(-len(text) // CHARS_PER_TOKEN)


def listing_line(infos: Sequence[ToolInfo], listing: LeanListing | None) -> str:
    """What a fresh session lists and what it costs a client's model on every request (a banner's line)."""
    if listing is None:
        return (f"listing all {len(infos)} tools, ~{listing_tokens(infos):,} tokens a request "
                "(unset [server] toolsets lists the core tools only)")
    shown = listing.shown(infos)
    return (f"listing {len(shown)} of {len(infos)} tools, ~{listing_tokens(shown):,} tokens a request; "
            f"the {listing.discovery_tool} tool reaches the other {len(infos) - len(shown)} "
            '([server] toolsets = ["all"] lists every one)')


class CallThrough(Middleware):
    """``call_tool`` made a plain call of the tool it names, before any other layer sees it.

    Outermost in the chain: the audit, the metrics, the control plane's observers and the approval
    policy then see the named tool and its arguments, exactly as if the client had called it (an
    ``ask_always`` tool still asks; a policy written for ``git_commit`` binds it). The named tool's
    own schema checks the arguments.
    """

    def __init__(self, listing: LeanListing) -> None:
        self.listing = listing

    def has(self, name: str, inner: ToolSurface) -> bool:
        return name == self.listing.call_tool or inner.has(name)

    async def call_tool(self, call: ToolCall, inner: ToolSurface) -> ToolOutcome:
        if call.name != self.listing.call_tool:
            return await inner.call(call.name, call.arguments, call.ctx)
        target, arguments, problem = self._target(call.arguments, inner)
        if problem is not None:
            return ToolOutcome(name=call.name, text=problem.render(), is_error=True, errors=[problem])
        outcome = await inner.call(target, arguments, call.ctx)
        return outcome

    def _target(self, arguments: Mapping[str, Any] | None,
                inner: ToolSurface) -> tuple[str, dict[str, Any], ErrorInfo | None]:
        values = dict(arguments or {})
        name = values.pop("name", None)
        given = values.pop("arguments", None)
        if values:
            return "", {}, _invalid(f"unknown argument {sorted(values)[0]!r} of {self.listing.call_tool}",
                                    'Pass {"name": "<tool>", "arguments": {...}}.')
        if not isinstance(name, str) or not name:
            return "", {}, _invalid(f"{self.listing.call_tool} needs name: the tool to run (a string)",
                                    f"{self.listing.discovery_tool} lists every tool; "
                                    f'e.g. {{"name": "{self.listing.prefix}git_log", "arguments": {{"limit": 5}}}}.')
        if given is not None and not isinstance(given, dict):
            return "", {}, _invalid(f"arguments must be an object of {name}'s arguments, got "
                                    f"{type(given).__name__}", f'e.g. {{"name": "{name}", "arguments": {{}}}}.')
        if name in (self.listing.call_tool, self.listing.discovery_tool):
            return "", {}, _invalid(f"{self.listing.call_tool} runs other tools; call {name} directly",
                                    f"Call {name} itself.")
        if not inner.has(name):
            import difflib

            known = [info.name for info in self.listing.infos()]
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f"Did you mean {', '.join(close)}? " if close else ""
            return "", {}, ErrorInfo(ErrorKind.NOT_FOUND, f"no tool named {name!r}",
                                     f"{hint}{self.listing.discovery_tool} lists every tool.")
        return name, dict(given or {}), None


def _invalid(message: str, hint: str) -> ErrorInfo:
    return ErrorInfo(ErrorKind.INVALID_INPUT, message, hint)
