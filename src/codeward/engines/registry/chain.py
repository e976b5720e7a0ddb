"""Executor chains: a tool names its executor, which names its own, down to a primitive.

``my_tool → python_runtime → subprocess`` or ``issues_api → github_runtime → http_client``.
Resolution follows ``__executor_id__`` from item to item; a loop, a missing link, a chain
that does not end in a primitive, or one ending in the wrong primitive for the tool's type is
an error that shows the whole chain. Each link's ``CONFIG`` is merged over the next one's,
so the tool has the last word (``headers`` and ``env`` merge key by key).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codeward.engines.registry.items import Item, Kind, Space, ToolType
from codeward.kernel.result import ErrorKind, Result

MAX_DEPTH = 10
SUBPROCESS = "subprocess"
HTTP_CLIENT = "http_client"
PYTHON_RUNTIME = "python_runtime"
MERGED_KEYS = frozenset({"headers", "env", "query"})
PRIMITIVE_FOR: dict[str, str] = {ToolType.PYTHON.value: SUBPROCESS, ToolType.API.value: HTTP_CLIENT}


def _builtin(name: str, tool_type: ToolType, description: str, executor: str | None,
             config: dict[str, Any]) -> Item:
    return Item(Kind.TOOL, name, Space.BUILTIN, None, description, "primitives", "1.0.0", description,
                {"tool_type": tool_type.value, "executor_id": executor, "config": config, "signature": "builtin"})


BUILTINS: dict[str, Item] = {
    item.name: item for item in (
        _builtin(SUBPROCESS, ToolType.PRIMITIVE, "Runs a program in its own process group: parameters as JSON "
                 "on stdin, the result as JSON on stdout, killed with its children at the timeout.", None,
                 {"timeout": 60}),
        _builtin(HTTP_CLIENT, ToolType.PRIMITIVE, "Sends the HTTP request a tool's CONFIG describes, through "
                 "the SSRF guard (public addresses only unless allowed), with connect/read/total timeouts.", None,
                 {"method": "GET", "timeout": 30}),
        _builtin(PYTHON_RUNTIME, ToolType.RUNTIME, "Runs a Python tool's main() in a separate interpreter: the "
                 "standard library only, or a virtual environment of its own when it imports other packages.",
                 SUBPROCESS, {}),
    )
}


@dataclass(frozen=True)
class Chain:
    """A resolved chain, tool first, primitive last, with the merged configuration."""

    links: tuple[Item, ...]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def tool(self) -> Item:
        return self.links[0]

    @property
    def primitive(self) -> str:
        return self.links[-1].name

    def names(self) -> list[str]:
        return [link.name for link in self.links]


def build_chain(tool: Item, lookup: Callable[[str], Item | None]) -> Result[Chain | None]:
    """Follow ``__executor_id__`` from ``tool`` to a primitive; ``lookup`` finds items by name."""
    tool_type = tool.meta.get("tool_type")
    if tool_type == ToolType.RUNTIME.value:
        return _fail(f"{tool.name} is a runtime, which runs other tools and is not run itself",
                     f"Run a tool whose __executor_id__ is {tool.name!r}.")
    links: list[Item] = [tool]
    if tool_type == ToolType.MCP_TOOL.value and tool.meta.get("executor_id") is None:
        return Result.success(Chain((tool,), dict(tool.meta.get("config") or {})))
    current = tool
    while current.meta.get("tool_type") != ToolType.PRIMITIVE.value:
        executor = current.meta.get("executor_id")
        shown = " → ".join(link.name for link in links)
        if not isinstance(executor, str):
            return _fail(f"the chain {shown} stops at {current.name}, which names no executor",
                         f"Set __executor_id__ in {current.name} to a runtime or a primitive "
                         f"({SUBPROCESS}, {HTTP_CLIENT}).")
        if any(link.name == executor for link in links):
            return _fail(f"the executor chain loops: {shown} → {executor}",
                         f"Change __executor_id__ in {current.name} so the chain ends at a primitive "
                         f"({SUBPROCESS} or {HTTP_CLIENT}).", ErrorKind.CONFLICT)
        if len(links) >= MAX_DEPTH:
            return _fail(f"the executor chain {shown} is longer than {MAX_DEPTH} links",
                         "Point a runtime directly at a primitive.")
        found = BUILTINS.get(executor) or lookup(executor)
        if found is None:
            return _fail(f"{current.name} names the executor {executor!r}, which does not exist (chain: {shown} → ?)",
                         f"Create the runtime {executor!r} in .ai/tools, or set __executor_id__ to "
                         f"{PYTHON_RUNTIME}, {SUBPROCESS} or {HTTP_CLIENT}.", ErrorKind.NOT_FOUND)
        if found.meta.get("tool_type") not in (ToolType.RUNTIME.value, ToolType.PRIMITIVE.value):
            kind = found.meta.get("tool_type")
            return _fail(f"{current.name} names {executor!r} as its executor, but that is a {kind} tool, not a "
                         f"runtime or primitive (chain: {shown} → {executor})",
                         "An executor must be a runtime (a file with __tool_type__ = \"runtime\") or a primitive.")
        links.append(found)
        current = found
    expected = PRIMITIVE_FOR.get(str(tool_type))
    chain = Chain(tuple(links), merge_configs(links))
    if expected and chain.primitive != expected:
        return _fail(f"{tool.name} is a {tool_type} tool but its chain ({' → '.join(chain.names())}) ends at "
                     f"{chain.primitive}", f"{tool_type} tools run on {expected}; point the chain there.")
    return Result.success(chain)


def merge_configs(links: list[Item]) -> dict[str, Any]:
    """The chain's CONFIG: the primitive's defaults, then each runtime's, then the tool's."""
    merged: dict[str, Any] = {}
    for link in reversed(links):
        for key, value in (link.meta.get("config") or {}).items():
            if key in MERGED_KEYS and isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
    return merged


def _fail(message: str, hint: str, kind: ErrorKind = ErrorKind.INVALID_INPUT) -> Result[Chain | None]:
    return Result.fail(kind, message, hint, data=None)
