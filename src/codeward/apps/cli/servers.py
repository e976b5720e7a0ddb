"""``codeward servers``: connect the configured MCP servers and show state, tools and latency."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from codeward.apps.cli.args import add_config_argument
from codeward.apps.cli.common import load_configs, with_urls
from codeward.kernel.state_unavailable import StateUnavailable
from codeward.serving.stack import build_stack

if TYPE_CHECKING:
    from codeward.gateway.upstream import ServerStatus
    from codeward.serving.stack import Stack


def register(sub: Any) -> None:
    servers = sub.add_parser("servers", help="connect the configured MCP servers and show their state")
    add_config_argument(servers)
    servers.add_argument("--url", action="append", default=[], help="also connect this MCP server URL")
    servers.add_argument("--json", action="store_true", help="print JSON")
    servers.add_argument("--tools", action="store_true", help="list each server's tools too")
    servers.add_argument("--repin", action="store_true", help="accept the current tool definitions as pinned")
    servers.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return list_servers_cli(getattr(args, "config", None), urls=args.url, as_json=args.json, show_tools=args.tools,
                            repin=args.repin)


def list_servers_cli(
    config_path: str | Path | None,
    *,
    urls: Sequence[str] = (),
    as_json: bool = False,
    show_tools: bool = False,
    repin: bool = False,
    out: IO[str] | None = None,
) -> int:
    """Connect every server, then print its state, tool count and latency. 1 if any failed."""
    import anyio

    config, gateway = load_configs(config_path)
    pins = None
    if config.state.shared:  # the pins every replica of a team gateway checks against (Redis)
        from codeward.serving.shared_state import open_state

        pins = open_state(config.state).pins()
    stack = build_stack(config, gateway=with_urls(gateway, urls), upstreams=True, native=False, pins=pins)
    stream = out or sys.stdout
    return anyio.run(_list_servers, stack, as_json, show_tools, repin, stream)


async def _list_servers(stack: Stack, as_json: bool, show_tools: bool, repin: bool, stream: IO[str]) -> int:
    import anyio

    from codeward.gateway.upstream import ServerState

    async with stack:
        gateway = stack.gateway
        assert gateway is not None  # with_urls made sure there is a server
        await gateway.wait_settled(max(s.timeout for s in stack.gateway_config.servers) + 1)
        async with anyio.create_task_group() as tg:
            for status in gateway.statuses():
                upstream = gateway.upstream(status.alias)
                if upstream is not None:
                    tg.start_soon(upstream.measure_latency)
        try:
            repinned = await gateway.repin() if repin else 0
        except StateUnavailable as error:  # the pins every replica shares are out of reach: nothing changed
            print(f"codeward servers: nothing was re-pinned: {error}", file=sys.stderr)
            return 1
        statuses = gateway.statuses()
        names: dict[str, list[str]] = {s.alias: [] for s in statuses}
        for info in gateway.tool_infos():
            names.setdefault(info.source, []).append(info.name)
        alerts = gateway.pin_alerts()
    if as_json:
        rows = [{**_status_dict(s), "exposed_tools": names.get(s.alias, []),
                 "pin_alerts": {k: v for k, v in alerts.items() if k.startswith(f"{s.alias}__")}}
                for s in statuses]
        print(json.dumps(rows, indent=2), file=stream)
    else:
        _print_table(statuses, names if show_tools else None, alerts, stream)
        if repin:
            print(f"re-pinned {repinned} tool definitions", file=stream)
    failed = [s for s in statuses if s.state not in (ServerState.READY, ServerState.DISABLED)]
    return 1 if failed else 0


# -- printing ------------------------------------------------------------------------------------


def _status_dict(status: ServerStatus) -> dict[str, Any]:
    return {
        "alias": status.alias, "state": status.state.value, "tools": status.tools,
        "latency_ms": round(status.latency_ms, 2) if status.latency_ms is not None else None,
        "transport": status.transport, "target": status.target, "protocol_version": status.protocol_version,
        "server_name": status.server_name, "error": status.error, "reconnects": status.reconnects,
    }


def _print_table(statuses: Sequence[ServerStatus], names: dict[str, list[str]] | None, alerts: dict[str, str],
                 stream: IO[str]) -> None:
    width = max([5, *(len(s.alias) for s in statuses)])
    print(f"{'ALIAS':<{width}}  {'STATE':<12} {'TOOLS':>5} {'LATENCY':>9}  {'TRANSPORT':<9} TARGET", file=stream)
    for s in statuses:
        latency = f"{s.latency_ms:.1f} ms" if s.latency_ms is not None else "-"
        print(f"{s.alias:<{width}}  {s.state.value:<12} {s.tools:>5} {latency:>9}  {s.transport:<9} {s.target}",
              file=stream)
        if s.error:
            print(f"{'':<{width}}  error: {s.error}", file=stream)
        for tool in (names or {}).get(s.alias, []):
            print(f"{'':<{width}}  - {tool}", file=stream)
    for tool, what in alerts.items():
        print(f"pin alert: {tool}: {what} (review it, then run `codeward servers --repin`)", file=stream)


def print_summary(statuses: Sequence[ServerStatus], tools: int, stream: IO[str]) -> None:
    from codeward.gateway.upstream import ServerState

    ready = [s for s in statuses if s.state == ServerState.READY]
    print(f"codeward gateway: {len(ready)}/{len(statuses)} servers ready, {tools} tools", file=stream)
    for s in statuses:
        if s.state != ServerState.READY:
            print(f"  {s.alias}: {s.state.value}{': ' + s.error if s.error else ''}", file=stream)
    stream.flush()
