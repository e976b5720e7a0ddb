"""``codeward call TOOL key=value...``: one call through the stack, no server.

Native tools answer under their own names (and as ``alias__tool`` when ``[mcp] native`` gives
them an alias); ``alias__tool`` of a configured server connects just that server. The person
typing the call approves codeward's own tools by typing it; upstream tools follow the approval
policy, asked on the terminal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from codeward.apps.cli.args import UsageError, parse_assignments
from codeward.apps.cli.common import configs_of, load_configs, with_urls
from codeward.apps.cli.completion import tool_names
from codeward.apps.cli.output import add_json_argument, command_name, print_json, result_object
from codeward.apps.cli.tool_hints import for_the_terminal
from codeward.config import ConfigError
from codeward.gateway.names import split_name
from codeward.kernel.chain import tool_info
from codeward.serving.stack import Approver, build_stack

if TYPE_CHECKING:
    from codeward.approval.policy import ConfirmCallback
    from codeward.config import Config
    from codeward.gateway.config import GatewayConfig
    from codeward.serving.stack import Stack


def register(sub: Any) -> None:
    call = sub.add_parser("call", help="run one tool directly (no server) and print its result",
                          description="Run one tool directly: codeward call read_file path=README.md. "
                          "Values are JSON when the argument is not a string (n=3, flag=true, items='[1,2]').")

    call.add_argument("tool", help="tool name (see `codeward tools`)").completer = tool_names  # type: ignore[attr-defined]
    call.add_argument("arguments", nargs="*", metavar="key=value", help="tool arguments")
    call.rest_dest = "arguments"  # a CodewardParser (cli/parser.py): key=value after options too
    call.add_argument("--root", action="append", help="workspace root (repeatable; default: config or cwd)")
    call.add_argument("-y", "--yes", action="store_true",
                      help="approve the calls that would ask on the terminal, without asking (each one is "
                      "still shown on stderr; deny lists, pins and changed definitions still refuse)")
    add_json_argument(call)
    call.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    config, gateway = configs_of(args)
    return call_tool(config, gateway, args.tool, args.arguments, yes=args.yes, as_json=args.json,
                     roots=args.root or (), command=command_name(args))


def call_gateway_tool(
    config_path: str | Path | None,
    name: str,
    assignments: Sequence[str],
    *,
    yes: bool = False,
    as_json: bool = False,
    roots: Sequence[str | Path] = (),
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """``codeward call alias__tool key=value...`` with the servers of ``config_path``.

    Calls outside ``auto_approve`` are confirmed on the terminal, or approved by ``yes``.
    """
    config, gateway = load_configs(config_path)
    return call_tool(config, with_urls(gateway), name, assignments, yes=yes, as_json=as_json, roots=roots,
                     out=out, err=err)


def call_tool(config: Config, gateway: GatewayConfig, name: str, assignments: Sequence[str], *, yes: bool = False,
              as_json: bool = False, roots: Sequence[str | Path] = (), out: IO[str] | None = None,
              err: IO[str] | None = None, command: str = "call") -> int:
    import anyio

    from codeward.approval.askers import terminal_confirm, yes_confirm

    config = _one_shot(config)
    split = split_name(name)
    alias = split[0] if split else None
    upstream = alias is not None and gateway.server(alias) is not None
    confirm: ConfirmCallback = yes_confirm if yes else terminal_confirm
    stack = build_stack(config, roots, gateway=gateway, upstreams=upstream, only=alias if upstream else None,
                        native=gateway.native if alias is not None and alias == gateway.native else True,
                        approver=Approver(confirm, native=False))
    if not upstream and not stack.surface.has(name):
        stack.close()
        problem = _unknown(name, stack, gateway)
        raise ConfigError(problem) if split is not None else UsageError(problem)
    return anyio.run(_call, stack, name, list(assignments), as_json, command, out or sys.stdout, err or sys.stderr)


ONE_SHOT_SERVER_WAIT_S = 120.0


def _one_shot(config: Config) -> Config:
    """``codeward call`` runs one tool and exits: every built-in tool is reachable by name (the opt-in toolsets
    too, when ``[server] toolsets`` is unset: nothing is listed to a model here), and a language server that is
    still starting is waited for (up to ``[lsp] startup_wait_s``, or 120 s when it is 0: there is no calling
    again)."""
    server = config.server if config.toolsets is not None else config.server.model_copy(update={"toolsets": ("all",)})
    lsp = config.lsp if config.lsp.startup_wait_s else config.lsp.model_copy(
        update={"startup_wait_s": ONE_SHOT_SERVER_WAIT_S})
    return config.model_copy(update={"server": server, "lsp": lsp})


async def _call(stack: Stack, name: str, assignments: list[str], as_json: bool, command: str, out: IO[str],
                err: IO[str]) -> int:
    async with stack:
        info = tool_info(stack.surface, name)
        arguments = parse_assignments(assignments, info.input_schema if info else {})
        outcome = await stack.acall(name, arguments)
    if as_json:
        print_json(result_object(command, text=outcome.text, is_error=outcome.is_error, tool=name,
                                 structured=outcome.structured, errors=outcome.errors), out)
    else:
        # A failure's hints name commands; a result is the tool's output, printed as it is.
        if outcome.is_error:
            print(for_the_terminal(outcome.text), file=err)
        else:
            print(outcome.text, file=out)
    return 1 if outcome.is_error else 0


def _unknown(name: str, stack: Stack, gateway: GatewayConfig) -> str:
    if split_name(name) is not None:
        known = ", ".join(s.alias for s in gateway.servers) or "none configured"
        native = f" or the native alias {gateway.native!r}" if isinstance(gateway.native, str) else ""
        return (f"{name!r} is not a gateway tool: names look like 'alias__tool' with an alias among the configured "
                f"servers ({known}){native}; run `codeward servers --tools` to list them")
    import difflib

    close = difflib.get_close_matches(name, list(stack.native_names), n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else " Run `codeward tools` to list them."
    return f"unknown tool {name!r}.{hint}"
