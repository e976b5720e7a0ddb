"""What ``registry_execute`` would run, for the approval middleware to judge instead of it.

``registry_execute`` runs other tools; in meta mode every call goes through it. Approving it
would approve everything, so the approval rules and prompts apply to the tool it would run:

* a **served tool** (``registry_execute(name="write_file", ...)``): nothing is judged here —
  the call to that tool passes the approval middleware itself, under its own name;
* a **registry tool**: judged as ``registry:NAME`` with the tool's parameters (rules name it so:
  ``[mcp] auto_approve = ["registry:greet"]``), bound to its signature, so a re-signed tool is
  asked about again; its first run, when its packages must be installed, always asks a person;
* **signing** (``action="sign"``): always asks a person — no rule approves a signature;
* a **dry run**: reads only, nothing to judge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import anyio.to_thread

from codeward.approval.policy import REGISTRY_ORIGIN, Underlying
from codeward.engines.registry.items import Item, Kind, Space, ToolType
from codeward.engines.registry.served import ServedTools
from codeward.engines.registry.service import Registry, describe_covered
from codeward.kernel.chain import ToolCall
from codeward.kernel.context import ToolContext
from codeward.kernel.surface import ToolInfo, ToolOrigin

EXECUTE = "registry_execute"
SPACES = {"project": Space.PROJECT, "user": Space.USER, "hub": Space.HUB}


async def registry_underlying(call: ToolCall, info: ToolInfo) -> Underlying | None:
    """The tool a ``registry_execute`` call would run (``None`` for any other call)."""
    if info.origin is None or not info.origin.native or info.origin.tool != EXECUTE:
        return None
    arguments = dict(call.arguments or {})
    return await anyio.to_thread.run_sync(_underlying, call.ctx, arguments)


def _underlying(ctx: ToolContext, arguments: Mapping[str, Any]) -> Underlying:
    target = arguments.get("name")
    action = arguments.get("action", "run")
    source = arguments.get("source")
    if not isinstance(target, str) or action not in ("run", "sign") or source not in (None, *SPACES):
        return Underlying(None)  # the tool refuses such arguments itself
    served = ctx.services.find(ServedTools)
    if action == "run":
        if arguments.get("dry_run"):
            return Underlying(None)
        if source is None and served is not None and served.has(target):
            return Underlying(None)
    registry = Registry.for_context(ctx)
    found = registry.find(target, Kind.TOOL if action == "run" else None, SPACES.get(str(source)))
    if not found.ok or found.data is None:
        return Underlying(None)  # nothing of that name runs: the tool says so
    read = registry.fresh(found.data)
    if not read.ok or read.data is None:
        return Underlying(None)
    item, data = read.data
    if action == "sign":
        covers = "; ".join(describe_covered(registry.covered(item, data))) if item.path else ""
        return Underlying(_info(item, data, f"Sign {item.kind.value} {item.name} with the user's key: it then runs "
                                f"without review until anything it covers changes. Covers: {covers}."),
                          {"action": "sign"}, always_ask=True)
    if item.meta.get("tool_type") == ToolType.MCP_TOOL.value:
        return Underlying(None)  # the served tool it calls is judged when that call passes the middleware
    params = arguments.get("params")
    first_install = _needs_install(registry, item, data)
    description = item.description + (f" First run: installs {', '.join(first_install)} into its own environment."
                                       if first_install else "")
    return Underlying(_info(item, data, description), dict(params) if isinstance(params, Mapping) else {},
                      always_ask=bool(first_install))


def _info(item: Item, data: bytes, description: str) -> ToolInfo:
    network = bool(item.meta.get("network")) or item.meta.get("tool_type") == ToolType.API.value
    identity = hashlib.sha256(data.split(b"\n", 1)[0] + item.name.encode()).hexdigest()
    return ToolInfo(name=f"{REGISTRY_ORIGIN}{item.name}", description=description, input_schema={},
                    annotations={"readOnlyHint": False, "destructiveHint": True, "openWorldHint": network},
                    source=REGISTRY_ORIGIN.rstrip(":"), origin=ToolOrigin(REGISTRY_ORIGIN, item.name, identity))


def _needs_install(registry: Registry, item: Item, data: bytes) -> tuple[str, ...]:
    """The pins a tool's first run would install (nothing when installed, or when it would not run)."""
    if item.meta.get("tool_type") != ToolType.PYTHON.value or not item.meta.get("dependencies"):
        return ()
    covered = registry.covered(item, data)
    python = registry.python()
    if not covered.requirements or not python.ok or python.data is None:
        return ()
    return () if registry.environment(item, covered.requirements, python.data).ready else covered.requirements
