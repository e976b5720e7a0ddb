"""What ``serve`` and ``gateway`` print so a person can connect a client with one paste."""

from __future__ import annotations

import shlex
from pathlib import Path

from codeward.apps.client_setup.clients import CLIENTS
from codeward.apps.client_setup.launch import LaunchCommand

INSTALL_POINTER = f"install-client {'|'.join(CLIENTS)}"


def stdio_lines(name: str, launch: LaunchCommand, args: list[str]) -> list[str]:
    """``claude mcp add`` with the exact command, and the ``install-client`` pointer."""
    return [f"claude mcp add {name} -- {launch.shell(*args)}",
            f"or write a client's config: {launch.shell()} {INSTALL_POINTER}"]


def http_lines(name: str, url: str, launch: LaunchCommand, *, token_env: str | None, token_file: Path | None,
               token: bool, install_args: list[str]) -> list[str]:
    """``claude mcp add --transport http`` with the Authorization header a shell fills in."""
    header = ""
    if token and token_env:
        header = f' --header "Authorization: Bearer ${token_env}"'
    elif token and token_file is not None:
        header = f' --header "Authorization: Bearer $(cat {shlex.quote(str(token_file))})"'
    lines = [f"claude mcp add --transport http {name} {url}{header}"]
    if token_file is not None and token_file.name.endswith(".client-token"):
        lines.append(f"or write a client's config (same token): {launch.shell()} {INSTALL_POINTER} "
                     f"--http {shlex.join(install_args)}".rstrip())
    else:
        lines.append(f"or, for a token that outlives this run: {launch.shell()} {INSTALL_POINTER} --http "
                     f"{shlex.join(install_args)}".rstrip() + ", then restart this server")
    return lines
