"""Text a model reads: search hits, help pages and loaded items, short and actionable."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codeward.engines.registry.chain import BUILTINS, build_chain
from codeward.engines.registry.deps import requirements_of
from codeward.engines.registry.items import Item, Kind, Space
from codeward.engines.registry.served import ServedTools
from codeward.engines.registry.service import Registry, describe_covered
from codeward.kernel.surface import ToolInfo

NEXT_STEPS = "Next: registry_help(name=...) for parameters; registry_execute(name=..., params={...}) to run a tool."


@dataclass(frozen=True)
class Hit:
    """One search result, a registry item or a served tool."""

    name: str
    kind: str
    source: str
    summary: str
    score: float
    detail: str = ""

    def render(self) -> str:
        detail = f", {self.detail}" if self.detail else ""
        return f"- {self.name} [{self.kind}, {self.source}{detail}] {self.summary}"


def item_hit(registry: Registry, item: Item, score: float) -> Hit:
    details = [d for d in (item.category, f"v{item.version}" if item.version else "") if d]
    if item.kind is Kind.TOOL:
        status = str(item.meta.get("signature", ""))
        details.append("invalid" if item.problems else status)
    elif item.problems:
        details.append("invalid")
    return Hit(item.name, item.kind.value, item.space.value, item.summary, score, ", ".join(details))


def served_hit(served: ServedTools, info: ToolInfo, score: float) -> Hit:
    group = served.group(info.name) or info.source
    origin = "codeward" if info.source == "codeward" else f"gateway {info.source}"
    return Hit(info.name, "tool", origin, _first_line(info.description), score, group if group != info.source else "")


def render_hits(query: str, hits: Sequence[Hit], total_items: int) -> str:
    if not hits:
        where = "registry items and served tools" if total_items else "the registry (it is empty)"
        return (f"nothing in {where} matches {query!r}. Try other words, or registry_help() for an overview "
                "of everything available.")
    head = f"{len(hits)} result(s) for {query!r}, best first:" if query.strip() else f"{len(hits)} item(s):"
    return "\n".join([head, *(hit.render() for hit in hits), NEXT_STEPS])


def served_help(served: ServedTools, info: ToolInfo) -> str:
    group = served.group(info.name)
    origin = "a codeward tool" if info.source == "codeward" else f"a tool of gateway server {info.source!r}"
    hints = [h.removesuffix("Hint").replace("readOnly", "read-only").replace("openWorld", "open-world")
             for h, on in (info.annotations or {}).items() if on]
    lines = [f"{info.name}: {origin}{f', toolset {group}' if group and group != info.source else ''}"
             f"{'; ' + ', '.join(hints) if hints else ''}", "", info.description.strip(), "",
             f"Parameters (JSON Schema): {compact(info.input_schema)}",
             f'Run: registry_execute(name="{info.name}", params={{...}})']
    return "\n".join(lines)


def item_help(registry: Registry, item: Item) -> str:
    shown = registry.spaces.display(item.path, item.space) if item.path else "built in"
    head = f"{item.name}: {item.kind.value} in the {item.space.value} space"
    facts = [f for f in (f"version {item.version}" if item.version else "",
                         f"category {item.category}" if item.category else "") if f]
    lines = [head + (f" ({', '.join(facts)})" if facts else ""), f"File: {shown}", "", item.description.strip()]
    if item.kind is Kind.TOOL:
        lines += _tool_facts(registry, item)
    elif item.kind is Kind.DIRECTIVE:
        arguments = item.meta.get("arguments") or []
        if arguments:
            lines.append("Arguments: " + "; ".join(
                f"{a.get('name')}{'' if a.get('required') else '?'}: {a.get('description', '')}" for a in arguments))
        lines.append(f"Use: as the MCP prompt {item.name!r}, or read it with registry_load(name={item.name!r}).")
    else:
        lines.append(f"Use: the MCP resource registry://knowledge/{item.name}, or registry_load(name={item.name!r}).")
    if item.problems:
        lines.append("Problems:")
        lines += [f"- {p.render()}" for p in item.problems]
    return "\n".join(lines)


def _tool_facts(registry: Registry, item: Item) -> list[str]:
    lines: list[str] = []
    tool_type = item.meta.get("tool_type")
    if item.space is not Space.BUILTIN:
        chain = build_chain(item, lambda n: _peek(registry, n))
        how = " → ".join(chain.data.names()) if chain.ok and chain.data else f"broken chain: {chain.error_text()}"
        lines.append(f"Type: {tool_type}; runs via {how}")
        lines.append(f"Signature: {signature_state(registry, item)}")
    if tool_type == "python":
        needs = requirements_of(item)
        where = f"its own packages {', '.join(needs)}" if needs else "the standard library only"
        lines.append(f"Environment: {where}; runs in the sandbox (the project overlaid, no network unless declared "
                     "and allowed)")
        declared = [f"variables {', '.join(item.meta.get('env') or [])}" if item.meta.get("env") else "",
                    f"hosts {', '.join(item.meta.get('network') or [])}" if item.meta.get("network") else ""]
        if any(declared):
            lines.append("Declares: " + "; ".join(d for d in declared if d))
    schema = item.meta.get("config_schema")
    lines.append(f"Parameters (JSON Schema): {compact(schema)}" if schema else "Parameters: not declared "
                 "(add a 'Config Schema:' section to the docstring)")
    config = item.meta.get("config")
    if config:
        lines.append(f"CONFIG: {compact(config)}")
    if item.space is not Space.BUILTIN and tool_type != "runtime":
        lines.append(f'Run: registry_execute(name="{item.name}", params={{...}}, dry_run=true to check first)')
    return lines


def overview(registry: Registry, served: ServedTools | None) -> str:
    with registry.index() as index:
        items = list(index.items())
    counts: dict[str, int] = {}
    for item in items:
        key = f"{item.kind.value} ({item.space.value})"
        counts[key] = counts.get(key, 0) + 1
    lines = ["The registry: tools, directives and knowledge in .ai/ (project) and the user space "
             f"({registry.spaces.display(registry.spaces.user_dir, Space.USER)})"
             + (", and every tool this server serves." if served else "."),
             "Find with registry_search(query), read with registry_help(name) or registry_load(name), run with "
             "registry_execute(name, params). Registry tools run in the sandbox, only while signed by a key the "
             "user trusts (`codeward sign NAME`; a model can ask with action=\"sign\").", ""]
    if served is not None:
        groups: dict[str, list[str]] = {}
        for info in served.infos():
            groups.setdefault(served.group(info.name) or info.source, []).append(info.name)
        lines.append(f"Served tools ({sum(len(v) for v in groups.values())}), by group:")
        lines += [f"  {group} ({len(names)}): {', '.join(names)}" for group, names in groups.items()]
        lines.append("")
    if items:
        lines.append("Registry items: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        for item in items[:50]:
            lines.append(f"  {item.name} [{item.kind.value}, {item.space.value}] {item.summary}")
        if len(items) > 50:
            lines.append(f"  ... {len(items) - 50} more: narrow with registry_search")
    else:
        lines.append("Registry items: none yet. Create one with `codeward registry new NAME` (a tool in "
                     ".ai/tools), then sign it with `codeward sign NAME`.")
    lines.append(f"Built-in executors: {', '.join(BUILTINS)}.")
    return "\n".join(lines)


def signature_state(registry: Registry, item: Item) -> str:
    """Whether the item's signature holds now, by whom — or why not (what a run would say)."""
    read = registry.fresh(item)
    if not read.ok or read.data is None:
        return f"cannot be checked: {read.error_text()}"
    fresh, data = read.data
    checked = registry.verify(fresh, data)
    if checked.ok and checked.data is not None:
        return f"valid, by {checked.data.key.shown()} on {checked.data.signed_at} (covers: " \
            + "; ".join(describe_covered(checked.data.covered)) + ")"
    return f"NOT VALID — {checked.errors[0].message}. {checked.errors[0].hint}"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def _peek(registry: Registry, name: str) -> Item | None:
    found = registry.find(name, Kind.TOOL)
    return found.data if found.ok else None


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""
