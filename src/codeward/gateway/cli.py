"""The gateway's command-line entry points; ``codeward.cli`` wires them to subcommands.

* :func:`run_gateway_cli` — ``codeward gateway --config FILE``: serve the merged catalog.
* :func:`list_servers_cli` — ``codeward servers``: state, tool count and latency per server.
* :func:`call_cli` — ``codeward call alias__tool k=v``: one call through the gateway.

Each returns an exit code; configuration mistakes raise :class:`codeward.config.ConfigError`
(a ``ValueError``) whose message says what to fix.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio

from codeward.config import ConfigError
from codeward.gateway.config import GatewayConfig, load_gateway_config, server_from_url
from codeward.gateway.gateway import Gateway
from codeward.gateway.names import split_name
from codeward.gateway.policy import ConfirmCallback, approve_everything
from codeward.gateway.upstream import ServerState, ServerStatus

if TYPE_CHECKING:
    from codeward.control.plane import ControlOptions, ControlPlane

LOOPBACK = ("127.0.0.1", "localhost", "::1")


ConfigSource = GatewayConfig | str | Path | None
"""The ``[mcp]`` table of a loaded configuration, or a file to read it from."""


def gateway_config(source: ConfigSource, urls: Sequence[str] = ()) -> GatewayConfig:
    """The configured servers (the loaded ``[mcp]`` table, or a file's) plus servers given by URL."""
    config = source if isinstance(source, GatewayConfig) else (
        load_gateway_config(source) if source else GatewayConfig())
    for url in urls:
        config = config.with_server(server_from_url(url, taken=[s.alias for s in config.servers]))
    if not config.servers:
        raise ConfigError("no MCP servers to connect: add [mcp.servers.<alias>] tables to codeward.toml, "
                          "pass a Claude-Desktop mcpServers JSON file, or give --url")
    return config


def run_gateway_cli(
    config_path: ConfigSource,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8766,
    *,
    token: str | None = None,
    roots: Sequence[str | Path] = (),
    urls: Sequence[str] = (),
    yes: bool = False,
    allow_remote: bool = False,
    meta: bool = False,
    control: ControlOptions | None = None,
) -> int:
    """Serve every configured upstream's tools (and native ones if configured) over MCP.

    Calls not covered by ``auto_approve`` are confirmed by the client's user through MCP
    elicitation; ``yes=True`` approves every call (for trusted, unattended setups only).
    ``meta=True`` lists only the four registry meta-tools, which find and run all the others.
    ``control`` serves the Hook API and console beside it (approvals there race the client's)
    and/or writes session logs.
    """
    from codeward.gateway.approval import confirm_with_client

    config = gateway_config(config_path, urls)
    if transport not in ("stdio", "http"):
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")
    if transport == "http" and host not in LOOPBACK and (not allow_remote or not token):
        raise ValueError(f"binding to {host} exposes every upstream tool to the network; "
                         "pass allow_remote (--allow-remote) and a bearer token (--token-env VAR) to do it")
    confirm: ConfirmCallback = approve_everything if yes else confirm_with_client
    anyio.run(_serve, config, transport, host, port, token, list(roots), confirm, meta, control)
    return 0


async def _serve(config: GatewayConfig, transport: str, host: str, port: int, token: str | None,
                 roots: list[str | Path], confirm: ConfirmCallback, meta: bool = False,
                 control: ControlOptions | None = None) -> None:
    from codeward.control.plane import control_plane

    async with control_plane(control, "gateway") as plane:
        await _serve_gateway(config, transport, host, port, token, roots,
                             plane.approvals(confirm, notify=_note), meta, plane)


async def _serve_gateway(config: GatewayConfig, transport: str, host: str, port: int, token: str | None,
                         roots: list[str | Path], confirm: ConfirmCallback, meta: bool, plane: ControlPlane) -> None:
    from codeward.gateway.native import native_surface
    from codeward.server import CodewardServer
    from codeward.surface import CompositeSurface, ToolSurface
    from codeward.tools import default_catalog
    from codeward.workspace import Workspace

    native = native_surface(default_catalog(), config.native) if config.native is not False else None
    reserved = [info.name for info in native.tool_infos()] if native else []
    config_files = [path for path in (config.source, config.pin_file) if path is not None]
    workspace = Workspace.create(roots or [Path.cwd()], protected=config_files)
    async with Gateway(config, confirm=confirm, reserved_names=reserved) as gateway:
        await gateway.wait_settled()
        _print_summary(gateway.statuses(), len(gateway.tool_infos()), sys.stderr)
        surfaces: list[ToolSurface] = [native, gateway] if native else [gateway]
        surface: ToolSurface = plane.observe_surface(CompositeSurface(surfaces))
        plane.watch_gateway(gateway, roots=[str(r) for r in workspace.roots], transport=transport)
        if meta:
            from codeward.registry.meta import MetaSurface

            surface = MetaSurface(surface)
        server = CodewardServer(surface, workspace, name="codeward-gateway",
                                roots_from_client=not roots and transport != "http", tools_can_change=True)
        gateway.subscribe(server.tools_changed)  # an upstream's tools/list_changed reaches our clients
        if transport == "http":
            print(f"codeward gateway: serving at http://{host}:{port}/mcp", file=sys.stderr, flush=True)
            await server.run_http(host=host, port=port, token=token)
        else:
            await server.run_stdio()


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def list_servers_cli(
    config_path: ConfigSource,
    *,
    urls: Sequence[str] = (),
    as_json: bool = False,
    show_tools: bool = False,
    repin: bool = False,
    out: IO[str] | None = None,
) -> int:
    """Connect every server, then print its state, tool count and latency. 1 if any failed."""
    config = gateway_config(config_path, urls)
    stream = out or sys.stdout
    return anyio.run(_list_servers, config, as_json, show_tools, repin, stream)


async def _list_servers(config: GatewayConfig, as_json: bool, show_tools: bool, repin: bool,
                        stream: IO[str]) -> int:
    async with Gateway(config) as gateway:
        await gateway.wait_settled(max(s.timeout for s in config.servers) + 1)
        async with anyio.create_task_group() as tg:
            for status in gateway.statuses():
                upstream = gateway.upstream(status.alias)
                if upstream is not None:
                    tg.start_soon(upstream.measure_latency)
        repinned = gateway.repin() if repin else 0
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


def call_cli(
    config_path: ConfigSource,
    name: str,
    assignments: Sequence[str],
    *,
    yes: bool = False,
    as_json: bool = False,
    roots: Sequence[str | Path] = (),
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """``codeward call alias__tool key=value...`` through the gateway (connects only that server).

    Calls outside ``auto_approve`` are confirmed on the terminal, or approved by ``yes``.
    """
    from codeward.gateway.approval import terminal_confirm

    config = gateway_config(config_path)
    split = split_name(name)
    if split is None or config.server(split[0]) is None:
        known = ", ".join(s.alias for s in config.servers)
        raise ConfigError(f"{name!r} is not a gateway tool: names look like 'alias__tool' with an alias among "
                          f"the configured servers ({known}); run `codeward servers --tools` to list them")
    server = config.server(split[0])
    assert server is not None
    single = config.only(server.alias)
    confirm: ConfirmCallback = approve_everything if yes else terminal_confirm
    return anyio.run(_call, single, name, list(assignments), confirm, as_json, list(roots),
                     out or sys.stdout, err or sys.stderr)


async def _call(config: GatewayConfig, name: str, assignments: list[str], confirm: ConfirmCallback,
                as_json: bool, roots: list[str | Path], out: IO[str], err: IO[str]) -> int:
    from codeward.cli import parse_assignments
    from codeward.context import ToolContext
    from codeward.workspace import Workspace

    async with Gateway(config, confirm=confirm) as gateway:
        await gateway.wait_settled(config.servers[0].timeout + 1)
        info = next((i for i in gateway.tool_infos() if i.name == name), None)
        arguments = parse_assignments(assignments, info.input_schema if info else {})
        ctx = ToolContext(Workspace.create(roots or [Path.cwd()]))
        outcome = await gateway.call(name, arguments, ctx)
    if as_json:
        print(json.dumps({"tool": name, "is_error": outcome.is_error, "text": outcome.text,
                          "structured": outcome.structured,
                          "errors": [e.to_dict() for e in outcome.errors]}, indent=2), file=out)
    else:
        print(outcome.text, file=err if outcome.is_error else out)
    return 1 if outcome.is_error else 0


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


def _print_summary(statuses: Sequence[ServerStatus], tools: int, stream: IO[str]) -> None:
    ready = [s for s in statuses if s.state == ServerState.READY]
    print(f"codeward gateway: {len(ready)}/{len(statuses)} servers ready, {tools} tools", file=stream)
    for s in statuses:
        if s.state != ServerState.READY:
            print(f"  {s.alias}: {s.state.value}{': ' + s.error if s.error else ''}", file=stream)
    stream.flush()
