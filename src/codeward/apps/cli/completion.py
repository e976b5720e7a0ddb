"""``codeward completion bash|zsh|fish``: the shell completion script, from the parser itself.

argcomplete answers the shell by running ``codeward`` with ``_ARGCOMPLETE`` set, so commands,
options and choices never drift from the parser. It is imported only then (and by this
command): a normal ``codeward`` start pays nothing for it. ``codeward call <TAB>`` completes
the tool names (native ones, and ``alias__`` for each configured MCP server).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from codeward.apps.cli.common import configs_of
from codeward.serving.stack import catalog_for

SHELLS = ("bash", "zsh", "fish")

INSTALL = {
    "bash": 'echo \'eval "$(codeward completion bash)"\' >> ~/.bashrc',
    "zsh": 'echo \'eval "$(codeward completion zsh)"\' >> ~/.zshrc   # after compinit',
    "fish": "codeward completion fish > ~/.config/fish/completions/codeward.fish",
}


def register(sub: Any) -> None:
    completion = sub.add_parser(
        "completion", help="print the shell completion script (bash, zsh, fish)",
        description="Print the completion script for your shell; commands, options, choices and the tool "
        "names of `codeward call` complete on TAB. Install it with: "
        + "; ".join(f"{shell}: {how}" for shell, how in INSTALL.items()),
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    completion.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["codeward"], shell=args.shell))
    return 0


def complete(parser: argparse.ArgumentParser) -> NoReturn:
    """Answer the shell's completion request (argcomplete's protocol) and exit."""
    import argcomplete

    argcomplete.autocomplete(parser, always_complete_options="long")
    sys.exit(0)  # autocomplete exits itself; here only if the request was malformed


def tool_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """``codeward call`` completions: the native tools of this configuration, then ``alias__`` of
    each configured server (listing an upstream's tools would start it, too slow for a TAB)."""
    try:
        config, gateway = configs_of(parsed_args)
    except (ValueError, OSError):
        return []
    names = [spec.name for spec in catalog_for(config)]
    names += [f"{server.alias}__" for server in gateway.servers]
    return [name for name in names if name.startswith(prefix)]
